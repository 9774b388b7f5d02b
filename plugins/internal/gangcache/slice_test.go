package gangcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// Members of different slices must not share a scheduling signature: the scheduler's batching
// and the gang plugin's member plans reuse one member's PreFilter results (its slice's domain)
// for every member alike to it.
func TestSignFragmentsTellSlicesApart(t *testing.T) {
	pod := func(slice string) *v1.Pod {
		labels := map[string]string{common.LabelPodGang: "g", common.LabelPodClique: "w"}
		if slice != "" {
			labels[common.LabelSliceIndex] = slice
		}
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Labels: labels}}
	}
	assert.Equal(t, SignFragments(pod("0")), SignFragments(pod("0")), "one slice, one signature")
	assert.NotEqual(t, SignFragments(pod("0")), SignFragments(pod("1")))
	assert.Equal(t, "ns/g/w", SignFragments(pod(""))[0].Value, "unsliced members keep their signature")
}
