package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is results.json.
type Report struct {
	Command string `json:"command"`
	Date    string `json:"date"`
	Commit  string `json:"commit"`
	Cores   int    `json:"cores"`
	// LoadAverage is the machine's 1, 5 and 15 minute load averages when the run ended: the
	// figures of a run on a busy machine are not a reference.
	LoadAverage string          `json:"loadAverage"`
	Scale       string          `json:"scale"`
	Nodes       int             `json:"nodes"`
	ClientQPS   float32         `json:"operatorClientQPS"`
	ClientBurst int             `json:"operatorClientBurst"`
	Results     []*Result       `json:"results"`
	Steady      []*steadyWindow `json:"steadyState"`
	// OperatorRequests counts all of grove-operator's requests of the run by "resource verb".
	OperatorRequests map[string]int `json:"operatorRequestsByResourceVerb"`
	OperatorCPU      float64        `json:"operatorCPUSeconds"`
	OperatorPeakRSS  float64        `json:"operatorPeakRSSMiB"`
	PprofTop         []string       `json:"pprofTop,omitempty"`
	PprofWindow      string         `json:"pprofWindow"`
	// RollingUpdatePprofTop is the profile of the first 40 s of the disaggregated rolling update.
	RollingUpdatePprofTop []string `json:"rollingUpdatePprofTop,omitempty"`
	// APIServerRollingUpdatePprofTop is kube-apiserver's profile of the first 40 s of the
	// rolling update at maxUnavailable 25 %, by cumulative time.
	APIServerRollingUpdatePprofTop []string `json:"apiserverRollingUpdatePprofTop,omitempty"`
	// QuarterRolloutPprofTop is grove-operator's profile of the same window, by cumulative time.
	QuarterRolloutPprofTop []string `json:"quarterRolloutPprofTop,omitempty"`
}

// rollingUpdateWindow is what the rolling update's profile covers.
const rollingUpdateWindow = "the first 40 s of the rolling update of the disaggregated PCS"

// apiserverRollingUpdateWindow is what kube-apiserver's profile covers.
const apiserverRollingUpdateWindow = "the first 40 s of the rolling update of the disaggregated PCS at maxUnavailable 25%"

func (b *bench) report(ctx context.Context, outDir, command string) error {
	rep := &Report{Command: command, Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Cores: runtime.NumCPU(),
		Scale: b.scale.Name, Nodes: b.scale.Nodes, ClientQPS: b.qps, ClientBurst: b.burst, Results: b.results, Steady: steady,
		PprofWindow: "the first 40 s from the apply of the replicated PCS"}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.LoadAverage = strings.Join(strings.Fields(string(data))[:3], " ")
	}
	if out, err := exec.CommandContext(ctx, "git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		rep.Commit = strings.TrimSpace(string(out))
		if exec.CommandContext(ctx, "git", "diff", "--quiet", "HEAD").Run() != nil {
			rep.Commit += "-dirty"
		}
	}
	reqs, err := readAudit(b.auditLog)
	if err != nil {
		fmt.Printf("audit log: %v\n", err)
	}
	for _, r := range b.results {
		r.OperatorRequests, r.OperatorWrites, r.ByResourceVerb = countRequests(reqs, r.Start, r.End)
	}
	for _, w := range steady {
		_, w.Writes, w.ByVerb = countRequests(reqs, w.from, w.to)
		for k, v := range w.ByVerb {
			switch {
			case !isWrite(k):
				delete(w.ByVerb, k)
			case strings.HasPrefix(k, "leases "):
				w.LeaseWrites += v
			}
		}
		w.Writes -= w.LeaseWrites
	}
	_, _, rep.OperatorRequests = countRequests(reqs, time.Time{}, time.Now().Add(time.Hour))
	pid := b.env.Operator.PID()
	rep.OperatorCPU, _ = cpuSeconds(pid)
	rep.OperatorPeakRSS, _ = peakRSSMiB(pid)
	rep.PprofTop = b.pprofTop(ctx, "grove-operator", applyProfile, false)
	rep.RollingUpdatePprofTop = b.pprofTop(ctx, "grove-operator", rollingUpdateProfile, false)
	rep.APIServerRollingUpdatePprofTop = b.pprofTop(ctx, "kube-apiserver", apiserverRollingUpdateProfile, true)
	rep.QuarterRolloutPprofTop = b.pprofTop(ctx, "grove-operator", quarterRolloutProfile, true)

	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(outDir, "results.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println()
	rep.table(os.Stdout)
	f, err := os.Create(filepath.Join(outDir, "RESULTS.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	return rep.markdown(f)
}

func isWrite(key string) bool {
	_, verb, _ := strings.Cut(key, " ")
	return request{verb: verb}.write()
}

func (rep *Report) baseline(kind string, pods int) *Result {
	for _, r := range rep.Results {
		if r.Kind == kind && r.Pods == pods && r.Error == "" {
			return r
		}
	}
	return nil
}

// cols are the milestone columns of the tables.
var cols = []string{MCreated, MInitialized, MUngated, MBound, MReady, MAvailable, MGone}

func secs(r *Result, m string) string {
	if !slices.Contains(r.Order, m) {
		return "–"
	}
	v, ok := r.Milestones[m]
	if !ok {
		return "not reached"
	}
	return fmt.Sprintf("%.1f", v)
}

// ratio is Grove's milestone over the baseline's (lower is better, 1.00 = as fast).
func ratio(r *Result, m string, base *Result, bm string) string {
	if base == nil {
		return "–"
	}
	v, ok1 := r.Milestones[m]
	bv, ok2 := base.Milestones[bm]
	if !ok1 || !ok2 || bv == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", v/bv)
}

// ratios are the comparisons the issue sets targets for.
func (rep *Report) ratios(r *Result) []string {
	raw, dep := rep.baseline("raw", r.Pods), rep.baseline("deployment", r.Pods)
	if !slices.Contains(r.Order, MCreated) {
		raw, dep = nil, nil
	}
	return []string{
		ratio(r, MCreated, raw, MCreated), ratio(r, MUngated, raw, MCreated), ratio(r, MBound, raw, MBound), ratio(r, MReady, raw, MReady),
		ratio(r, MBound, dep, MBound), ratio(r, MReady, dep, MReady), ratio(r, MAvailable, dep, MReady),
	}
}

// hasRatios: Grove's workloads that make pods have a row in the ratio table; the recovery
// rounds have a table of their own.
func hasRatios(r *Result) bool {
	return r.Kind == "grove" && slices.Contains(r.Order, MCreated) && r.Recovery == nil
}

var ratioHeads = []string{"created ÷ raw created", "released ÷ raw created", "bound ÷ raw bound", "ready ÷ raw ready",
	"bound ÷ Deployment bound", "ready ÷ Deployment ready", "PCS available ÷ Deployment ready"}

func (rep *Report) table(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload\tpods\t%s\top. requests\top. writes\top. CPU s\n", strings.Join(cols, "\t"))
	for _, r := range rep.Results {
		row := []string{r.Name, fmt.Sprint(r.Pods)}
		for _, m := range cols {
			row = append(row, secs(r, m))
		}
		op := []string{fmt.Sprint(r.OperatorRequests), fmt.Sprint(r.OperatorWrites), fmt.Sprintf("%.1f", r.OperatorCPUSeconds)}
		if r.Kind != "grove" {
			op = []string{"–", "–", "–"}
		}
		fmt.Fprintln(tw, strings.Join(append(row, op...), "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload\t%s\n", strings.Join(ratioHeads, "\t"))
	for _, r := range rep.Results {
		if hasRatios(r) {
			fmt.Fprintf(tw, "%s\t%s\n", r.Name, strings.Join(rep.ratios(r), "\t"))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	if rows := rep.rolloutRatios(); len(rows) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(rolloutHeads, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if rows := rep.recoveryRows(); len(rows) > 0 {
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "%s\n", strings.Join(recoveryHeads, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "workload\top. writes/pod\top. requests/pod\top. CPU ms/pod\tapiserver requests/pod\n")
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%s\t%s\n", r.Name, strings.Join(perPod(r), "\t"))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, s := range rep.Steady {
		fmt.Fprintf(w, "steady state after %s: %d operator writes in %.0f s besides %d leader-election lease renewals %v\n", s.Name, s.Writes, s.Seconds, s.LeaseWrites, s.ByVerb)
	}
	fmt.Fprintf(w, "grove-operator: %.1f CPU s in the run, peak RSS %.0f MiB\n", rep.OperatorCPU, rep.OperatorPeakRSS)
	if len(rep.PprofTop) > 0 {
		fmt.Fprintf(w, "\nCPU profile (%s):\n%s\n", rep.PprofWindow, strings.Join(rep.PprofTop, "\n"))
	}
	if len(rep.RollingUpdatePprofTop) > 0 {
		fmt.Fprintf(w, "\nCPU profile (%s):\n%s\n", rollingUpdateWindow, strings.Join(rep.RollingUpdatePprofTop, "\n"))
	}
	if len(rep.APIServerRollingUpdatePprofTop) > 0 {
		fmt.Fprintf(w, "\nkube-apiserver CPU profile (%s), cumulative:\n%s\n", apiserverRollingUpdateWindow, strings.Join(rep.APIServerRollingUpdatePprofTop, "\n"))
	}
	if len(rep.QuarterRolloutPprofTop) > 0 {
		fmt.Fprintf(w, "\ngrove-operator CPU profile (%s), cumulative:\n%s\n", apiserverRollingUpdateWindow, strings.Join(rep.QuarterRolloutPprofTop, "\n"))
	}
}

func (rep *Report) markdown(w io.Writer) error {
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("# grove-operator benchmark (`make bench-operator`)\n\n")
	p("Command: `%s` · date: %s · commit: %s · %d cores, load average %s at the end · scale %s, %d kwok nodes · operator client QPS %g / burst %d (shipped config/operator/operator-config.yaml)\n\n",
		rep.Command, rep.Date, rep.Commit, rep.Cores, rep.LoadAverage, rep.Scale, rep.Nodes, rep.ClientQPS, rep.ClientBurst)
	p("Seconds from the change (apply, scale, update, delete; for a node-failure round, the nodes' Ready transition) until each milestone; `–` = not a milestone of that workload. ")
	p("Baselines in the same run: **raw** — the same number of plain pods created by one client at the operator's QPS/burst and bound by grove-scheduler; ")
	p("**Deployment** — a Deployment of the same size (kube-controller-manager at the same QPS/burst) placed by kube-scheduler's default profile.\n\n")
	p("| workload | pods | %s | operator requests | operator writes | operator CPU s |\n|---|---:|%s---:|---:|---:|\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
	for _, r := range rep.Results {
		row := []string{r.Name, fmt.Sprint(r.Pods)}
		for _, m := range cols {
			row = append(row, secs(r, m))
		}
		if r.Kind == "grove" {
			row = append(row, fmt.Sprint(r.OperatorRequests), fmt.Sprint(r.OperatorWrites), fmt.Sprintf("%.1f", r.OperatorCPUSeconds))
		} else {
			row = append(row, "–", "–", "–")
		}
		p("| %s |\n", strings.Join(row, " | "))
	}
	p("\n## Ratios to the baselines (lower is better; targets: created and released ≤ 1.2× raw created, bound ≤ 1.0× Deployment bound; released: gates lifted, or, for pods created without a gate, listed in their PodGang)\n\n")
	p("| workload | %s |\n|---|%s\n", strings.Join(ratioHeads, " | "), strings.Repeat("---:|", len(ratioHeads)))
	for _, r := range rep.Results {
		if hasRatios(r) {
			p("| %s | %s |\n", r.Name, strings.Join(rep.ratios(r), " | "))
		}
	}
	if rows := rep.rolloutRatios(); len(rows) > 0 {
		p("\n## Rollouts to a Deployment's rolling update of the same pods (maxUnavailable 25%%, maxSurge 0; target: ready ≤ 1.5× at 25%%)\n\n")
		p("| %s |\n|---|%s\n", strings.Join(rolloutHeads, " | "), strings.Repeat("---:|", len(rolloutHeads)-1))
		for _, row := range rows {
			p("| %s |\n", strings.Join(row, " | "))
		}
		stagesTable(p, rep.Results)
	}
	if rows := rep.recoveryRows(); len(rows) > 0 {
		rec := rep.Results[slices.IndexFunc(rep.Results, func(r *Result) bool { return r.Recovery != nil })].Recovery
		p("\n## Recovery from node failure (goals: replacements bound ≤ %.0f s after the node is declared failed; no pod restarted that did not need to be)\n\n", recoveryGoal.Seconds())
		p("A PodCliqueSet of replicas of a 20-pod gang (leader + 19 workers, %s CPU each), each replica packed into one rack, the replicas spread over the racks. ", recoveryPodCPU)
		p("Each round fails some nodes at once — not one failed in an earlier round, spread over the racks — as a dead kubelet would (kwok stops heartbeating them; Ready Unknown and the unreachable taints), and brings them back empty afterwards. ")
		p("grove-operator runs with nodeFailure.grace %.0f s and initialBackOff %.0f s (shipped: 30 s and 10 s). ", rec.GraceSeconds, rec.InitialBackOffSeconds)
		p("Per replica with a pod on a failed node, seconds (median / p99) from the nodes' Ready transition until its pods there are deleted, their replacements created, bound, and every pod of the replica is Ready; ")
		p("*bound after declared failed* starts at the transition plus the grace. *Pods restarted needlessly*: pods not on a failed node whose UID is gone after the round.\n\n")
		p("| %s |\n|---|%s\n", strings.Join(recoveryHeads, " | "), strings.Repeat("---:|", len(recoveryHeads)-1))
		for _, row := range rows {
			p("| %s |\n", strings.Join(row, " | "))
		}
	}
	p("\n## Per pod (targets: ≤ 3 operator writes per pod)\n\n")
	p("| workload | operator writes / pod | operator requests / pod | operator CPU ms / pod | apiserver requests / pod (all clients) |\n|---|---:|---:|---:|---:|\n")
	for _, r := range rep.Results {
		p("| %s |\n", strings.Join(append([]string{r.Name}, perPod(r)...), " | "))
	}
	cpuTable(p, rep.Results)
	p("\n## Steady state: the operator's writes after a no-op change (an annotation on the PCS)\n\n")
	p("Writes besides the leader-election lease renewals (shipped lease timings; the renewals are counted apart).\n\n")
	p("| change | window | writes | lease renewals | by resource and verb |\n|---|---:|---:|---:|---|\n")
	for _, s := range rep.Steady {
		p("| %s | %.0f s | %d | %d | %s |\n", s.Name, s.Seconds, s.Writes, s.LeaseWrites, joinCounts(s.ByVerb))
	}
	p("\n## grove-operator's API requests (kube-apiserver audit log, the operator's ServiceAccount)\n\n")
	p("Whole run, by resource and verb:\n\n| resource | verb | requests |\n|---|---|---:|\n")
	keys := slices.SortedFunc(maps.Keys(rep.OperatorRequests), func(a, b string) int { return rep.OperatorRequests[b] - rep.OperatorRequests[a] })
	for _, k := range keys {
		res, verb, _ := strings.Cut(k, " ")
		p("| %s | %s | %d |\n", res, verb, rep.OperatorRequests[k])
	}
	p("\nPer workload:\n\n| workload | requests by resource and verb |\n|---|---|\n")
	for _, r := range rep.Results {
		if r.Kind == "grove" {
			p("| %s | %s |\n", r.Name, joinCounts(r.ByResourceVerb))
		}
	}
	p("\ngrove-operator over the whole run: **%.1f CPU seconds**, peak RSS (VmHWM) **%.0f MiB**.\n", rep.OperatorCPU, rep.OperatorPeakRSS)
	if len(rep.PprofTop) > 0 {
		p("\n## CPU profile of grove-operator (%s)\n\n```\n%s\n```\n", rep.PprofWindow, strings.Join(rep.PprofTop, "\n"))
	}
	if len(rep.RollingUpdatePprofTop) > 0 {
		p("\n## CPU profile of grove-operator (%s)\n\n```\n%s\n```\n", rollingUpdateWindow, strings.Join(rep.RollingUpdatePprofTop, "\n"))
	}
	if len(rep.APIServerRollingUpdatePprofTop) > 0 {
		p("\n## CPU profile of kube-apiserver (%s), by cumulative time\n\n```\n%s\n```\n", apiserverRollingUpdateWindow, strings.Join(rep.APIServerRollingUpdatePprofTop, "\n"))
	}
	if len(rep.QuarterRolloutPprofTop) > 0 {
		p("\n## CPU profile of grove-operator (%s), by cumulative time\n\n```\n%s\n```\n", apiserverRollingUpdateWindow, strings.Join(rep.QuarterRolloutPprofTop, "\n"))
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			p("\n**%s failed:** %s\n", r.Name, r.Error)
		}
	}
	return nil
}

func joinCounts(m map[string]int) string {
	keys := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// perPod is a workload's operator writes, requests and CPU and every client's apiserver
// requests, each divided by its pods ("–" for the operator's figures of a baseline).
func perPod(r *Result) []string {
	n := float64(max(r.Pods, 1))
	api := fmt.Sprintf("%.2f", float64(r.APIServerRequests)/n)
	if r.Kind != "grove" {
		return []string{"–", "–", "–", api}
	}
	return []string{fmt.Sprintf("%.2f", float64(r.OperatorWrites)/n), fmt.Sprintf("%.2f", float64(r.OperatorRequests)/n),
		fmt.Sprintf("%.1f", 1000*r.OperatorCPUSeconds/n), api}
}

// cpuProcesses are the columns of the CPU table, in order; other processes count in the total.
var cpuProcesses = []string{"kube-apiserver", "etcd", "grove-operator", "grove-scheduler", "kube-scheduler", "kube-controller-manager", "kwok"}

// cpuTotal is the CPU seconds of every control-plane process during r but the one named without
// (none when empty).
func cpuTotal(r *Result, without string) float64 {
	total := 0.0
	for name, s := range r.CPUByProcess {
		if name != without {
			total += s
		}
	}
	return total
}

// cpuTable prints the CPU seconds each control-plane process used per workload and how busy
// that kept the machine's cores: a workload at close to every core is bound by CPU, not by a
// client's QPS, and then every request any client makes costs time.
func cpuTable(p func(string, ...any), results []*Result) {
	p("\n## CPU seconds by process during each workload (%d cores)\n\n", runtime.NumCPU())
	p("The benchmark's own process (its informers and its 50 ms polls) runs on the same cores; its CPU is the last column, not in *all*.\n\n")
	p("| workload | wall s | %s | all | cores busy | benchmark process |\n|---|---:|%s---:|---:|---:|\n", strings.Join(cpuProcesses, " | "), strings.Repeat("---:|", len(cpuProcesses)))
	for _, r := range results {
		if len(r.CPUByProcess) == 0 {
			continue
		}
		wall := r.End.Sub(r.Start).Seconds()
		cells := []string{r.Name, fmt.Sprintf("%.1f", wall)}
		total := cpuTotal(r, "")
		for _, name := range cpuProcesses {
			cells = append(cells, fmt.Sprintf("%.1f", r.CPUByProcess[name]))
		}
		cells = append(cells, fmt.Sprintf("%.1f", total), fmt.Sprintf("%.2f", total/wall), fmt.Sprintf("%.1f", r.BenchmarkCPUSeconds))
		p("| %s |\n", strings.Join(cells, " | "))
	}
}
