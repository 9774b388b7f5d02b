package placement

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// Slicing is a PodGroup's slices (PodGang podgroups[].slices): each slice must lie within one
// value of Key, and no two slices of the group share a value.
type Slicing struct {
	Key string
	// Required: the gang waits rather than place a slice across domains. Otherwise, when the
	// slices do not fit, the group is placed as its pack constraints alone would place it.
	Required bool
	// Sizes are the pods of each slice, by slice index.
	Sizes []int64
	// Held are, per slice index, the nodes its members already hold: they pin its domain.
	Held map[int][]string
}

// SliceDomain is the domain chosen for one slice: the value of the slicing key and, of the
// nodes the plan considered, those with that value.
type SliceDomain struct {
	Choice
	Nodes sets.Set[string]
}

// Slice is the domain of slice index of the PodGroup; ok is false when the group has no
// slices, or they were given up (a preferred slicing that did not fit).
func (p *Plan) Slice(group string, index int) (SliceDomain, bool) {
	d, ok := p.slices[group][index]
	return d, ok
}

// sliceNeed is one slice to place: its index, the pods it still needs, and the domain its
// placed members pin ("" when none).
type sliceNeed struct {
	index  int
	size   int64
	need   int64
	pinned string
}

// sliceRoom is one domain of the slicing key: how many more pods of the group it holds.
type sliceRoom struct {
	value string
	fits  int64
}

// matchSlices gives every slice a domain of its own that holds what it still needs. Pinned
// slices keep their domain. The others, largest first, each take the tightest free domain that
// holds them (fewest pods to spare), which keeps big domains for big slices: since a domain
// that holds a slice holds every smaller one, largest-first tightest-fit finds a domain for
// every slice whenever any assignment does. It returns the domain per slice index, or the
// slice that found none.
func matchSlices(needs []sliceNeed, rooms []sliceRoom) (map[int]string, *sliceNeed) {
	fits := make(map[string]int64, len(rooms))
	for _, r := range rooms {
		fits[r.value] = r.fits
	}
	taken := sets.New[string]()
	out := make(map[int]string, len(needs))
	for i := range needs {
		n := &needs[i]
		if n.pinned == "" {
			continue
		}
		if fits[n.pinned] < n.need {
			return nil, n
		}
		out[n.index] = n.pinned
		taken.Insert(n.pinned)
	}
	order := make([]*sliceNeed, 0, len(needs))
	for i := range needs {
		if needs[i].pinned == "" {
			order = append(order, &needs[i])
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return order[a].need > order[b].need })
	for _, n := range order {
		best := ""
		for _, r := range rooms {
			if taken.Has(r.value) || r.fits < n.need {
				continue
			}
			if best == "" || r.fits < fits[best] || r.fits == fits[best] && r.value < best {
				best = r.value
			}
		}
		if best == "" {
			return nil, n
		}
		out[n.index] = best
		taken.Insert(best)
	}
	return out, nil
}

// fitSlices places the sliced PodGroup group of set s into w: one domain of its own per slice,
// each slice's remaining members within it. It returns how many pods it placed and, when a
// slice finds no domain, why.
func (p *planner) fitSlices(s *Set, group string, d capacity.Demand, sl Slicing, w work, rec *record) (int64, *Unfit) {
	byValue := map[string][]int{}
	for pos, i := range w.idx {
		if v, ok := p.in.Nodes[i].Labels[sl.Key]; ok {
			byValue[v] = append(byValue[v], pos)
		}
	}
	values := sortedKeys(byValue)
	rooms := make([]sliceRoom, 0, len(values))
	for _, v := range values {
		sub := w.subset(byValue[v], false)
		rooms = append(rooms, sliceRoom{value: v, fits: capacity.Spare(sub.free, p.allowed(sub), d.Shape, d.Class)})
	}
	needs := make([]sliceNeed, 0, len(sl.Sizes))
	for i, size := range sl.Sizes {
		n := sliceNeed{index: i, size: size, need: max(size-int64(len(sl.Held[i])), 0)}
		n.pinned = p.slicePin(sl, i)
		needs = append(needs, n)
	}
	match, failed := matchSlices(needs, rooms)
	if failed != nil {
		return 0, sliceUnfit(s, group, sl, needs, rooms, failed)
	}
	var placed int64
	for _, n := range needs {
		if n.need == 0 && rec == nil {
			continue
		}
		pos := byValue[match[n.index]]
		sub := w.subset(pos, false)
		for _, got := range capacity.Place(sub.free, p.allowed(sub), capacity.Demands{{Group: group, Shape: d.Shape, Count: n.need, Class: d.Class}}) {
			placed += got
		}
		w.writeBack(pos, sub)
		if rec != nil {
			if rec.slices[group] == nil {
				rec.slices[group] = map[int]SliceDomain{}
			}
			rec.slices[group][n.index] = SliceDomain{Choice: Choice{Key: sl.Key, Value: match[n.index]}, Nodes: p.nodeNames(sub)}
		}
	}
	return placed, nil
}

// slicePin is the domain most of slice i's placed members are in ("" when none is placed).
func (p *planner) slicePin(sl Slicing, i int) string {
	votes := map[string]int{}
	for _, name := range sl.Held[i] {
		if n, ok := p.byName[name]; ok {
			if v, ok := p.in.Nodes[n].Labels[sl.Key]; ok {
				votes[v]++
			}
		}
	}
	return majority(map[string]map[string]int{"": votes})[""]
}

// sliceUnfit says which slice found no domain and how much room the domains had.
func sliceUnfit(s *Set, group string, sl Slicing, needs []sliceNeed, rooms []sliceRoom, failed *sliceNeed) *Unfit {
	noun := DomainNoun(sl.Key)
	sizes := make([]string, len(needs))
	var demand int64
	for i, n := range needs {
		sizes[i] = strconv.FormatInt(n.size, 10)
		demand += n.need
	}
	sorted := append([]sliceRoom(nil), rooms...)
	sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].fits > sorted[b].fits })
	var room []string
	for i, r := range sorted {
		if i == 5 {
			room = append(room, fmt.Sprintf("%d more", len(sorted)-i))
			break
		}
		room = append(room, fmt.Sprintf("%q fits %d", r.value, r.fits))
	}
	why := fmt.Sprintf("PodGroup %q needs slices of %s pods, each whole within a %s of its own (%s)", group, strings.Join(sizes, "+"), noun, sl.Key)
	switch {
	case failed.pinned != "":
		why += fmt.Sprintf("; slice %d must stay in %s %q, where its members run, which fits %d of the %d it still needs",
			failed.index, noun, failed.pinned, roomOf(rooms, failed.pinned), failed.need)
	case len(rooms) == 0:
		why += fmt.Sprintf(", but no node it may use has the label %s", sl.Key)
	default:
		why += fmt.Sprintf("; no %s is left for slice %d (%d pods); %ss with room: %s", noun, failed.index, failed.need, noun, strings.Join(room, ", "))
	}
	set := s
	if set == nil || len(set.Groups) != 1 {
		set = &Set{ID: "slices/" + group, What: fmt.Sprintf("PodGroup %q", group), Groups: []string{group}}
	}
	return &Unfit{Set: set, Key: sl.Key, Demand: capacity.Demands{{Group: group, Count: demand}}, Domains: len(rooms), sliceWhy: why}
}

func roomOf(rooms []sliceRoom, value string) int64 {
	for _, r := range rooms {
		if r.value == value {
			return r.fits
		}
	}
	return 0
}

// CauseSlice is Unfit.Cause for a gang whose pack domains hold it but not each slice of a
// required slicing within a domain of its own.
const CauseSlice = "slice"

// preferredSlices reports whether any slicing of in is preferred.
func preferredSlices(in Input) bool {
	for _, sl := range in.Slices {
		if !sl.Required {
			return true
		}
	}
	return false
}

// chooseSlices is Choose with preferred slicings: first with every slicing honoured as if
// required, else with the preferred ones given up (those groups placed as plain packing would).
func chooseSlices(in Input) (*Plan, *Unfit) {
	strict, relaxed := in, in
	strict.Slices, relaxed.Slices = map[string]Slicing{}, map[string]Slicing{}
	for g, sl := range in.Slices {
		if sl.Required {
			relaxed.Slices[g] = sl
		}
		sl.Required = true
		strict.Slices[g] = sl
	}
	if plan, unfit := Choose(strict); unfit == nil {
		return plan, nil
	}
	return Choose(relaxed)
}
