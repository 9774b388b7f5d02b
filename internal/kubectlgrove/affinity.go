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

// renderRoles writes, for every affinity or anti-affinity group of a PodGang (one per
// PodCliqueSet replica) over a level of ct, which domains each member role's bound pods use,
// e.g. `roles ns/serve-0 together in rack (required) "pd": prefill: r0; decode: r0`. A role
// with no bound pod shows "-".
func renderRoles(w io.Writer, ct *corev1alpha1.ClusterTopology, nodes []corev1.Node, pods []corev1.Pod, gangs []schedv1alpha1.PodGang) {
	levelOf, nodeLabels := levelsOf(ct), labelsByNode(nodes)
	var lines []string
	for i := range gangs {
		pg := &gangs[i]
		if len(pg.Spec.AffinityGroups)+len(pg.Spec.AntiAffinityGroups) == 0 {
			continue
		}
		// nodesOf: the PodGroup (PodClique) → nodes of the gang's bound, live pods.
		nodesOf := map[string][]string{}
		for j := range pods {
			p := &pods[j]
			if p.Namespace != pg.Namespace || p.Labels[common.LabelPodGang] != pg.Name || p.Spec.NodeName == "" ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			nodesOf[p.Labels[common.LabelPodClique]] = append(nodesOf[p.Labels[common.LabelPodClique]], p.Spec.NodeName)
		}
		for _, kind := range []struct {
			verb   string
			groups []schedv1alpha1.RoleAffinityGroup
		}{{"together", pg.Spec.AffinityGroups}, {"apart", pg.Spec.AntiAffinityGroups}} {
			for _, g := range kind.groups {
				level, ok := levelOf[g.TopologyKey]
				if !ok {
					continue
				}
				mode := "preferred"
				if g.Required {
					mode = "required"
				}
				var parts []string
				for _, m := range g.Members {
					used := sets.New[string]()
					for _, group := range m.PodGroupNames {
						for _, n := range nodesOf[group] {
							if v, ok := nodeLabels[n][g.TopologyKey]; ok {
								used.Insert(v)
							}
						}
					}
					domains := "-"
					if used.Len() > 0 {
						domains = strings.Join(sets.List(used), ", ")
					}
					parts = append(parts, m.Name+": "+domains)
				}
				lines = append(lines, fmt.Sprintf("roles %s/%s %s in %s (%s) %q: %s", pg.Namespace, pg.Name, kind.verb, level, mode, g.Name,
					strings.Join(parts, "; ")))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}
