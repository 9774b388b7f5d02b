package kubectlgrove

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// renderSlices writes, for every sliced PodGroup whose slice key is a level of ct, which slice
// runs in which domain of the level and how many of its pods are bound, e.g.
// `slices ns/serve-0-w over rack (required): slice 0 (16 pods): r0 16/16; slice 1 (16 pods): r1 16/16`.
// A slice spread over several domains lists each with its pods (only a preferred slicing that
// did not fit does that).
func renderSlices(w io.Writer, ct *corev1alpha1.ClusterTopology, nodes []corev1.Node, pods []corev1.Pod, gangs []schedv1alpha1.PodGang) {
	levelOf, nodeLabels := levelsOf(ct), labelsByNode(nodes)
	type groupRef struct{ namespace, name string }
	byGroup := map[groupRef][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil {
			continue
		}
		ref := groupRef{p.Namespace, p.Labels[common.LabelPodClique]}
		byGroup[ref] = append(byGroup[ref], p)
	}
	var lines []string
	for gi := range gangs {
		g := &gangs[gi]
		for _, pg := range g.Spec.PodGroups {
			if pg.Slices == nil {
				continue
			}
			level, ok := levelOf[pg.Slices.TopologyKey]
			if !ok {
				continue
			}
			// domains[slice][value] counts the slice's bound pods per domain.
			domains := make([]map[string]int, len(pg.Slices.Sizes))
			for _, p := range byGroup[groupRef{g.Namespace, pg.Name}] {
				i, err := strconv.Atoi(p.Labels[common.LabelSliceIndex])
				labels, bound := nodeLabels[p.Spec.NodeName]
				if err != nil || i < 0 || i >= len(domains) || !bound {
					continue
				}
				if domains[i] == nil {
					domains[i] = map[string]int{}
				}
				domains[i][orDash(labels[pg.Slices.TopologyKey])]++
			}
			mode := "preferred"
			if pg.Slices.Required {
				mode = "required"
			}
			parts := make([]string, len(pg.Slices.Sizes))
			for i, size := range pg.Slices.Sizes {
				parts[i] = fmt.Sprintf("slice %d (%d pods): %s", i, size, sliceDomains(domains[i], size))
			}
			lines = append(lines, fmt.Sprintf("slices %s/%s over %s (%s): %s", g.Namespace, pg.Name, level, mode, strings.Join(parts, "; ")))
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

// sliceDomains is `r0 16/16` for a slice whole in one domain, `r0 10, r1 6 (16/16)` for one
// across domains, `not placed (0/16)` for one without bound pods.
func sliceDomains(counts map[string]int, size int32) string {
	if len(counts) == 0 {
		return fmt.Sprintf("not placed (0/%d)", size)
	}
	values := make([]string, 0, len(counts))
	bound := 0
	for v, n := range counts {
		values = append(values, v)
		bound += n
	}
	sort.Strings(values)
	if len(values) == 1 {
		return fmt.Sprintf("%s %d/%d", values[0], bound, size)
	}
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = fmt.Sprintf("%s %d", v, counts[v])
	}
	return fmt.Sprintf("%s (%d/%d)", strings.Join(parts, ", "), bound, size)
}
