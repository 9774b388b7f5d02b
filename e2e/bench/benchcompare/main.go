// benchcompare writes RESULTS.md for `make bench-compare` (issue #9): one table per workload
// comparing kube-scheduler's default profile on plain pods (Baseline), grove-scheduler (Grove),
// Kubernetes' in-tree gang scheduling (Native) and scheduler-plugins' coscheduling
// (Coscheduling), from the scheduler_perf results (BenchmarkPerfScheduling_benchmark_<topic>_*.json)
// and gangwatch reports (gangwatch_*.json) in one results directory.
//
// Each scheduler_perf file is one run of one Go module (e2e/bench/compare: topic "compare";
// e2e/bench/compare/coscheduling: its own topic). A scheduler's ratios are to the Baseline test
// cases of the same run - the same process, the same Kubernetes version - averaged over all of
// them (compare-config.yaml runs one before and one after the gang schedulers).
//
//	go run ./e2e/bench/benchcompare -dir results/compare -out results/compare/RESULTS.md -command "make bench-compare"
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", "results/compare", "results directory: scheduler_perf JSON and gangwatch_*.json")
	out := flag.String("out", "", "output file (default <dir>/RESULTS.md)")
	command := flag.String("command", "make bench-compare", "the command that produced the results, quoted in RESULTS.md")
	flag.Parse()
	if *out == "" {
		*out = *dir + "/RESULTS.md"
	}
	res, err := load(*dir)
	if err != nil {
		fail(err)
	}
	if len(res.runs) == 0 {
		fail(fmt.Errorf("no BenchmarkPerfScheduling_benchmark_*.json in %s", *dir))
	}
	md := render(res, machine{
		cores:   runtime.NumCPU(),
		cpu:     cpuModel(),
		date:    time.Now().UTC().Format("2006-01-02 15:04 MST"),
		commit:  gitCommit(),
		command: *command,
	})
	if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
		fail(err)
	}
	fmt.Print(md)
	if problems := res.honesty(); len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "benchcompare: WARNING:", p)
		}
	}
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	commit := strings.TrimSpace(string(out))
	// Results (this table among them) are written after the run; they do not make the code dirty.
	if status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!results").Output(); err == nil && len(status) > 0 {
		commit += " (with uncommitted changes)"
	}
	return commit
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchcompare:", err)
	os.Exit(1)
}
