package podclique

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// sliceOf is the slice constraint of the template clique a PodClique was made from; nil when
// the clique is not sliced. A PodClique is matched by the name its template clique gives it.
func sliceOf(pclq *corev1alpha1.PodClique, pcs *corev1alpha1.PodCliqueSet, pcsReplica int, pcsg string, member bool) *corev1alpha1.SliceConstraint {
	groupReplica, _ := common.IntLabel(pclq, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil || c.TopologyConstraint == nil || c.TopologyConstraint.Slice == nil {
			continue
		}
		name := apicommon.StandalonePodCliqueName(pcs.Name, pcsReplica, c.Name)
		if member {
			name = apicommon.ScalingGroupPodCliqueName(pcsg, groupReplica, c.Name)
		}
		if name == pclq.Name {
			return c.TopologyConstraint.Slice
		}
	}
	return nil
}

// sliceEnv labels the pod with its slice and returns the slice variables; nil when the clique
// is not sliced or the pod index lies beyond its replicas (a surge pod of an update: it gets
// no slice, so the scheduler keeps it only in the clique's pack domain). Slices follow the
// PodClique's replicas when the pod is made: a pod keeps its slice until it is replaced.
func sliceEnv(pclq *corev1alpha1.PodClique, place podPlacement, podIndex int, labels map[string]string) []corev1.EnvVar {
	sizes := place.slice.SliceSizes(pclq.Spec.Replicas)
	index, ok := corev1alpha1.SliceOf(sizes, podIndex)
	if !ok {
		return nil
	}
	labels[apicommon.LabelSliceIndex] = strconv.Itoa(index)
	return []corev1.EnvVar{
		{Name: apicommon.EnvSliceIndex, Value: strconv.Itoa(index)},
		{Name: apicommon.EnvSliceSize, Value: strconv.Itoa(int(sizes[index]))},
		{Name: apicommon.EnvSliceCount, Value: strconv.Itoa(len(sizes))},
	}
}
