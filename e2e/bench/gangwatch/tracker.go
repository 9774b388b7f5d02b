package gangwatch

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Labels every benchmark pod carries, whichever scheduler places it. They describe the gang the
// pod belongs to for the measurement only; each scheduler has its own way to express the gang.
const (
	// GangLabel names the pod's gang, unique within its namespace.
	GangLabel = "bench.grove.io/gang"
	// GangSizeLabel is the number of members that make the gang whole.
	GangSizeLabel = "bench.grove.io/gang-size"
	// GangCountLabel is the number of gangs the workload creates.
	GangCountLabel = "bench.grove.io/gangs"
	// DeleteWhenBoundLabel ("true") marks a workload whose gangs run to completion: a gang's pods
	// are deleted as soon as all of them are bound, freeing room for the gangs that wait.
	DeleteWhenBoundLabel = "bench.grove.io/delete-when-bound"
	// DefaultRackLabel is the node label placement quality is measured against.
	DefaultRackLabel = "topology.kubernetes.io/rack"
)

// gangKey identifies a gang: namespace and GangLabel value.
type gangKey struct{ namespace, name string }

type gang struct {
	size        int
	firstSeen   time.Time
	lastSeen    time.Time            // when its last member so far was first seen
	firstBound  time.Time            // zero until a member is bound
	members     map[types.UID]string // pod UID -> node name ("" while unbound)
	bound       int
	wholeAt     time.Time     // zero until every member is bound
	wholeRacks  int           // racks the gang spanned when it became whole
	partSince   time.Time     // zero unless partly bound: when its last binding so far was seen
	wasPartial  bool          // partly bound without progress for longer than the grace period
	longestPart time.Duration // longest such stall
	deleting    bool          // its pods are being deleted because it ran to completion
}

// tracker is gangwatch's bookkeeping, free of informers and clocks so that it can be tested
// with explicit times. It is not safe for concurrent use; Watcher serialises access.
type tracker struct {
	rackLabel     string
	grace         time.Duration
	nodes         map[string]nodeInfo // node name -> rack and CPU capacity
	gangs         map[gangKey]*gang
	pods          map[types.UID]podInfo // live pods with their node and CPU request
	expectedGangs int
	deleteWhenBnd bool
	start         time.Time // first pod seen
	lastWhole     time.Time
	fillSnapshot  *rackUsage // rack usage when the last expected gang became whole
}

type nodeInfo struct {
	rack     string
	milliCPU int64
}

type podInfo struct {
	name     string
	gang     gangKey
	node     string
	milliCPU int64
}

type rackUsage struct {
	used, partlyUsed, total int
}

func newTracker(rackLabel string, grace time.Duration) *tracker {
	return &tracker{
		rackLabel: rackLabel,
		grace:     grace,
		nodes:     map[string]nodeInfo{},
		gangs:     map[gangKey]*gang{},
		pods:      map[types.UID]podInfo{},
	}
}

func (t *tracker) setNode(n *corev1.Node) {
	cpu := n.Status.Allocatable.Cpu()
	if cpu.IsZero() {
		cpu = n.Status.Capacity.Cpu()
	}
	t.nodes[n.Name] = nodeInfo{rack: n.Labels[t.rackLabel], milliCPU: cpu.MilliValue()}
}

func podMilliCPU(p *corev1.Pod) int64 {
	var sum int64
	for _, c := range p.Spec.Containers {
		sum += c.Resources.Requests.Cpu().MilliValue()
	}
	return sum
}

// observePod records a pod's current state (add or update). It returns the gang to delete when
// the pod completed a gang of a run-to-completion workload.
func (t *tracker) observePod(p *corev1.Pod, now time.Time) (complete *gangKey) {
	name, ok := p.Labels[GangLabel]
	if !ok {
		return nil
	}
	size, err := strconv.Atoi(p.Labels[GangSizeLabel])
	if err != nil || size <= 0 {
		return nil
	}
	if n, err := strconv.Atoi(p.Labels[GangCountLabel]); err == nil && n > t.expectedGangs {
		t.expectedGangs = n
	}
	if p.Labels[DeleteWhenBoundLabel] == "true" {
		t.deleteWhenBnd = true
	}
	if t.start.IsZero() {
		t.start = now
	}
	key := gangKey{p.Namespace, name}
	g := t.gangs[key]
	if g == nil {
		g = &gang{size: size, firstSeen: now, members: map[types.UID]string{}}
		t.gangs[key] = g
	}
	prev, known := g.members[p.UID]
	if !known {
		g.lastSeen = now
	}
	g.members[p.UID] = p.Spec.NodeName
	t.pods[p.UID] = podInfo{name: p.Name, gang: key, node: p.Spec.NodeName, milliCPU: podMilliCPU(p)}
	progressed := (!known || prev == "") && p.Spec.NodeName != ""
	if progressed {
		g.bound++
		if g.firstBound.IsZero() {
			g.firstBound = now
		}
	}
	t.updatePartial(g, now, progressed)
	if g.bound >= g.size && g.wholeAt.IsZero() {
		g.wholeAt = now
		g.wholeRacks = t.racksOf(g)
		t.lastWhole = now
		if !t.deleteWhenBnd && t.expectedGangs > 0 && t.wholeGangs() == t.expectedGangs {
			u := t.rackUsage()
			t.fillSnapshot = &u
		}
		if t.deleteWhenBnd {
			g.deleting = true
			return &key
		}
	}
	return nil
}

// removePod forgets a deleted pod. Deleting a completed gang is not a partial state.
func (t *tracker) removePod(p *corev1.Pod, now time.Time) {
	info, ok := t.pods[p.UID]
	if !ok {
		return
	}
	delete(t.pods, p.UID)
	g := t.gangs[info.gang]
	if g == nil || g.deleting {
		return
	}
	if node, ok := g.members[p.UID]; ok {
		delete(g.members, p.UID)
		if node != "" {
			g.bound--
		}
	}
	t.updatePartial(g, now, false)
}

// updatePartial tracks how long a partly bound gang goes without another binding. Binding a
// released gang is one API call per member, so a big gang is partly bound for a while even when
// nothing is wrong; a gang stuck half-bound makes no progress at all.
func (t *tracker) updatePartial(g *gang, now time.Time, progressed bool) {
	partial := g.bound > 0 && g.bound < g.size && !g.deleting
	switch {
	case partial && g.partSince.IsZero():
		g.partSince = now
	case partial && progressed:
		t.closePartial(g, now)
		g.partSince = now
	case !partial && !g.partSince.IsZero():
		t.closePartial(g, now)
		g.partSince = time.Time{}
	}
}

func (t *tracker) closePartial(g *gang, now time.Time) {
	d := now.Sub(g.partSince)
	if d > g.longestPart {
		g.longestPart = d
	}
	if d > t.grace {
		g.wasPartial = true
	}
}

// tick counts gangs that have stayed partly bound past the grace period without resolving.
func (t *tracker) tick(now time.Time) {
	for _, g := range t.gangs {
		if !g.partSince.IsZero() {
			t.closePartial(g, now)
		}
	}
}

func (t *tracker) wholeGangs() int {
	n := 0
	for _, g := range t.gangs {
		if !g.wholeAt.IsZero() {
			n++
		}
	}
	return n
}

// finished reports whether every expected gang has been whole at some point.
func (t *tracker) finished() bool {
	return t.expectedGangs > 0 && t.wholeGangs() >= t.expectedGangs
}

func (t *tracker) racksOf(g *gang) int {
	racks := map[string]bool{}
	for _, node := range g.members {
		racks[t.nodes[node].rack] = true
	}
	return len(racks)
}

// rackUsage counts racks holding benchmark pods, and of those the ones with room left for
// another of the workload's smallest pods: the fragments a packing scheduler avoids.
func (t *tracker) rackUsage() rackUsage {
	capacity := map[string]int64{}
	for _, n := range t.nodes {
		capacity[n.rack] += n.milliCPU
	}
	used := map[string]int64{}
	smallest := int64(math.MaxInt64)
	for _, p := range t.pods {
		if p.node == "" {
			continue
		}
		used[t.nodes[p.node].rack] += p.milliCPU
		smallest = min(smallest, p.milliCPU)
	}
	u := rackUsage{total: len(capacity), used: len(used)}
	for rack, cpu := range used {
		if capacity[rack]-cpu >= smallest {
			u.partlyUsed++
		}
	}
	return u
}

func (t *tracker) report(name string, now time.Time, deadlineHit bool) Report {
	t.tick(now)
	r := Report{
		Name:            name,
		ExpectedGangs:   t.expectedGangs,
		Gangs:           len(t.gangs),
		DeleteWhenBound: t.deleteWhenBnd,
		Finished:        t.finished() && !deadlineHit,
	}
	var completions []float64
	var timelines []GangTimeline
	for key, g := range t.gangs {
		if g.wasPartial {
			r.PartiallyBoundGangs++
		}
		r.LongestPartialSeconds = max(r.LongestPartialSeconds, g.longestPart.Seconds())
		if g.wholeAt.IsZero() {
			continue
		}
		r.WholeGangs++
		completions = append(completions, g.wholeAt.Sub(g.firstSeen).Seconds())
		timelines = append(timelines, GangTimeline{Gang: key.name,
			FirstSeen: t.since(g.firstSeen), LastSeen: t.since(g.lastSeen), FirstBound: t.since(g.firstBound), Whole: t.since(g.wholeAt)})
		if g.wholeRacks == 1 {
			r.GangsInOneRack++
		}
	}
	if r.Finished {
		r.AllGangsBoundSeconds = t.lastWhole.Sub(t.start).Seconds()
	}
	sort.Slice(timelines, func(i, j int) bool {
		if a, b := timelines[i].Whole-timelines[i].FirstSeen, timelines[j].Whole-timelines[j].FirstSeen; a != b {
			return a > b
		}
		return timelines[i].Gang < timelines[j].Gang
	})
	r.SlowestGangs = timelines[:min(len(timelines), slowestGangs)]
	r.GangCompletionSeconds = PercentilesOf(completions)
	u := t.rackUsage()
	if t.fillSnapshot != nil {
		u = *t.fillSnapshot
	}
	r.RacksTotal, r.RacksUsed, r.RacksPartlyUsed = u.total, u.used, u.partlyUsed
	return r
}

// slowestGangs is how many gang timelines a report keeps.
const slowestGangs = 3

// since is the seconds from the first pod seen to at.
func (t *tracker) since(at time.Time) float64 {
	return at.Sub(t.start).Seconds()
}

// PercentilesOf is the median, p99 and maximum of values (nearest rank; zero when there are none).
func PercentilesOf(values []float64) Percentiles {
	sorted := slices.Sorted(slices.Values(values))
	return Percentiles{P50: percentile(sorted, 0.50), P99: percentile(sorted, 0.99), Max: percentile(sorted, 1)}
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
