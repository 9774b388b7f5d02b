package podcliqueset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

// rolloutComponent is one standalone clique or scaling group of one PodCliqueSet replica, as an
// update sees it.
type rolloutComponent struct {
	name     string
	deadline *metav1.Duration
	// pending: some pod is outdated, or fewer pods of the current template are ready than desired.
	pending bool
	// lastProgress is when a pod of the current template was last created or became ready.
	lastProgress time.Time
}

// setUpdateInProgressCondition reports upstream Grove's UpdateInProgress condition: False
// (NoActiveUpdate) without a running update, True (Progressing) during one, Unknown
// (ProgressDeadlineExceeded) once a component being updated with a rollingUpdate.progressDeadline
// had no pod of its new template created or becoming ready for that long. The clock is read
// from the pods (creation and Ready transition times) and the update's start, so it survives
// operator restarts. Nothing is torn down on a breach: the condition is the signal.
func setUpdateInProgressCondition(status *corev1alpha1.PodCliqueSetStatus, st *state, pods []corev1.Pod, now time.Time) {
	progress := status.UpdateProgress
	if progress == nil || progress.UpdateEndedAt != nil || !corev1alpha1.IsRollingStrategy(corev1alpha1.StrategyOf(st.pcs)) {
		common.SetCondition(&status.Conditions, metav1.Condition{Type: apicommon.ConditionUpdateInProgress, Status: metav1.ConditionFalse,
			Reason: apicommon.ReasonNoActiveUpdate, Message: "no update is under way"}, st.stored.Generation)
		return
	}
	var stuck []string
	for _, u := range progress.CurrentlyUpdating {
		for _, c := range rolloutComponents(st.pcs, int(u.ReplicaIndex), pods) {
			if !c.pending || c.deadline == nil {
				continue
			}
			since := c.lastProgress
			if since.Before(u.UpdateStartedAt.Time) {
				since = u.UpdateStartedAt.Time
			}
			if left := since.Add(c.deadline.Duration).Sub(now); left > 0 {
				st.requeueAfter(left)
				continue
			}
			stuck = append(stuck, fmt.Sprintf("%s (no progress since %s, progressDeadline %s)", c.name, since.UTC().Format(time.RFC3339), c.deadline.Duration))
		}
	}
	c := metav1.Condition{Type: apicommon.ConditionUpdateInProgress, Status: metav1.ConditionTrue, Reason: apicommon.ReasonProgressing,
		Message: fmt.Sprintf("updating replicas %s", replicaList(progress.CurrentlyUpdating))}
	if len(stuck) > 0 {
		sort.Strings(stuck)
		c.Status, c.Reason = metav1.ConditionUnknown, apicommon.ReasonProgressDeadlineExceeded
		c.Message = "the update made no progress within its deadline: " + strings.Join(stuck, "; ") + "; nothing was rolled back or deleted"
	}
	common.SetCondition(&status.Conditions, c, st.stored.Generation)
}

func replicaList(u []corev1alpha1.PodCliqueSetReplicaUpdateProgress) string {
	parts := make([]string, len(u))
	for i := range u {
		parts[i] = fmt.Sprint(u[i].ReplicaIndex)
	}
	return strings.Join(parts, ", ")
}

// rolloutComponents reads the standalone cliques and scaling groups of replica i from its pods.
func rolloutComponents(pcs *corev1alpha1.PodCliqueSet, i int, pods []corev1.Pod) []rolloutComponent {
	t := &pcs.Spec.Template
	byClique := map[string][]*corev1.Pod{}
	for j := range pods {
		p := &pods[j]
		if common.IsActive(p) {
			byClique[p.Labels[apicommon.LabelPodClique]] = append(byClique[p.Labels[apicommon.LabelPodClique]], p)
		}
	}
	observe := func(c *rolloutComponent, pclqs []string, tmpl *corev1alpha1.PodCliqueTemplateSpec, desired int32) {
		current := hash.PodTemplate(tmpl, t.PriorityClassName)
		var ready int32
		for _, name := range pclqs {
			for _, p := range byClique[name] {
				if p.Labels[apicommon.LabelPodTemplateHash] != current {
					c.pending = true
					continue
				}
				if p.CreationTimestamp.After(c.lastProgress) {
					c.lastProgress = p.CreationTimestamp.Time
				}
				if common.IsReady(p) {
					ready++
					if at := readySince(p); at.After(c.lastProgress) {
						c.lastProgress = at
					}
				}
			}
		}
		c.pending = c.pending || ready < desired
	}
	var out []rolloutComponent
	for _, c := range t.StandaloneCliques() {
		rc := rolloutComponent{name: "clique " + c.Name}
		if c.RollingUpdate != nil {
			rc.deadline = c.RollingUpdate.ProgressDeadline
		}
		observe(&rc, []string{apicommon.StandalonePodCliqueName(pcs.Name, i, c.Name)}, c, c.Spec.Replicas)
		out = append(out, rc)
	}
	for gi := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[gi]
		rc := rolloutComponent{name: "scaling group " + g.Name}
		if g.RollingUpdate != nil {
			rc.deadline = g.RollingUpdate.ProgressDeadline
		}
		pcsg := apicommon.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
		for _, name := range g.CliqueNames {
			c := t.Clique(name)
			if c == nil {
				continue
			}
			var pclqs []string
			for j := range int(corev1alpha1.ScalingGroupReplicas(g)) {
				pclqs = append(pclqs, apicommon.ScalingGroupPodCliqueName(pcsg, j, name))
			}
			// The group's live replicas may differ from the template's (/scale); the template's
			// count is what an update is measured against until the group reports otherwise.
			observe(&rc, pclqs, c, c.Spec.Replicas*corev1alpha1.ScalingGroupReplicas(g))
		}
		out = append(out, rc)
	}
	return out
}

// readySince is when the pod last became ready.
func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}
