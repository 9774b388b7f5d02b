package podcliqueset

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

// adoptForeignHashes takes over a PodCliqueSet whose objects another Grove operator (upstream
// Grove) wrote (common.TakeOverPending). Upstream's releases hash pod templates differently
// (JSON, dump.ForHash, with and without sorting list fields), so its pods carry template hashes
// this operator never computes and would all be replaced by a rolling update. As the status says
// the current generation was reconciled and no update is under way, the live pods that carry
// their PodClique's hash were built from the current template: they, and then the PodClique, are
// relabelled with this operator's hashes. Labels change in place; no pod is deleted or restarted.
// Pods of an older template (an OnDelete update upstream left pending) keep their hash and are
// updated as usual. The stored status then counts as this operator's: no update starts for the
// relabelling.
func (r *Reconciler) adoptForeignHashes(ctx context.Context, st *state) error {
	if !common.TakeOverPending(st.stored, st.pcs) {
		return nil
	}
	st.takenOver = true
	generation := st.templateHashes().Generation()
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return err
	}
	pods, err := st.children.pods(ctx)
	if err != nil {
		return err
	}
	// Relabelling changes both kinds: the components after this read them again.
	defer st.children.wrote(childPodCliques)
	defer st.children.wrote(childPods)
	for i := range pclqs {
		pclq := &pclqs[i]
		clique := cliqueOf(st.pcs, pclq)
		if clique == nil || common.IsTerminating(pclq) {
			continue
		}
		want := hash.PodTemplate(clique, st.pcs.Spec.Template.PriorityClassName)
		have := pclq.Labels[apicommon.LabelPodTemplateHash]
		if have == want || have == "" {
			continue
		}
		relabelled := 0
		for j := range pods {
			p := &pods[j]
			if p.Labels[apicommon.LabelPodClique] != pclq.Name || p.Labels[apicommon.LabelPodTemplateHash] != have || !common.IsActive(p) {
				continue
			}
			if err := relabel(ctx, r.Client, p.DeepCopy(), want, generation); err != nil { // p is the informer's
				return fmt.Errorf("relabelling pod %s: %w", p.Name, err)
			}
			relabelled++
		}
		// The PodClique last: until then its pods and it still agree on one hash.
		if err := relabel(ctx, r.Client, pclq.DeepCopy(), want, generation); err != nil { // pclq is the informer's
			return fmt.Errorf("relabelling PodClique %s: %w", pclq.Name, err)
		}
		log.FromContext(ctx).Info("adopted a PodClique written with another operator's template hash",
			"podClique", pclq.Name, "hash", have, "adoptedAs", want, "pods", relabelled)
	}
	return nil
}

func relabel(ctx context.Context, c client.Client, obj client.Object, templateHash, generation string) error {
	before := obj.DeepCopyObject().(client.Object)
	labels := obj.GetLabels()
	labels[apicommon.LabelPodTemplateHash] = templateHash
	labels[apicommon.LabelPodCliqueSetGenerationHash] = generation
	obj.SetLabels(labels)
	return c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// cliqueOf is the clique template a PodClique of the PodCliqueSet was made from (nil when
// none is: a clique removed from the spec).
func cliqueOf(pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) *corev1alpha1.PodCliqueTemplateSpec {
	replica, ok := common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex)
	if !ok {
		return nil
	}
	group, member := pclq.Labels[apicommon.LabelPodCliqueScalingGroup]
	groupReplica, _ := common.IntLabel(pclq, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		name := apicommon.StandalonePodCliqueName(pcs.Name, replica, c.Name)
		if member {
			name = apicommon.ScalingGroupPodCliqueName(group, groupReplica, c.Name)
		}
		if name == pclq.Name {
			return c
		}
	}
	return nil
}
