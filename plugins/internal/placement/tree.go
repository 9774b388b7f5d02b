// Package placement turns a PodGang's pack constraints into placement decisions: which value of
// each required node-label key (which rack, which block, which host) the gang's members must
// share, chosen once per gang attempt as the tightest domain that still holds them, and which
// value of each preferred key they should share. It is pure logic over node labels and free
// capacity; grove-scheduler's topology plugin feeds it the scheduler's snapshot.
package placement

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Set is a part of a gang that is packed under one constraint: the whole gang, a group config
// (a subset of PodGroups) or one PodGroup. Sets nest: a PodGroup's set lies inside its group
// config's set, which lies inside the gang's.
type Set struct {
	// ID identifies the set within its gang.
	ID string
	// What names the set in messages, e.g. `PodGroup "decode"`.
	What string
	// Groups are the PodGroups the set covers, its children's included.
	Groups []string
	// Required and Preferred are node-label keys ("" when unset).
	Required, Preferred string
	// Children are the nested sets.
	Children []*Set
	// RoleGroup names the affinity group the set keeps together or, when Apart, the
	// anti-affinity group one of whose members the set is (affinity.go).
	RoleGroup string
	Apart     bool
}

// SharedSetID is the ID of the set of a PodGang's shared constraint: the whole gang, packed
// together with the other PodGangs of its group.
const SharedSetID = "shared"

// Tree is a gang's pack constraints as nested sets.
type Tree struct {
	Root        *Set
	chains      map[string][]*Set
	constrained bool
	// withoutRoles is the tree without its role sets, nil when it has none (affinity.go).
	withoutRoles *Tree
}

// NewTree reads the pack constraints of a PodGang: spec.sharedTopologyConstraint for the gang
// and the others of its group, spec.topologyConstraint for the whole gang,
// topologyConstraintGroupConfigs for subsets of PodGroups and each PodGroup's own constraint.
// Group configs and PodGroups without a constraint add no set. A PodGroup listed by several
// group configs belongs to the first.
func NewTree(spec *v1alpha1.PodGangSpec) *Tree {
	root := &Set{ID: "podgang", What: "the PodGang", Required: spec.TopologyConstraint.Required(), Preferred: spec.TopologyConstraint.Preferred()}
	known := map[string]bool{}
	for _, g := range spec.PodGroups {
		root.Groups = append(root.Groups, g.Name)
		known[g.Name] = true
	}
	parentOf := map[string]*Set{}
	for _, cfg := range spec.TopologyConstraintGroupConfigs {
		if cfg.TopologyConstraint.Required() == "" && cfg.TopologyConstraint.Preferred() == "" {
			continue
		}
		set := &Set{ID: "config/" + cfg.Name, What: fmt.Sprintf("group config %q", cfg.Name),
			Required: cfg.TopologyConstraint.Required(), Preferred: cfg.TopologyConstraint.Preferred()}
		for _, g := range cfg.PodGroupNames {
			if known[g] && parentOf[g] == nil {
				set.Groups = append(set.Groups, g)
				parentOf[g] = set
			}
		}
		if len(set.Groups) > 0 {
			root.Children = append(root.Children, set)
		}
	}
	for _, g := range spec.PodGroups {
		if g.TopologyConstraint.Required() == "" && g.TopologyConstraint.Preferred() == "" {
			continue
		}
		parent := parentOf[g.Name]
		if parent == nil {
			parent = root
		}
		parent.Children = append(parent.Children, &Set{ID: "group/" + g.Name, What: fmt.Sprintf("PodGroup %q", g.Name),
			Groups: []string{g.Name}, Required: g.TopologyConstraint.Required(), Preferred: g.TopologyConstraint.Preferred()})
	}
	roles := addRoleSets(spec, root)
	if sc := spec.SharedTopologyConstraint; sc.Required() != "" || sc.Preferred() != "" {
		// The PodGangs of the group share a domain: it encloses the gang's own.
		root = &Set{ID: SharedSetID, What: "the PodGang", Groups: root.Groups, Required: sc.Required(), Preferred: sc.Preferred(),
			Children: []*Set{root}}
	}
	t := &Tree{Root: root, chains: map[string][]*Set{}}
	var walk func(s *Set, chain []*Set)
	walk = func(s *Set, chain []*Set) {
		chain = append(chain[:len(chain):len(chain)], s)
		for _, g := range s.Groups {
			t.chains[g] = chain
		}
		for _, c := range s.Children {
			walk(c, chain)
		}
	}
	walk(root, nil)
	var constrained func(s *Set) bool
	constrained = func(s *Set) bool {
		if s.Required != "" || s.Preferred != "" {
			return true
		}
		for _, c := range s.Children {
			if constrained(c) {
				return true
			}
		}
		return false
	}
	t.constrained = constrained(root)
	if roles {
		t.withoutRoles = NewTree(withoutRoleGroups(spec))
	}
	return t
}

// Chain is the sets a PodGroup belongs to, outermost first (the root always comes first).
func (t *Tree) Chain(group string) []*Set { return t.chains[group] }

// Constrains reports whether the PodGroup is under any required or preferred key.
func (t *Tree) Constrains(group string) (required, preferred bool) {
	for _, s := range t.chains[group] {
		required = required || s.Required != ""
		preferred = preferred || s.Preferred != ""
	}
	return required, preferred
}

// Constrained reports whether any set of the gang has a key.
func (t *Tree) Constrained() bool { return t.constrained }

// DomainNoun names the domains of a key in messages: the key's last path segment
// ("topology.kubernetes.io/rack" → "rack").
func DomainNoun(key string) string {
	if i := strings.LastIndex(key, "/"); i >= 0 && i < len(key)-1 {
		return key[i+1:]
	}
	return key
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
