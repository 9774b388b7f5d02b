package main

import (
	"fmt"
	"math"
	"sort"
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
		"preference, so compare their throughput with that in mind. Baseline: plain pods, no gangs and no rack preference. " +
		"Packing: a gang is 16 CPU and a rack 100 CPU (25 nodes of 4), so a rack holds 6 whole gangs (96 CPU) and keeping every one of " +
		"the 100 gangs inside one rack takes at least 17 of the 20 racks (16 if gangs may be split). A full rack still has 4 CPU free, " +
		"room for one more 1-CPU pod, so here every used rack counts as partly used: racks used is the packing figure.",
	"RackRequired": "Baseline: the same pods without gangs or rack constraint (throughput reference only).",
	"Nodes_Contention_": "2048 pods of 2 CPU for 1000 two-CPU slots. gangwatch deletes a gang once all its pods are bound " +
		"(as if it ran to completion); \"unfinished\" means gangs were still waiting at gangwatch's deadline, " +
		"typically because parts of many gangs hold the cluster (Baseline has no gangs).",
}

var header = []string{
	"scheduler", "pods/s (avg)", "pods/s (p50)", "attempt p99 (ms)",
	"all gangs bound (s)", "gang completion p50 (s)", "gang completion p99 (s)",
	"partially bound gangs", "gangs in one rack", "racks used", "racks partly used",
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
		"- pods/s: scheduler_perf's SchedulingThroughput, sampled each second while pods get bound. Its window opens at the first " +
		"binding, so time before a scheduler binds anything is not counted: one that holds pods back and binds them later in a burst " +
		"scores higher here while finishing later, and one that binds pods as they are created is paced by their creation. " +
		"`all gangs bound` is the end-to-end measure.\n" +
		"- attempt p99: scheduler_scheduling_attempt_duration_seconds{result=scheduled}, from the start of a pod's last scheduling cycle " +
		"until it is bound - for gang members this includes waiting at Permit for the rest of the gang.\n" +
		"- all gangs bound: gangwatch, from the first pod seen until the last gang had all its pods bound.\n" +
		"- gang completion p50 / p99: gangwatch, per gang from its first pod seen until all its pods were bound (nearest-rank " +
		"percentiles over the run's gangs; for the Baseline a gang is the same labelled set of plain pods); runs that hit the deadline are left out.\n" +
		"- partially bound gangs: gangwatch, gangs that stayed partly bound with no further member bound for longer than its 5 s grace " +
		"(binding a gang is one write per member, not one atomic write), with the longest such stall.\n" +
		"- gangs in one rack / racks used / racks partly used: gangwatch, when the last gang became whole; racks used is racks holding " +
		"bench pods of all racks; a rack is partly used when it holds pods and still has room for one more of the smallest pod.\n" +
		"- Ratios of the placement columns (partially bound gangs, gangs in one rack, racks used, racks partly used) are given only where " +
		"the Baseline's value is not 0. The Baseline has no gangs and spreads plain pods over every rack, so it keeps no gang inside one " +
		"rack and leaves none partly bound except under contention: a ratio to its 0 would be meaningless, and those cells show the count alone. " +
		"Fewer racks used for the same pods means tighter packing.\n" +
		"- Where the time goes (under each table): scheduler_framework_extension_point_duration_seconds (every scheduling cycle; " +
		"Permit's duration excludes the wait for the gang) and " +
		"scheduler_plugin_execution_duration_seconds (kube-scheduler samples 10% of the cycles; Filter and Score are timed once per node), " +
		"the largest means in ms with their p99, for the scheduling cycle (the pod's PreEnqueue to Permit); then the mean duration of Bind, " +
		"the API write in the binding goroutine (off the scheduling cycle; the same for every scheduler). " +
		"The histograms' buckets end at 205 ms (extension points) and 22 ms (plugins): a p99 beyond shows as ≥ that bound, while the mean is exact.\n\n")
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
		for _, s := range timeOrder {
			if run, own, _ := r.stats(s, w); run != "" {
				if line := whereTimeGoes(own); line != "" {
					fmt.Fprintf(&b, "Where the time goes, %s: %s\n", s, line)
				}
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
	// Per-gang completion percentiles come from the finished runs only: no ratio when either
	// side left some out.
	baseCompletionP50, baseCompletionP99 := base.completionP50, base.completionP99
	if base.unfinished > 0 || own.unfinished > 0 {
		baseCompletionP50, baseCompletionP99 = opt{}, opt{}
	}
	completion := func(v, b opt) string {
		s := num(v, b, "%.1f")
		if v.ok() && own.unfinished > 0 {
			s += fmt.Sprintf(" (%s that finished)", plural(v.n, "run"))
		}
		return s
	}
	partial := count(own.partial, own.gangs) + ratio(own.partial, base.partial)
	if own.longestPartial.ok() {
		partial += fmt.Sprintf("; longest %.1f s", own.longestPartial.mean())
	}
	racksUsed := count(own.racksUsed, own.racksTotal) + ratio(own.racksUsed, base.racksUsed)
	if own.racksUsed.ok() && own.racksTotal.mean() == 0 {
		racksUsed = countString(own.racksUsed.mean()) + ratio(own.racksUsed, base.racksUsed) // reports without the rack total
	}
	racksPartly := count(own.racksPartlyUsed, own.racksUsed) + ratio(own.racksPartlyUsed, base.racksPartlyUsed)
	if own.racksUsed.ok() && own.racksUsed.mean() == 0 {
		// every pod was deleted (run-to-completion workload)
		racksUsed, racksPartly = none, none
	}
	cells = append(cells,
		num(own.throughputAvg, base.throughputAvg, "%.1f"),
		num(own.throughputP50, base.throughputP50, "%.1f"),
		num(own.attemptP99, base.attemptP99, "%.1f"),
		bound,
		completion(own.completionP50, baseCompletionP50),
		completion(own.completionP99, baseCompletionP99),
		partial,
		count(own.inOneRack, own.gangs)+ratio(own.inOneRack, base.inOneRack),
		racksUsed,
		racksPartly,
	)
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// timeOrder: the "where the time goes" lines, Grove first.
var timeOrder = []string{"Grove", "Baseline", "Native", "Coscheduling"}

// topDurations is how many extension points and plugins a "where the time goes" line names.
const topDurations = 3

// bindingCycle lists the extension points that run in the binding goroutine, after the
// scheduling cycle: Bind is an API write and would top every list.
var bindingCycle = map[string]bool{"PreBindPreFlight": true, "PreBind": true, "Bind": true, "PostBind": true}

// whereTimeGoes names the scheduling-cycle extension points and plugin/extension point pairs
// with the largest mean durations (with their p99, and the largest p99 if it is not among them),
// then the binding cycle's Bind; "" without data.
func whereTimeGoes(s stats) string {
	epOf := func(k string) string { return k[strings.LastIndex(k, "/")+1:] }
	scheduling := func(d map[string]*durationOpt) map[string]*durationOpt {
		out := map[string]*durationOpt{}
		for k, v := range d {
			if !bindingCycle[epOf(k)] {
				out[k] = v
			}
		}
		return out
	}
	var parts []string
	if top := topByMean(scheduling(s.extensionPoints), nil, extensionPointTopBucket); top != "" {
		parts = append(parts, "extension points "+top)
	}
	perNode := func(k string) bool { ep := epOf(k); return ep == "Filter" || ep == "Score" }
	if top := topByMean(scheduling(s.plugins), perNode, pluginTopBucket); top != "" {
		parts = append(parts, "plugins "+top)
	}
	if b := s.extensionPoints["Bind"]; b != nil && b.avg.ok() {
		parts = append(parts, fmt.Sprintf("binding: Bind %s ms (p99 %s)", ms(b.avg.mean()), quantile(b.p99.mean(), extensionPointTopBucket)))
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "; ") + "."
}

// The histograms' largest finite buckets, in ms: kube-scheduler's
// framework_extension_point_duration_seconds has ExponentialBuckets(0.0001, 2, 12),
// plugin_execution_duration_seconds ExponentialBuckets(0.00001, 1.5, 20). A quantile beyond them
// reads as that bound; means are exact.
var (
	extensionPointTopBucket = 0.1 * math.Pow(2, 11)
	pluginTopBucket         = 0.01 * math.Pow(1.5, 19)
)

// quantile prints a histogram quantile, ">=" the top bucket when it is beyond it.
func quantile(v, topBucket float64) string {
	if v >= topBucket*0.999 {
		return "≥" + ms(topBucket)
	}
	return ms(v)
}

func topByMean(d map[string]*durationOpt, perNode func(string) bool, topBucket float64) string {
	keys := make([]string, 0, len(d))
	for k, v := range d {
		if v.avg.ok() && v.avg.mean() > 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	by := func(f func(*durationOpt) float64) []string {
		out := append([]string(nil), keys...)
		sort.SliceStable(out, func(i, j int) bool {
			a, b := f(d[out[i]]), f(d[out[j]])
			if a != b {
				return a > b
			}
			return out[i] < out[j]
		})
		return out
	}
	byMean := by(func(o *durationOpt) float64 { return o.avg.mean() })
	name := func(k string) string {
		if perNode != nil && perNode(k) {
			return k + " (per node)"
		}
		return k
	}
	var items []string
	shown := map[string]bool{}
	for _, k := range byMean[:min(topDurations, len(byMean))] {
		shown[k] = true
		items = append(items, fmt.Sprintf("%s %s ms (p99 %s)", name(k), ms(d[k].avg.mean()), quantile(d[k].p99.mean(), topBucket)))
	}
	out := strings.Join(items, ", ")
	if k := by(func(o *durationOpt) float64 { return o.p99.mean() })[0]; !shown[k] {
		out += fmt.Sprintf("; largest p99 %s %s ms (mean %s)", name(k), quantile(d[k].p99.mean(), topBucket), ms(d[k].avg.mean()))
	}
	return out
}

// ms prints a duration in ms with about three significant digits.
func ms(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	case v >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
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
