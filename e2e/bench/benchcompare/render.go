package main

import (
	"fmt"
	"math"
	"strings"
)

type machine struct {
	cores   int
	cpu     string
	date    string
	commit  string
	command string
}

const (
	notRun       = "not run"
	notSupported = "not supported"
	none         = "–"
)

// notes explain workloads whose rows are not like for like.
var notes = map[string]string{
	"Preferred": "Native: Kubernetes 1.37's PodGroup has no preferred (soft) topology constraint " +
		"(schedulingConstraints.topology is required-only), so Native runs these gangs without one; " +
		"Coscheduling has no topology awareness and runs them without one too - both rows measure gangs without a rack " +
		"preference, so compare their throughput with that in mind. Baseline: plain pods, no gangs and no rack preference.",
	"RackRequired": "Baseline: the same pods without gangs or rack constraint (throughput reference only).",
	"Contention": "2048 pods of 2 CPU for 1000 two-CPU slots. gangwatch deletes a gang once all its pods are bound " +
		"(as if it ran to completion); \"unfinished\" means gangs were still waiting at gangwatch's deadline, " +
		"typically because parts of many gangs hold the cluster (Baseline has no gangs).",
}

var header = []string{
	"scheduler", "pods/s (avg)", "pods/s (p50)", "attempt p99 (ms)",
	"all gangs bound (s)", "partially bound gangs", "gangs in one rack", "racks partly used",
}

func render(r *results, m machine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Gang schedulers side by side (scheduler_perf)\n\n")
	fmt.Fprintf(&b, "- machine: %d cores (runtime.NumCPU), %s\n", m.cores, m.cpu)
	fmt.Fprintf(&b, "- date: %s\n", m.date)
	fmt.Fprintf(&b, "- commit: %s\n", m.commit)
	fmt.Fprintf(&b, "- command: `%s`\n", m.command)
	runs := make([]string, len(r.runs))
	for i, run := range r.runs {
		runs[i] = fmt.Sprintf("%s (%s)", run, plural(r.rounds[run], "round"))
	}
	fmt.Fprintf(&b, "- runs (scheduler_perf topics): %s\n\n", strings.Join(runs, ", "))
	b.WriteString("Each cell: the value - the mean over the run's rounds - then its ratio to the Baseline (kube-scheduler's default profile " +
		"on the same pods without gangs) of the same run - the same processes and Kubernetes version; the mean of that run's Baseline test cases. " +
		"`not run`: the scheduler has no results in this directory; `not supported`: it ran, but not this workload; `–`: not measured.\n\n" +
		"- pods/s: scheduler_perf's SchedulingThroughput, sampled each second while pods get bound.\n" +
		"- attempt p99: scheduler_scheduling_attempt_duration_seconds{result=scheduled}, from the start of a pod's last scheduling cycle " +
		"until it is bound - for gang members this includes waiting at Permit for the rest of the gang.\n" +
		"- all gangs bound: gangwatch, from the first pod seen until the last gang had all its pods bound.\n" +
		"- partially bound gangs: gangwatch, gangs that stayed partly bound with no further member bound for longer than its 5 s grace " +
		"(binding a gang is one write per member, not one atomic write), with the longest such stall.\n" +
		"- gangs in one rack / racks partly used: gangwatch, when the last gang became whole; a rack is partly used when it holds pods " +
		"and still has room for one more.\n\n")
	for _, w := range r.workloads {
		fmt.Fprintf(&b, "## %s\n\n", w)
		b.WriteString("| " + strings.Join(header, " | ") + " |\n")
		b.WriteString("|" + strings.Repeat("---|", len(header)) + "\n")
		for _, s := range schedulers {
			run, own, base := r.stats(s, w)
			if run != "" && run != primaryTopic && s != "Baseline" && base.ran {
				b.WriteString(row(fmt.Sprintf("Baseline (%s run)", run), base, base, true, ""))
			}
			missing := ""
			switch {
			case run != "":
			case r.ranAnything(s):
				missing = notSupported
			default:
				missing = notRun
			}
			b.WriteString(row(s, own, base, s == "Baseline", missing))
		}
		b.WriteString("\n")
		for _, s := range schedulers {
			if _, own, _ := r.stats(s, w); own.hasGroupCycles {
				fmt.Fprintf(&b, "%s ran pod-group scheduling cycles (PlacementFeasible recorded, mean %.3f ms).\n", s, own.placementFeasible.mean())
			}
		}
		for k, note := range notes {
			if strings.Contains(w, k) {
				fmt.Fprintf(&b, "Note: %s\n", note)
			}
		}
		b.WriteString("\n")
	}
	if problems := r.honesty(); len(problems) > 0 {
		b.WriteString("## Warnings\n\n")
		for _, p := range problems {
			fmt.Fprintf(&b, "- %s\n", p)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// row renders one scheduler's cells; isBase leaves out the ratios.
func row(name string, own, base stats, isBase bool, missing string) string {
	cells := []string{name}
	if missing != "" {
		for range header[1:] {
			cells = append(cells, missing)
		}
		return "| " + strings.Join(cells, " | ") + " |\n"
	}
	ratio := func(v, b opt) string {
		if isBase || !v.ok() || !b.ok() || b.mean() == 0 {
			return ""
		}
		return fmt.Sprintf(" (%.2f×)", v.mean()/b.mean())
	}
	num := func(v, b opt, format string) string {
		if !v.ok() {
			return none
		}
		return fmt.Sprintf(format, v.mean()) + ratio(v, b)
	}
	count := func(v, of opt) string {
		if !v.ok() {
			return none
		}
		return fmt.Sprintf("%s of %s", countString(v.mean()), countString(of.mean()))
	}
	// A baseline that hit the deadline has no completion time to compare with.
	baseBound := base.allGangsBound
	if base.unfinished > 0 {
		baseBound = opt{}
	}
	bound := num(own.allGangsBound, baseBound, "%.1f")
	if own.unfinished > 0 {
		bound = fmt.Sprintf("unfinished (%d of %d runs hit the deadline)", own.unfinished, own.gangwatchRuns)
		if own.allGangsBound.ok() {
			bound += fmt.Sprintf("; others %.1f", own.allGangsBound.mean())
		}
	}
	partial := count(own.partial, own.gangs)
	if own.longestPartial.ok() {
		partial += fmt.Sprintf(" (longest %.1f s)", own.longestPartial.mean())
	}
	racks := count(own.racksPartlyUsed, own.racksUsed)
	if own.racksUsed.ok() && own.racksUsed.mean() == 0 {
		racks = none // every pod was deleted (run-to-completion workload)
	}
	cells = append(cells,
		num(own.throughputAvg, base.throughputAvg, "%.1f"),
		num(own.throughputP50, base.throughputP50, "%.1f"),
		num(own.attemptP99, base.attemptP99, "%.1f"),
		bound,
		partial,
		count(own.inOneRack, own.gangs),
		racks,
	)
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// countString prints whole counts as integers and means of several runs with one decimal.
func countString(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
