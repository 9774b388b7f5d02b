package gangcache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/placement"
)

// TestScopedSpreadCountsItsPodGroupsOnly: a base PodGang holds a standalone clique "fe" and
// scaling-group replica w-0 (an entry scoped to PodGroup "w-0"); the scaled PodGang of w-1 is
// a member of its own. For w-1, w-0 holds only the node of its PodGroup, not fe's; for w-0,
// w-1 holds its whole gang's nodes.
func TestScopedSpreadCountsItsPodGroupsOnly(t *testing.T) {
	c := New()
	entry := func(member string, groups ...string) v1alpha1.ReplicaSpreadConstraint {
		return v1alpha1.ReplicaSpreadConstraint{Group: "p-0-w", Member: member, TopologyKey: "rack", Required: true, PodGroupNames: groups}
	}
	c.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 1}, {Name: "w-0", MinReplicas: 1}},
			ReplicaSpreadConstraints: []v1alpha1.ReplicaSpreadConstraint{entry("w-0", "w-0")}}})
	c.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-w-1", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w-1", MinReplicas: 1}},
			ReplicaSpreadConstraints: []v1alpha1.ReplicaSpreadConstraint{entry("w-1")}}})
	pod := func(gang, group, uid, node string) *v1.Pod {
		p := memberPod(uid, group, boundTo(node))
		p.Labels[common.LabelPodGang] = gang
		return p
	}
	c.UpsertPod(pod("p-0", "fe", "f", "n1"))
	c.UpsertPod(pod("p-0", "w-0", "a", "n2"))
	c.UpsertPod(pod("p-0-w-1", "w-1", "b", "n3"))

	got := c.Spreads("ns/p-0-w-1")
	require.Len(t, got, 1)
	assert.Empty(t, got[0].PodGroups, "a scaled gang's entry is the whole gang")
	assert.Equal(t, []placement.SpreadMember{{Gang: "p-0", Nodes: []string{"n2"}}}, got[0].Others, "w-0's PodGroup only, not fe")

	got = c.Spreads("ns/p-0")
	require.Len(t, got, 1)
	assert.Equal(t, []string{"w-0"}, got[0].PodGroups)
	assert.Equal(t, []placement.SpreadMember{{Gang: "p-0-w-1", Nodes: []string{"n3"}}}, got[0].Others)
}
