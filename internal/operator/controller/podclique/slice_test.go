package podclique

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/operator/backend/kube"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestBuildPodSlice: a pod of a sliced clique carries its slice, decided by its pod index, in a
// label and in variables; pods of other cliques carry none.
func TestBuildPodSlice(t *testing.T) {
	pcs := testPodCliqueSet()
	pcs.Spec.Template.Cliques[2].TopologyConstraint = &corev1alpha1.TopologyConstraint{
		Slice: &corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: ptr.To[int32](16)}}
	decode := testPodClique("p-0-w-1-decode", map[string]string{apicommon.LabelPodCliqueSetReplicaIndex: "0", apicommon.LabelPodGang: "p-0",
		apicommon.LabelPodCliqueScalingGroup: "p-0-w", apicommon.LabelPodCliqueScalingGroupReplicaIndex: "1"})
	decode.Spec.Replicas = 33
	place, err := placementOf(decode, pcs)
	require.NoError(t, err)
	for _, tc := range []struct {
		podIndex  int
		wantSlice string
	}{{0, "0"}, {10, "0"}, {11, "1"}, {21, "1"}, {22, "2"}, {32, "2"}} {
		pod := buildPod(decode, place, tc.podIndex, kube.New())
		assert.Equal(t, tc.wantSlice, pod.Labels[apicommon.LabelSliceIndex], "pod %d", tc.podIndex)
		env := envOf(pod.Spec.Containers[0])
		assert.Equal(t, tc.wantSlice, env[apicommon.EnvSliceIndex], "pod %d", tc.podIndex)
		assert.Equal(t, "11", env[apicommon.EnvSliceSize], "33 pods of at most 16 are 11+11+11")
		assert.Equal(t, "3", env[apicommon.EnvSliceCount])
	}
	surge := buildPod(decode, place, 33, kube.New())
	assert.NotContains(t, surge.Labels, apicommon.LabelSliceIndex, "a pod beyond the replicas has no slice")
	assert.NotContains(t, envOf(surge.Spec.Containers[0]), apicommon.EnvSliceIndex)

	prefill := testPodClique("p-0-w-1-prefill", map[string]string{apicommon.LabelPodCliqueSetReplicaIndex: "0", apicommon.LabelPodGang: "p-0",
		apicommon.LabelPodCliqueScalingGroup: "p-0-w", apicommon.LabelPodCliqueScalingGroupReplicaIndex: "1"})
	prefill.Spec.Replicas = 4
	place, err = placementOf(prefill, pcs)
	require.NoError(t, err)
	pod := buildPod(prefill, place, 0, kube.New())
	assert.NotContains(t, pod.Labels, apicommon.LabelSliceIndex, "an unsliced clique's pods have no slice")
	assert.NotContains(t, envOf(pod.Spec.Containers[0]), apicommon.EnvSliceIndex)
}
