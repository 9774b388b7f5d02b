package kubectlgrove

import (
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// spreadGroup is one replica spread (a PodCliqueSet's replicas over one level) as placed now.
type spreadGroup struct {
	namespace, group string
	level            corev1alpha1.TopologyDomain
	key              string
	required         bool
	// members maps each replica (its base PodGang) to its PodGangs.
	members map[string]sets.Set[string]
	// scopes maps a member's PodGang to the PodGroups that form the member in it (a
	// scaling-group replica inside a base PodGang); absent: the whole PodGang.
	scopes map[string]map[string][]string
}

// renderSpread writes, for every replica spread over a level of ct, which replica runs in which
// domain of the level, the domains no replica uses, and the skew (replicas in the fullest domain
// minus those in the emptiest).
func renderSpread(w io.Writer, ct *corev1alpha1.ClusterTopology, nodes []corev1.Node, pods []corev1.Pod, gangs []schedv1alpha1.PodGang) {
	levelOf := levelsOf(ct)
	groups := map[string]*spreadGroup{}
	memberOf := map[string][]*spreadGroup{} // namespace/PodGang → the spreads it is in
	for i := range gangs {
		pg := &gangs[i]
		for _, rs := range pg.Spec.ReplicaSpreadConstraints {
			level, ok := levelOf[rs.TopologyKey]
			if !ok {
				continue
			}
			id := pg.Namespace + "/" + rs.Group + "/" + rs.TopologyKey
			g := groups[id]
			if g == nil {
				g = &spreadGroup{namespace: pg.Namespace, group: rs.Group, level: level, key: rs.TopologyKey, required: rs.Required,
					members: map[string]sets.Set[string]{}, scopes: map[string]map[string][]string{}}
				groups[id] = g
			}
			if g.members[rs.Member] == nil {
				g.members[rs.Member] = sets.New[string]()
			}
			g.members[rs.Member].Insert(pg.Name)
			if len(rs.PodGroupNames) > 0 {
				if g.scopes[rs.Member] == nil {
					g.scopes[rs.Member] = map[string][]string{}
				}
				g.scopes[rs.Member][pg.Name] = rs.PodGroupNames
			}
			memberOf[pg.Namespace+"/"+pg.Name] = append(memberOf[pg.Namespace+"/"+pg.Name], g)
		}
	}
	if len(groups) == 0 {
		return
	}
	nodeLabels := make(map[string]map[string]string, len(nodes))
	for i := range nodes {
		nodeLabels[nodes[i].Name] = nodes[i].Labels
	}
	// gangDomains: namespace/PodGang → key → the domains its bound pods use.
	gangDomains := map[string]map[string]sets.Set[string]{}
	for i := range pods {
		p := &pods[i]
		gang := p.Labels[common.LabelPodGang]
		labels, bound := nodeLabels[p.Spec.NodeName]
		if gang == "" || !bound || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		gk := p.Namespace + "/" + gang
		for _, g := range memberOf[gk] {
			if v, ok := labels[g.key]; ok {
				// Per PodGang and per PodGang/PodGroup (the PodClique), for scoped members.
				for _, k := range []string{gk, gk + "/" + p.Labels[common.LabelPodClique]} {
					if gangDomains[k] == nil {
						gangDomains[k] = map[string]sets.Set[string]{}
					}
					if gangDomains[k][g.key] == nil {
						gangDomains[k][g.key] = sets.New[string]()
					}
					gangDomains[k][g.key].Insert(v)
				}
			}
		}
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintln(w, groups[id].line(nodes, gangDomains))
	}
}

// line is e.g. `replica spread ns/serve over rack (required): r0: serve-0; r1: serve-1, serve-2;
// unused: r3; skew 2`.
func (g *spreadGroup) line(nodes []corev1.Node, gangDomains map[string]map[string]sets.Set[string]) string {
	byDomain := map[string][]string{}
	for i := range nodes {
		if v, ok := nodes[i].Labels[g.key]; ok && byDomain[v] == nil {
			byDomain[v] = []string{}
		}
	}
	for member, gangs := range g.members {
		used := sets.New[string]()
		for gang := range gangs {
			scope, scoped := g.scopes[member][gang]
			if !scoped {
				used = used.Union(gangDomains[g.namespace+"/"+gang][g.key])
				continue
			}
			for _, pg := range scope {
				used = used.Union(gangDomains[g.namespace+"/"+gang+"/"+pg][g.key])
			}
		}
		for v := range used {
			byDomain[v] = append(byDomain[v], member)
		}
	}
	values := make([]string, 0, len(byDomain))
	for v := range byDomain {
		values = append(values, v)
	}
	sort.Strings(values)
	var placed, unused []string
	most, least := 0, -1
	for _, v := range values {
		members := byDomain[v]
		sort.Strings(members)
		most = max(most, len(members))
		if least < 0 || len(members) < least {
			least = len(members)
		}
		if len(members) == 0 {
			unused = append(unused, v)
			continue
		}
		placed = append(placed, v+": "+strings.Join(members, ", "))
	}
	mode := "preferred"
	if g.required {
		mode = "required"
	}
	out := fmt.Sprintf("replica spread %s/%s over %s (%s): ", g.namespace, g.group, g.level, mode)
	if len(placed) == 0 {
		out += "no replica placed"
	} else {
		out += strings.Join(placed, "; ")
	}
	if len(unused) > 0 {
		out += "; unused: " + strings.Join(unused, ", ")
	}
	return out + fmt.Sprintf("; skew %d", most-max(least, 0))
}

// levelsOf maps each level's node-label key of ct to its domain.
func levelsOf(ct *corev1alpha1.ClusterTopology) map[string]corev1alpha1.TopologyDomain {
	levelOf := map[string]corev1alpha1.TopologyDomain{}
	for _, l := range ct.Spec.Levels {
		levelOf[l.Key] = l.Domain
	}
	return levelOf
}

// labelsByNode maps each node's name to its labels.
func labelsByNode(nodes []corev1.Node) map[string]map[string]string {
	out := make(map[string]map[string]string, len(nodes))
	for i := range nodes {
		out[nodes[i].Name] = nodes[i].Labels
	}
	return out
}
