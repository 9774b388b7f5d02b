package placement

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// CauseRoleAffinity is Unfit.Cause for a gang that would fit but for a required affinity or
// anti-affinity group of its roles.
const CauseRoleAffinity = "role_affinity"

// Role groups become sets of the tree, so that every user of the tree (filter, reservation,
// elastic check, preemption) honours them without knowing of them:
//
//   - an affinity group is one set over its members' PodGroups, packed under its key
//     (required or preferred) like a group config;
//   - each member of an anti-affinity group is one set packed under the group's key, marked
//     Apart: the domain choice does not give it a value another member of the group took
//     (apartValues), so members end up in different domains. A preferred member that finds
//     no domain of its own shares one (choosePreferredDomain).
//
// Sets nest: a role set encloses the sets wholly inside it (a scaling group's replica configs,
// PodGroups' own sets) and lies inside the smallest set that encloses it. Admission keeps the
// role domain at or above its members' pack domains, and members whole (a standalone clique or
// a scaling group), so the sets stay nested; a set that would cut across another is dropped.

// addRoleSets adds the sets of spec's affinity and anti-affinity groups under root and reports
// whether it added any.
func addRoleSets(spec *v1alpha1.PodGangSpec, root *Set) bool {
	known := sets.New(root.Groups...)
	added := false
	members := func(ms []v1alpha1.RoleAffinityMember) []string {
		var out []string
		for _, m := range ms {
			for _, g := range m.PodGroupNames {
				if known.Has(g) && !contains(out, g) {
					out = append(out, g)
				}
			}
		}
		return out
	}
	keys := func(g *v1alpha1.RoleAffinityGroup) (required, preferred string) {
		if g.Required {
			return g.TopologyKey, ""
		}
		return "", g.TopologyKey
	}
	for i := range spec.AffinityGroups {
		g := &spec.AffinityGroups[i]
		names := make([]string, len(g.Members))
		for k, m := range g.Members {
			names[k] = m.Name
		}
		s := &Set{ID: "affinity/" + g.Name, What: fmt.Sprintf("roles %s of affinity group %q", strings.Join(names, ", "), g.Name),
			Groups: members(g.Members), RoleGroup: g.Name}
		s.Required, s.Preferred = keys(g)
		if len(s.Groups) > 0 && insertSet(root, s) {
			added = true
		}
	}
	for i := range spec.AntiAffinityGroups {
		g := &spec.AntiAffinityGroups[i]
		for _, m := range g.Members {
			s := &Set{ID: "apart/" + g.Name + "/" + m.Name, What: fmt.Sprintf("role %q of anti-affinity group %q", m.Name, g.Name),
				Groups: members([]v1alpha1.RoleAffinityMember{m}), RoleGroup: g.Name, Apart: true}
			s.Required, s.Preferred = keys(g)
			if len(s.Groups) > 0 && insertSet(root, s) {
				added = true
			}
		}
	}
	return added
}

// insertSet puts s into the tree under parent: inside the child that holds more than s's
// PodGroups, else directly under parent, enclosing the children wholly inside it (a child
// with the same PodGroups is enclosed: the role's domain is the broader). It reports false,
// adding nothing, when s cuts across a child.
func insertSet(parent *Set, s *Set) bool {
	for _, c := range parent.Children {
		if containsAll(c.Groups, s.Groups) && len(c.Groups) > len(s.Groups) {
			return insertSet(c, s)
		}
	}
	var keep, inside []*Set
	for _, c := range parent.Children {
		switch {
		case containsAll(s.Groups, c.Groups):
			inside = append(inside, c)
		case overlaps(s.Groups, c.Groups):
			return false
		default:
			keep = append(keep, c)
		}
	}
	s.Children = append(s.Children, inside...)
	keep = append(keep, s)
	parent.Children = keep
	return true
}

func contains(list []string, x string) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func containsAll(outer, inner []string) bool {
	for _, g := range inner {
		if !contains(outer, g) {
			return false
		}
	}
	return true
}

func overlaps(a, b []string) bool {
	for _, g := range b {
		if contains(a, g) {
			return true
		}
	}
	return false
}

// withoutRoleGroups is spec without its role groups.
func withoutRoleGroups(spec *v1alpha1.PodGangSpec) *v1alpha1.PodGangSpec {
	plain := *spec
	plain.AffinityGroups, plain.AntiAffinityGroups = nil, nil
	return &plain
}

// chooseRoles is Choose for a gang with role groups. When the gang does not fit, it asks
// whether it would without them: then a required group is why it waits, and the Unfit says
// so (Scheduled reason RoleAffinityUnsatisfiable) rather than blaming the room.
func chooseRoles(in Input) (*Plan, *Unfit) {
	plan, unfit := choose(in)
	if unfit == nil || unfit.Reuse != "" || len(unfit.RuledOut) > 0 {
		return plan, unfit
	}
	plain := in
	plain.Tree = in.Tree.withoutRoles
	if _, without := choose(plain); without != nil {
		return nil, unfit
	}
	return nil, roleUnfit(in.Tree, unfit)
}

// roleUnfit names the required role groups that keep the gang from fitting.
func roleUnfit(t *Tree, inner *Unfit) *Unfit {
	u := *inner
	var groups []string
	var walk func(s *Set)
	walk = func(s *Set) {
		if s.RoleGroup != "" && s.Required != "" {
			kind := "affinity group"
			if s.Apart {
				kind = "anti-affinity group"
			}
			if g := fmt.Sprintf("%s %q (%s)", kind, s.RoleGroup, DomainNoun(s.Required)); !contains(groups, g) {
				groups = append(groups, g)
			}
		}
		for _, c := range s.Children {
			walk(c)
		}
	}
	walk(t.Root)
	sort.Strings(groups)
	u.roleWhy = fmt.Sprintf("%s; the gang would fit without its required %s", inner.Error(), strings.Join(groups, ", "))
	return &u
}

// apartValues drops from values those another member of s's anti-affinity group took, when key
// is s's own key (and, for a preferred member, while apart placement is still tried).
func (p *planner) apartValues(s *Set, key string, values []string) []string {
	if !s.Apart || (key != s.Required && (key != s.Preferred || p.relaxApart)) {
		return values
	}
	taken := p.taken[s.RoleGroup]
	if len(taken) == 0 {
		return values
	}
	kept := make([]string, 0, len(values))
	for _, v := range values {
		if by, ok := taken[v]; !ok || by == s.ID {
			kept = append(kept, v)
		}
	}
	return kept
}

// takeApart records that member s of an anti-affinity group took value.
func (p *planner) takeApart(s *Set, key, value string) {
	if !s.Apart || key == "" || value == "" {
		return
	}
	if p.taken == nil {
		p.taken = map[string]map[string]string{}
	}
	if p.taken[s.RoleGroup] == nil {
		p.taken[s.RoleGroup] = map[string]string{}
	}
	if _, ok := p.taken[s.RoleGroup][value]; !ok {
		p.taken[s.RoleGroup][value] = s.ID
	}
}

// takePinnedApart records the domains of anti-affinity members that members already placed
// pin, before any set is chosen, so that another member never takes them first.
func (p *planner) takePinnedApart(s *Set) {
	if s.Apart {
		if v := p.pins[s.ID]; v != "" && s.Required != "" {
			p.takeApart(s, s.Required, v)
		} else if v := p.preferredPins[s.ID]; v != "" && s.Preferred != "" {
			p.takeApart(s, s.Preferred, v)
		}
	}
	for _, c := range s.Children {
		p.takePinnedApart(c)
	}
}

// saveTaken copies taken, for a trial fit to be undone.
func (p *planner) saveTaken() map[string]map[string]string {
	if p.taken == nil {
		return nil
	}
	out := make(map[string]map[string]string, len(p.taken))
	for g, byValue := range p.taken {
		m := make(map[string]string, len(byValue))
		for v, by := range byValue {
			m[v] = by
		}
		out[g] = m
	}
	return out
}

// choosePreferredDomain chooses s's preferred domain; a preferred anti-affinity member that
// finds none of its own tries again among every domain.
func (p *planner) choosePreferredDomain(s *Set, pin string, w work) ([]int, string, *Unfit) {
	pos, value, unfit := p.chooseDomain(s, s.Preferred, pin, w)
	if unfit == nil || !s.Apart || pin != "" || p.relaxApart {
		return pos, value, unfit
	}
	p.relaxApart = true
	defer func() { p.relaxApart = false }()
	return p.chooseDomain(s, s.Preferred, pin, w)
}
