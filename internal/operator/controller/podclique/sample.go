package podclique

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// SamplePod is the first pod grove-operator would create for a clique of a (defaulted)
// PodCliqueSet: the PodClique of replica 0 (scaling-group replica 0 for a member) built as the
// PodCliqueSet controller builds it, and its pod 0 built as createPods builds it, with its
// claims. Admission dry-runs it so a template the apiserver refuses is refused with the
// PodCliqueSet. Only the startup waiter is left out: it is grove-operator's own init container,
// and leaving it out keeps the user's init containers at their indices in the template.
// The PodClique has a UID of its own so the pod's owner reference is well formed.
func SamplePod(pcs *corev1alpha1.PodCliqueSet, clique *corev1alpha1.PodCliqueTemplateSpec, b backend.Backend) (*corev1.Pod, error) {
	t := common.PodCliqueTarget{PCS: pcs, Replica: 0, Clique: clique}
	if g := pcs.Spec.Template.ScalingGroupOf(clique.Name); g != nil {
		t.Member = &common.ScalingGroupMember{
			Name:         apicommon.PodCliqueScalingGroupName(pcs.Name, 0, g.Name),
			MinAvailable: int(corev1alpha1.ScalingGroupMinAvailable(g)),
		}
	}
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: t.Name(), Namespace: pcs.Namespace, UID: "00000000-0000-0000-0000-000000000000"}}
	common.MutatePodClique(pclq, t)
	place, err := placementOf(pclq, pcs)
	if err != nil {
		return nil, err
	}
	pod := buildPod(pclq, place, 0, b)
	if resourceclaim.Declared(&pcs.Spec.Template) {
		claims, err := resourceclaim.ForPodClique(pcs, pclq)
		if err != nil {
			return nil, err
		}
		resourceclaim.Inject(&pod.Spec, claims.ForPod(0))
	}
	return pod, nil
}

// CanCreatePod asks the apiserver (a dry-run create) whether it would create a pod of pclq as
// it is now, before a rolling update deletes a healthy pod for it: a replacement the apiserver
// refuses would leave the gang a member short for good. The refusal comes back as the
// apiserver's error (apierrors reports what it was); nil when the pod would be created.
// reg may be nil (the backend's additions are then left out).
func CanCreatePod(ctx context.Context, c client.Client, reg *backend.Registry, pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) error {
	place, err := placementOf(pclq, pcs)
	if err != nil {
		return err
	}
	var b backend.Backend
	if reg != nil {
		b, _ = reg.Get(pclq.Spec.PodSpec.SchedulerName)
	}
	pod := buildPod(pclq, place, 0, b)
	if resourceclaim.Declared(&pcs.Spec.Template) {
		if claims, err := resourceclaim.ForPodClique(pcs, pclq); err == nil {
			resourceclaim.Inject(&pod.Spec, claims.ForPod(0))
		}
	}
	return c.Create(ctx, pod, client.DryRunAll)
}
