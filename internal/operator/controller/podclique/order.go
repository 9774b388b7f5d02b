package podclique

import (
	"sort"

	corev1 "k8s.io/api/core/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// sortForDeletion orders pods so that the ones a scale-in loses least by come first:
// unscheduled before scheduled, not ready before ready, outdated (not built from templateHash)
// before updated, newest before oldest, then the highest pod index (so low indices, and their
// hostnames, stay stable).
func sortForDeletion(pods []*corev1.Pod, templateHash string) {
	rank := func(p *corev1.Pod) int {
		r := 0
		if common.IsScheduled(p) {
			r += 4
		}
		if common.IsReady(p) {
			r += 2
		}
		if p.Labels[apicommon.LabelPodTemplateHash] == templateHash {
			r++
		}
		return r
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra < rb
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		ia, _ := common.IntLabel(a, apicommon.LabelPodCliquePodIndex)
		ib, _ := common.IntLabel(b, apicommon.LabelPodCliquePodIndex)
		if ia != ib {
			return ia > ib
		}
		return a.Name < b.Name
	})
}

// lowestFreeIndices returns the n lowest pod indices not in used.
func lowestFreeIndices(used map[int]bool, n int) []int {
	out := make([]int, 0, n)
	for i := 0; len(out) < n; i++ {
		if !used[i] {
			out = append(out, i)
		}
	}
	return out
}
