package placement

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// Node is a node as the planner sees it. Free already excludes the gang's own assumed and bound
// members (the scheduler counts them on their nodes); a node the gang may not use has no Free.
type Node struct {
	Name   string
	Labels map[string]string
	Free   capacity.Resources
	// Excluded are the eligibility classes (capacity.Demand.Class) whose pods may not run here.
	Excluded capacity.Mask
}

// Input is one planning question: where can the gang's remaining members go?
type Input struct {
	Tree  *Tree
	Nodes []Node
	// Demand is what each PodGroup still needs placed in this attempt.
	Demand map[string]capacity.Demand
	// Held lists, per PodGroup, the nodes of members already assumed or bound. They pin the
	// domains of every set the PodGroup is in.
	Held map[string][]string
	// Shared lists the nodes of members of the other PodGangs of the gang's group (its
	// spec.sharedTopologyConstraint) that hold a node, SharedBy names one of those PodGangs.
	// They pin the domains of the shared set unless the gang's own members already do.
	Shared   []string
	SharedBy string
	// RuledOut are domains the scheduler's filter plugins rejected for the gang's members
	// although their counted capacity held them, with the filters' names: they are not chosen
	// again (unless members already placed pin them).
	RuledOut map[Choice][]string
	// Group lists the other PodGangs of the gang's group (its spec.sharedTopologyConstraint),
	// base first. While no gang of the group holds a node, the gang placed first chooses the
	// shared domain for all of them (see chooseGroupDomain).
	Group []Companion
	// Reuse is the earlier placement the gang goes back to (spec.reuseReservationRef); nil
	// when it names none. Members already placed and the group's pins come first.
	Reuse *Reuse
	// Spread are the gang's replica spreads (spread.go).
	Spread []Spread
	// Slices are the slicings of the gang's PodGroups, by PodGroup (slice.go).
	Slices map[string]Slicing
	// scopes are the node blocks of spreads scoped to some PodGroups (spread.go).
	scopes []scope
	// closed, when set, marks the nodes the gang may not use at all, as if they had no room
	// and admitted no class: the blocks of its replica spreads (spread.go), which would
	// otherwise copy every node for each choice.
	closed []bool
	// Index is NewIndex(Nodes), or one built for nodes with the same names and labels in the
	// same order; nil builds it.
	Index *Index
}

func (in *Input) isClosed(i int) bool { return in.closed != nil && in.closed[i] }

// Companion is another PodGang of the gang's group, as the shared domain choice counts it.
type Companion struct {
	// Tree is its pack constraints.
	Tree *Tree
	// Quorum is what each of its PodGroups needs at minReplicas; Full at its full size.
	Quorum, Full map[string]capacity.Demand
}

// Choice is one value of a node-label key.
type Choice struct {
	Key, Value string
}

// Plan is the placement decided for one gang attempt.
type Plan struct {
	required  map[string][]Choice
	allowed   map[string]sets.Set[string]
	preferred map[string]Choice
	// preferredNodes holds, per PodGroup, the nodes of its innermost preferred domain when that
	// domain holds the rest of the set.
	preferredNodes map[string]sets.Set[string]
	// spreadNodes, spreadRequired: SpreadNodes, SpreadRequiredNodes (spread.go).
	spreadNodes    *nodeMarks
	spreadRequired sets.Set[string]
	// scopedRequired, scopedPreferred: the same per PodGroup, for spreads scoped to it.
	scopedRequired, scopedPreferred map[string]sets.Set[string]
	// slices are the domains of each sliced PodGroup's slices (slice.go).
	slices map[string]map[int]SliceDomain
}

// Required lists the domains a member of the PodGroup must be in, outermost first.
func (p *Plan) Required(group string) []Choice { return p.required[group] }

// AllowedNodes are the nodes of the PodGroup's innermost required domain; nil when the PodGroup
// has no required key.
func (p *Plan) AllowedNodes(group string) sets.Set[string] { return p.allowed[group] }

// Preferred is the domain the PodGroup's members should share (innermost preferred key).
func (p *Plan) Preferred(group string) (Choice, bool) {
	c, ok := p.preferred[group]
	return c, ok
}

// PreferredNodes are the nodes of the PodGroup's innermost preferred domain when that domain
// holds the set's remaining members; nil when it does not, or there is no preferred key.
func (p *Plan) PreferredNodes(group string) sets.Set[string] { return p.preferredNodes[group] }

// Unfit says why the gang does not fit, in gang terms.
type Unfit struct {
	Set *Set
	// Key is the required key no domain of which holds the set; "" for a plain shortage.
	Key    string
	Demand capacity.Demands
	// Pinned is the domain members already run in, which the set may not leave.
	Pinned string
	// PinnedBy names the PodGang of the same group whose members pinned the domain; "" when
	// the gang's own members did.
	PinnedBy string
	// Best is the domain that holds the most of the set, BestFits how many.
	Best     string
	BestFits int64
	// Domains is the number of domains considered.
	Domains int
	// Within names the enclosing domain when a nested set is what does not fit.
	Within string
	// RuledOut describes the domains of Key left out because a filter rejected them.
	RuledOut []string
	// Reuse names the earlier PodGang whose domain the gang must reuse (Reuse.Required).
	Reuse string
	// spreadWhy, when set, is why a required replica spread leaves no domain (spread.go).
	spreadWhy string
	// sliceWhy, when set, is why a slice of a required slicing finds no domain (slice.go).
	sliceWhy string
	// roleWhy, when set, is why a required affinity or anti-affinity group leaves no
	// placement (affinity.go).
	roleWhy string
}

// Cause is the kind of Unfit, a ledger.Wait* value: "filter_rejected" when domains a filter
// rejected were left out, "no_room" for a plain shortage, "spread" when a required replica
// spread leaves no domain, else "no_domain".
func (u *Unfit) Cause() string {
	switch {
	case u.Reuse != "":
		return CauseReuseRequired
	case u.spreadWhy != "":
		return "spread"
	case u.sliceWhy != "":
		return CauseSlice
	case u.roleWhy != "":
		return CauseRoleAffinity
	case len(u.RuledOut) > 0:
		return "filter_rejected"
	case u.Key == "" && u.Within == "":
		return "no_room"
	}
	return "no_domain"
}

func (u *Unfit) Error() string {
	if u.Reuse != "" {
		return u.reuseError()
	}
	if u.spreadWhy != "" {
		return u.spreadError()
	}
	if u.roleWhy != "" {
		return u.roleWhy
	}
	if u.Within != "" {
		inner := *u
		inner.Within = ""
		return u.Within + ": " + inner.Error()
	}
	if len(u.RuledOut) > 0 {
		inner := *u
		inner.RuledOut = nil
		msg := "ruled out by filters: " + strings.Join(u.RuledOut, ", ")
		if u.Best == "" && u.BestFits == 0 && u.Key != "" && u.Pinned == "" {
			return fmt.Sprintf("%s needs %s within one %s (%s); %s", u.Set.What, u.Demand, DomainNoun(u.Key), u.Key, msg)
		}
		return inner.Error() + "; " + msg
	}
	if u.sliceWhy != "" {
		return u.sliceWhy
	}
	switch {
	case u.Key == "":
		return fmt.Sprintf("%s needs %s; the nodes it may use fit %d", u.Set.What, u.Demand, u.BestFits)
	case u.Pinned != "" && u.PinnedBy != "":
		return fmt.Sprintf("%s needs %s within %s %q (%s), where PodGang %s of its group was placed; it fits %d",
			u.Set.What, u.Demand, DomainNoun(u.Key), u.Pinned, u.Key, u.PinnedBy, u.BestFits)
	case u.Pinned != "":
		return fmt.Sprintf("%s needs %s more within %s %q (%s), where its members already run; it fits %d",
			u.Set.What, u.Demand, DomainNoun(u.Key), u.Pinned, u.Key, u.BestFits)
	case u.Domains == 0:
		return fmt.Sprintf("%s needs %s within one %s, but no node it may use has the label %s",
			u.Set.What, u.Demand, DomainNoun(u.Key), u.Key)
	default:
		noun := DomainNoun(u.Key)
		return fmt.Sprintf("%s needs %s within one %s (%s); the best %s, %q, fits %d",
			u.Set.What, u.Demand, noun, u.Key, noun, u.Best, u.BestFits)
	}
}

// Choose decides the gang's domains: for every set with a required key, the value whose nodes
// hold the set's remaining members (nested sets inside it) with the least capacity to spare —
// tightest fit, so that big domains stay free for big gangs; members already placed pin the
// value. For preferred keys it chooses the same way but never fails. It returns an Unfit when a
// required domain, or the nodes as a whole, cannot hold the remaining members.
func Choose(in Input) (*Plan, *Unfit) {
	if len(in.Spread) > 0 {
		return chooseSpread(in)
	}
	if preferredSlices(in) {
		return chooseSlices(in)
	}
	if in.Tree.withoutRoles != nil {
		return chooseRoles(in)
	}
	return choose(in)
}

func choose(in Input) (*Plan, *Unfit) {
	if in.Index == nil {
		in.Index = NewIndex(in.Nodes)
	}
	p := &planner{in: in, byName: in.Index.byName, demand: map[string]capacity.Demands{}}
	p.collectDemand(in.Tree.Root)
	p.pins, p.preferredPins = p.collectPins()
	p.reuseRequired, p.reusePreferred = p.collectReusePins()
	p.takePinnedApart(in.Tree.Root)
	w := work{idx: make([]int, len(in.Nodes)), free: make([]capacity.Resources, len(in.Nodes)), all: true}
	for i := range in.Nodes {
		w.idx[i] = i
		if !in.isClosed(i) {
			w.free[i] = in.Nodes[i].Free.Clone()
		}
	}
	rec := &record{required: map[string]Choice{}, preferred: map[string]Choice{},
		domains: map[string]sets.Set[string]{}, preferredDomains: map[string]sets.Set[string]{}, slices: map[string]map[int]SliceDomain{}}
	if _, unfit := p.fit(in.Tree.Root, w, rec); unfit != nil {
		return nil, unfit
	}
	plan := &Plan{required: map[string][]Choice{}, allowed: map[string]sets.Set[string]{}, preferred: map[string]Choice{},
		preferredNodes: map[string]sets.Set[string]{}, slices: rec.slices}
	for _, g := range in.Tree.Root.Groups {
		for _, s := range in.Tree.Chain(g) {
			if c, ok := rec.required[s.ID]; ok {
				plan.required[g] = append(plan.required[g], c)
				plan.allowed[g] = rec.domains[s.ID]
			}
			if c, ok := rec.preferred[s.ID]; ok {
				plan.preferred[g] = c
				if nodes, ok := rec.preferredDomains[s.ID]; ok {
					plan.preferredNodes[g] = nodes
				} else {
					delete(plan.preferredNodes, g)
				}
			}
		}
	}
	return plan, nil
}

type planner struct {
	in     Input
	byName map[string]int
	// demand is each set's remaining demand, its nested sets' included.
	demand              map[string]capacity.Demands
	pins, preferredPins map[string]string
	// reuseRequired and reusePreferred are the domains of the earlier placement (Input.Reuse)
	// of the gang-wide sets' keys.
	reuseRequired, reusePreferred map[string]string
	// sharedPinned: the other PodGangs of the group pinned the shared set's domain.
	sharedPinned bool
	// taken holds, per anti-affinity group, the domains its members took (affinity.go).
	taken map[string]map[string]string
	// relaxApart lets a preferred anti-affinity member share a domain (affinity.go).
	relaxApart bool
}

// work is a view of some nodes: positions into Input.Nodes and their remaining capacity.
type work struct {
	idx  []int
	free []capacity.Resources
	// all: idx is every node, in Input.Nodes' order (positions are node indexes).
	all bool
}

func (w work) subset(pos []int, clone bool) work {
	s := work{idx: make([]int, len(pos)), free: make([]capacity.Resources, len(pos))}
	for i, p := range pos {
		s.idx[i] = w.idx[p]
		if clone {
			s.free[i] = w.free[p].Clone()
		} else {
			s.free[i] = w.free[p]
		}
	}
	return s
}

// subsetInto is subset(pos, true) into s, reusing s's slices.
func (w work) subsetInto(s *work, pos []int) {
	s.idx, s.free, s.all = s.idx[:0], s.free[:0], false
	for _, p := range pos {
		s.idx = append(s.idx, w.idx[p])
		s.free = append(s.free, w.free[p].Clone())
	}
}

func (w work) writeBack(pos []int, s work) {
	for i, p := range pos {
		w.free[p] = s.free[i]
	}
}

// record collects the choices of a committed placement; nil while domains are only compared.
type record struct {
	required, preferred map[string]Choice
	// domains and preferredDomains name the nodes of the chosen required domains, and of the
	// preferred domains that hold their set.
	domains, preferredDomains map[string]sets.Set[string]
	// slices are the domains chosen for the slices of each sliced PodGroup.
	slices map[string]map[int]SliceDomain
}

// clone copies the record, so that a committed placement tried in one domain can be undone.
func (r *record) clone() record {
	out := record{required: maps.Clone(r.required), preferred: maps.Clone(r.preferred),
		domains: maps.Clone(r.domains), preferredDomains: maps.Clone(r.preferredDomains),
		slices: make(map[string]map[int]SliceDomain, len(r.slices))}
	for g, byIndex := range r.slices {
		out.slices[g] = maps.Clone(byIndex)
	}
	return out
}

func (p *planner) collectDemand(s *Set) capacity.Demands {
	var d capacity.Demands
	for _, g := range s.Groups {
		if x, ok := p.in.Demand[g]; ok {
			d = append(d, x)
		}
	}
	p.demand[s.ID] = d
	for _, c := range s.Children {
		p.collectDemand(c)
	}
	return d
}

// collectPins finds, for every set, the domain most of its placed members are in.
func (p *planner) collectPins() (required, preferred map[string]string) {
	votes, prefVotes := map[string]map[string]int{}, map[string]map[string]int{}
	vote := func(into map[string]map[string]int, set, value string) {
		if into[set] == nil {
			into[set] = map[string]int{}
		}
		into[set][value]++
	}
	for g, nodeNames := range p.in.Held {
		for _, name := range nodeNames {
			i, ok := p.byName[name]
			if !ok {
				continue
			}
			labels := p.in.Nodes[i].Labels
			for _, s := range p.in.Tree.Chain(g) {
				if v, ok := labels[s.Required]; ok && s.Required != "" {
					vote(votes, s.ID, v)
				}
				if v, ok := labels[s.Preferred]; ok && s.Preferred != "" {
					vote(prefVotes, s.ID, v)
				}
			}
		}
	}
	required, preferred = majority(votes), majority(prefVotes)
	p.sharedPinned = false
	if len(p.in.Shared) > 0 {
		if s := p.in.Tree.Root; s.ID == SharedSetID {
			own := map[string]bool{SharedSetID: required[SharedSetID] != ""}
			votes, prefVotes = map[string]map[string]int{}, map[string]map[string]int{}
			for _, name := range p.in.Shared {
				i, ok := p.byName[name]
				if !ok {
					continue
				}
				labels := p.in.Nodes[i].Labels
				if v, ok := labels[s.Required]; ok && s.Required != "" {
					vote(votes, s.ID, v)
				}
				if v, ok := labels[s.Preferred]; ok && s.Preferred != "" {
					vote(prefVotes, s.ID, v)
				}
			}
			if v := majority(votes)[s.ID]; v != "" && !own[s.ID] {
				required[s.ID], p.sharedPinned = v, true
			}
			if v := majority(prefVotes)[s.ID]; v != "" && preferred[s.ID] == "" {
				preferred[s.ID] = v
			}
		}
	}
	return required, preferred
}

func majority(votes map[string]map[string]int) map[string]string {
	out := map[string]string{}
	for set, byValue := range votes {
		best, n := "", -1
		for _, v := range sortedKeys(byValue) {
			if byValue[v] > n {
				best, n = v, byValue[v]
			}
		}
		out[set] = best
	}
	return out
}

// fit places set s and everything nested in it into w, choosing s's required domain first.
// It returns how many pods it placed and, when they do not all fit, why.
func (p *planner) fit(s *Set, w work, rec *record) (int64, *Unfit) {
	if pos, ok := p.scopeNodes(s, w); ok {
		// A spread scoped to exactly s's PodGroups keeps s out of the nodes it blocks.
		sub := w.subset(pos, false)
		placed, unfit := p.fitSet(s, sub, rec)
		w.writeBack(pos, sub)
		return placed, unfit
	}
	return p.fitSet(s, w, rec)
}

func (p *planner) fitSet(s *Set, w work, rec *record) (int64, *Unfit) {
	if s.Required == "" {
		if rec != nil && s.Preferred != "" {
			if pref, holds := p.choosePreferred(s, w, rec); holds {
				return p.fitPreferred(s, w, pref, rec)
			}
		}
		return p.fitInside(s, w, rec)
	}
	pos, value, unfit := p.chooseRequired(s, w)
	if unfit != nil {
		return unfit.BestFits, unfit
	}
	p.takeApart(s, s.Required, value)
	domain := w.subset(pos, false)
	var placed int64
	if rec != nil {
		rec.required[s.ID] = Choice{Key: s.Required, Value: value}
		rec.domains[s.ID] = p.nodeNames(domain)
		if s.Preferred != "" {
			if pref, holds := p.choosePreferred(s, domain, rec); holds {
				placed, unfit = p.fitPreferred(s, domain, pref, rec)
				w.writeBack(pos, domain)
				return placed, unfit
			}
		}
	}
	placed, unfit = p.fitInside(s, domain, rec)
	w.writeBack(pos, domain)
	return placed, unfit
}

// fitPreferred places what set s holds inside its preferred domain (positions pref in w), which
// holds it: nested sets choose their domains there. Chosen anywhere, a nested required domain
// would be the tightest of all and break the preference for nothing — the required rack of a
// preferred anti-affinity member landing in the rack another member took. Should the committed
// placement not fit there after all (nested preferences it made differ from the trial), s is
// placed in w as before.
func (p *planner) fitPreferred(s *Set, w work, pref []int, rec *record) (int64, *Unfit) {
	domain := w.subset(pref, true)
	taken, saved := p.saveTaken(), rec.clone()
	placed, unfit := p.fitInside(s, domain, rec)
	if unfit == nil {
		w.writeBack(pref, domain)
		return placed, nil
	}
	p.taken, *rec = taken, saved
	return p.fitInside(s, w, rec)
}

// fitInside places s's nested sets (largest demand first) and then its PodGroups that are in no
// nested set.
func (p *planner) fitInside(s *Set, w work, rec *record) (int64, *Unfit) {
	var placed int64
	children := append([]*Set(nil), s.Children...)
	sort.SliceStable(children, func(a, b int) bool {
		return p.demand[children[a].ID].Total() > p.demand[children[b].ID].Total()
	})
	nested := sets.New[string]()
	for _, c := range children {
		nested.Insert(c.Groups...)
		n, unfit := p.fit(c, w, rec)
		placed += n
		if unfit != nil {
			return placed, unfit
		}
	}
	var direct capacity.Demands
	for _, g := range s.Groups {
		d, ok := p.in.Demand[g]
		if !ok || nested.Has(g) {
			continue
		}
		if sl, sliced := p.in.Slices[g]; sliced {
			// Slices first: they need whole domains, the plain groups take what is left.
			n, unfit := p.fitSlices(s, g, d, sl, w, rec)
			placed += n
			if unfit != nil {
				return placed, unfit
			}
			continue
		}
		direct = append(direct, d)
	}
	if direct.Total() == 0 {
		return placed, nil
	}
	var got int64
	for _, n := range capacity.Place(w.free, p.allowed(w), direct) {
		got += n
	}
	placed += got
	if got < direct.Total() {
		return placed, &Unfit{Set: s, Demand: p.demand[s.ID], BestFits: placed}
	}
	return placed, nil
}

// chooseDomain compares the values of key among w's nodes (only pinned when set) and returns
// the positions in w of the tightest domain that holds s.
func (p *planner) chooseDomain(s *Set, key, pinned string, w work) ([]int, string, *Unfit) {
	var byValue map[string][]int
	var values []string
	if w.all {
		d := p.in.Index.domainsOf(key)
		byValue, values = d.byValue, d.values
	} else {
		byValue = map[string][]int{}
		for pos, i := range w.idx {
			if v, ok := p.in.Index.labels[i][key]; ok {
				byValue[v] = append(byValue[v], pos)
			}
		}
		values = sortedKeys(byValue)
	}
	if pinned != "" {
		values = []string{pinned}
	} else {
		values = p.apartValues(s, key, values)
	}
	var ruled []string
	if pinned == "" && len(p.in.RuledOut) > 0 {
		kept := values[:0:0]
		for _, v := range values {
			if by, out := p.in.RuledOut[Choice{Key: key, Value: v}]; out {
				ruled = append(ruled, fmt.Sprintf("%s %q (%s)", DomainNoun(key), v, strings.Join(by, ", ")))
				continue
			}
			kept = append(kept, v)
		}
		values = kept
	}
	if s.ID == SharedSetID && key == s.Required && pinned == "" && len(p.in.Group) > 0 {
		if pos, value, ok := p.chooseGroupDomain(s, values, byValue, w); ok {
			return pos, value, nil
		}
	}
	largest := p.demand[s.ID].Largest()
	var bestValue, mostValue string
	var bestSpare, mostPlaced int64
	var found bool
	var mostUnfit *Unfit
	// A domain of closed nodes only (taken out by a replica spread's tier) holds none of s when
	// s has pods to place and no slices (a slice with all its members placed fits anywhere): it
	// is not tried while another domain may hold s. When none does, every domain is tried
	// again, so that the reason names the domain it named before.
	skipClosed := p.in.closed != nil && len(p.in.Slices) == 0 && p.demand[s.ID].Total() > 0
	for {
		bestValue, bestSpare, found = "", int64(math.MaxInt64), false
		mostValue, mostPlaced, mostUnfit = "", int64(-1), nil
		skipped := false
		// The candidates' views share one buffer: a trial keeps nothing of its domain.
		var candidate work
		for _, v := range values {
			if skipClosed && p.closedDomain(w, byValue[v]) {
				skipped = true
				continue
			}
			w.subsetInto(&candidate, byValue[v])
			saved := p.saveTaken()
			placed, unfit := p.fitInside(s, candidate, nil)
			p.taken = saved
			if placed > mostPlaced {
				mostValue, mostPlaced, mostUnfit = v, placed, unfit
			}
			if unfit != nil {
				continue
			}
			if spare := capacity.Spare(candidate.free, p.allowed(candidate), largest.Shape, largest.Class); spare < bestSpare {
				bestValue, bestSpare, found = v, spare, true
			}
		}
		if found || !skipped {
			break
		}
		skipClosed = false
	}
	if !found {
		by := p.pinnedBy(s, key, pinned)
		if mostUnfit != nil && (mostUnfit.Set != s || mostUnfit.sliceWhy != "") && mostUnfit.Within == "" && (by == "" || mostUnfit.Key != "") {
			// A nested set is what does not fit: say so, in the domain that came closest.
			nested := *mostUnfit
			nested.Within = fmt.Sprintf("in the best %s, %q", DomainNoun(key), mostValue)
			if by != "" {
				nested.Within = fmt.Sprintf("in %s %q, where PodGang %s of its group was placed", DomainNoun(key), mostValue, by)
			}
			return nil, "", &nested
		}
		u := &Unfit{Set: s, Key: key, Demand: p.demand[s.ID], Pinned: pinned,
			Best: mostValue, BestFits: max(mostPlaced, 0), Domains: len(byValue), RuledOut: ruled}
		u.PinnedBy = by
		return nil, "", u
	}
	return byValue[bestValue], bestValue, nil
}

// closedDomain reports whether every node of a domain (positions pos in w) is closed.
func (p *planner) closedDomain(w work, pos []int) bool {
	for _, at := range pos {
		if !p.in.closed[w.idx[at]] {
			return false
		}
	}
	return len(pos) > 0
}

// groupFit is how well one value of the shared key holds the gang's group.
type groupFit struct {
	value string
	// full: every PodGang of the group fits at its full size; quorum: at its quorum.
	full, quorum bool
	// gangs counts the companions whose quorum fits, taken base first; pods their pods.
	gangs int
	pods  int64
	spare int64
}

func (a groupFit) better(b groupFit) bool {
	switch {
	case a.full != b.full:
		return a.full
	case a.quorum != b.quorum:
		return a.quorum
	case a.gangs != b.gangs:
		return a.gangs > b.gangs
	case a.pods != b.pods:
		return a.pods > b.pods
	case a.spare != b.spare:
		return a.spare < b.spare
	}
	return a.value < b.value
}

// chooseGroupDomain chooses the shared set's domain for the whole group, when the gang is the
// first of its group to be placed: among the domains that hold the gang, the tightest that also
// holds every other PodGang of the group at full size; else at quorum; else the one that holds
// the quorums of most of them, base first. Choosing for the gang alone would pin the group to
// a domain too small for it (the tightest fit for the first gang is the worst for the rest).
// ok is false when no domain holds the gang.
func (p *planner) chooseGroupDomain(s *Set, values []string, byValue map[string][]int, w work) ([]int, string, bool) {
	largest := p.demand[s.ID].Largest()
	var best *groupFit
	for _, v := range values {
		candidate := w.subset(byValue[v], true)
		saved := p.saveTaken()
		_, unfit := p.fitInside(s, candidate, nil)
		p.taken = saved
		if unfit != nil {
			continue
		}
		f := groupFit{value: v, spare: capacity.Spare(candidate.free, p.allowed(candidate), largest.Shape, largest.Class)}
		f.full = p.companionsFit(candidate, func(c Companion) map[string]capacity.Demand { return c.Full }, nil)
		f.quorum = p.companionsFit(candidate, func(c Companion) map[string]capacity.Demand { return c.Quorum }, &f)
		if best == nil || f.better(*best) {
			best = &f
		}
	}
	if best == nil {
		return nil, "", false
	}
	return byValue[best.value], best.value, true
}

// companionsFit reports whether every companion's demand fits what the gang left of the
// candidate domain, one after the other (base first), each under its own nested constraints.
// With count set, it records how many companions (and pods) fit before the first that did not.
func (p *planner) companionsFit(candidate work, demand func(Companion) map[string]capacity.Demand, count *groupFit) bool {
	w := candidate.subset(identity(len(candidate.idx)), true)
	all := true
	for _, c := range p.in.Group {
		cp := &planner{in: Input{Tree: c.Tree, Nodes: p.in.Nodes, Demand: demand(c), Index: p.in.Index, closed: p.in.closed}, byName: p.byName,
			demand: map[string]capacity.Demands{}, pins: map[string]string{}, preferredPins: map[string]string{}}
		cp.collectDemand(c.Tree.Root)
		trial := w.subset(identity(len(w.idx)), true)
		placed, unfit := cp.fitInside(c.Tree.Root, trial, nil)
		if unfit != nil {
			all = false
			if count != nil {
				count.pods += placed
			}
			break
		}
		w = trial
		if count != nil {
			count.gangs++
			count.pods += placed
		}
	}
	return all
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pinnedBy names the PodGang of the group that pinned set s's required domain; "" when
// another gang did not.
func (p *planner) pinnedBy(s *Set, key, pinned string) string {
	if pinned != "" && s.ID == SharedSetID && p.sharedPinned && key == s.Required {
		return p.in.SharedBy
	}
	return ""
}

// choosePreferred records the domain of s's preferred key: where its members already are, else
// the tightest domain that holds s, else the one that holds most of it. When the domain holds
// s, its nodes are recorded too, and returned (positions in w) with holds set.
func (p *planner) choosePreferred(s *Set, w work, rec *record) (pos []int, holds bool) {
	pin := p.preferredPin(s, w)
	pos, value, unfit := p.choosePreferredDomain(s, pin, w)
	switch {
	case unfit == nil:
		rec.preferredDomains[s.ID] = p.nodeNames(w.subset(pos, false))
		holds = true
	case pin != "":
		value = pin
	case unfit.Best != "":
		value = unfit.Best
	default:
		return nil, false
	}
	rec.preferred[s.ID] = Choice{Key: s.Preferred, Value: value}
	p.takeApart(s, s.Preferred, value)
	if !holds {
		pos = nil
	}
	return pos, holds
}

// allowed is the mask of every node of w; nil when no node excludes a class.
func (p *planner) allowed(w work) []capacity.Mask {
	var masks []capacity.Mask
	for pos, i := range w.idx {
		ex := p.in.Nodes[i].Excluded
		if p.in.isClosed(i) {
			ex = capacity.AnyClass
		}
		if ex != 0 && masks == nil {
			masks = make([]capacity.Mask, len(w.idx))
			for j := range masks {
				masks[j] = capacity.AnyClass
			}
			masks[pos] = ^ex
		} else if masks != nil {
			masks[pos] = ^ex
		}
	}
	return masks
}

func (p *planner) nodeNames(w work) sets.Set[string] {
	names := sets.New[string]()
	for _, i := range w.idx {
		names.Insert(p.in.Nodes[i].Name)
	}
	return names
}
