package podcliqueset

import (
	"context"
	"errors"

	"time"

	corev1 "k8s.io/api/core/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
)

// replaceCoherently deletes, in one pass, every outdated pod of every role of the replicas a
// Coherent update is moving (status.updateProgress.currentlyUpdating): the PodCliqueSet
// controller does it rather than each PodClique and scaling group on its own, so that no role
// of a replica comes back on the new template while another still serves the old one.
func (r *Reconciler) replaceCoherently(ctx context.Context, st *state, status *corev1alpha1.PodCliqueSetStatus,
	pclqs []corev1alpha1.PodClique, pods []corev1.Pod) error {
	if corev1alpha1.StrategyOf(st.pcs) != corev1alpha1.CoherentStrategy || status.UpdateProgress == nil || status.UpdateProgress.UpdateEndedAt != nil {
		return nil
	}
	// Only replicas the stored status already names: each PodClique holds back its new pods
	// while its replica, as the cached PodCliqueSet names it, still runs old ones. Deleting
	// before that status is written let a role come back on the new template next to another
	// role's old pods still being deleted. A replica picked in this pass goes in the next.
	updating := map[int]bool{}
	for _, u := range status.UpdateProgress.CurrentlyUpdating {
		if !common.IsReplicaBeingUpdated(st.stored, int(u.ReplicaIndex)) {
			st.requeueAfter(200 * time.Millisecond)
			continue
		}
		updating[int(u.ReplicaIndex)] = true
	}
	// What each PodClique of the replicas should run, from the template itself: a scaling
	// group relabels its members on its own schedule.
	want := map[string]string{}
	t := &st.pcs.Spec.Template
	for i := range updating {
		for _, c := range t.StandaloneCliques() {
			want[apicommon.StandalonePodCliqueName(st.pcs.Name, i, c.Name)] = st.templateHashes().Clique(c.Name)
		}
	}
	for i := range pclqs {
		p := &pclqs[i]
		replica, ok := common.IntLabel(p, apicommon.LabelPodCliqueSetReplicaIndex)
		j, member := common.IntLabel(p, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		if !ok || !member || !updating[replica] {
			continue
		}
		for _, c := range t.Cliques {
			if c != nil && apicommon.ScalingGroupPodCliqueName(p.Labels[apicommon.LabelPodCliqueScalingGroup], j, c.Name) == p.Name {
				want[p.Name] = st.templateHashes().Clique(c.Name)
			}
		}
	}
	// Only once every PodClique of the replicas builds pods from the new template: a pod
	// recreated from an old one would bring the old version back next to the new.
	for i := range pclqs {
		p := &pclqs[i]
		if h, ok := want[p.Name]; ok && !common.IsTerminating(p) && p.Labels[apicommon.LabelPodTemplateHash] != h {
			st.requeueAfter(time.Second)
			return nil
		}
	}
	var outdated []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		h, known := want[p.Labels[apicommon.LabelPodClique]]
		if known && common.IsActive(p) && p.Labels[apicommon.LabelPodTemplateHash] != h {
			outdated = append(outdated, p)
		}
	}
	if len(outdated) == 0 {
		return nil
	}
	st.children.wrote(childPods)
	errs := make([]error, len(outdated))
	_, _ = common.SlowStart(ctx, len(outdated), func(ctx context.Context, i int) error {
		errs[i] = common.Delete(ctx, r.Client, outdated[i])
		if errs[i] == nil {
			grovemetrics.PodsDeleted.WithLabelValues(grovemetrics.DeleteUpdate).Inc()
		}
		return nil
	})
	return errors.Join(errs...)
}
