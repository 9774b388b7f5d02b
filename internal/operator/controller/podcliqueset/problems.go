package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// priorityClassNames are the PriorityClasses the PodCliqueSet's pods name (a clique's own
// priorityClassName wins over the template's), sorted.
func priorityClassNames(pcs *corev1alpha1.PodCliqueSet) []string {
	var names []string
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		name := c.Spec.PodSpec.PriorityClassName
		if name == "" {
			name = pcs.Spec.Template.PriorityClassName
		}
		if name != "" && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// resolvePriorityClasses finds the PriorityClasses the pods name that do not exist. The
// apiserver refuses such pods, so the PodCliqueSet says so instead of waiting silently; the
// class may still be created later (the controller watches PriorityClasses).
func (r *Reconciler) resolvePriorityClasses(ctx context.Context, st *state) error {
	for _, name := range priorityClassNames(st.pcs) {
		err := r.Client.Get(ctx, client.ObjectKey{Name: name}, &schedulingv1.PriorityClass{})
		switch {
		case apierrors.IsNotFound(err):
			st.missingPriorityClasses = append(st.missingPriorityClasses, name)
		case err != nil:
			return err
		}
	}
	return nil
}

// setPriorityClassCondition reports missing PriorityClasses. Without any PriorityClass named
// there is no condition.
func setPriorityClassCondition(conditions *[]metav1.Condition, st *state) {
	if len(priorityClassNames(st.pcs)) == 0 {
		meta.RemoveStatusCondition(conditions, apicommon.ConditionPriorityClassNotFound)
		return
	}
	c := metav1.Condition{Type: apicommon.ConditionPriorityClassNotFound, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonPriorityClassesFound, Message: "every PriorityClass the pods name exists"}
	if missing := st.missingPriorityClasses; len(missing) > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonPriorityClassNotFound
		c.Message = fmt.Sprintf("PriorityClass %s not found: the apiserver refuses the pods that name it until it is created",
			strings.Join(missing, ", "))
	}
	common.SetCondition(conditions, c, st.stored.Generation)
}

// setPodGangConflictCondition reports PodGang names held by objects the PodCliqueSet does not
// own; without a conflict, ever, there is no condition.
func setPodGangConflictCondition(conditions *[]metav1.Condition, st *state) {
	c := metav1.Condition{Type: apicommon.ConditionPodGangConflict, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonPodGangNamesOwned, Message: "every PodGang name is free or held by this PodCliqueSet"}
	if len(st.podGangConflicts) > 0 {
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonPodGangNameTaken
		c.Message = strings.Join(st.podGangConflicts, "; ") + ": delete or rename it; its pods stay gated until then"
	} else if meta.FindStatusCondition(*conditions, c.Type) == nil {
		return
	}
	common.SetCondition(conditions, c, st.stored.Generation)
}

// setPodCreateFailedCondition rolls up the PodCreateFailed condition of the PodCliques: True
// naming the first (by name) whose pods the apiserver refuses, with the apiserver's reason and
// message. Without a refusal, ever, there is no condition.
func setPodCreateFailedCondition(conditions *[]metav1.Condition, st *state, pclqs []corev1alpha1.PodClique) {
	c := metav1.Condition{Type: apicommon.ConditionPodCreateFailed, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonPodsCreated, Message: "the apiserver creates the pods of every PodClique"}
	failing := 0
	var firstName string
	var first *metav1.Condition
	for i := range pclqs {
		fc := meta.FindStatusCondition(pclqs[i].Status.Conditions, apicommon.ConditionPodCreateFailed)
		if fc == nil || fc.Status != metav1.ConditionTrue {
			continue
		}
		failing++
		if first == nil || pclqs[i].Name < firstName {
			first, firstName = fc, pclqs[i].Name
		}
	}
	if first != nil {
		c.Status, c.Reason = metav1.ConditionTrue, first.Reason
		c.Message = fmt.Sprintf("PodClique %s: %s", firstName, first.Message)
		if failing > 1 {
			c.Message = fmt.Sprintf("%s (and %d more PodCliques)", c.Message, failing-1)
		}
	} else if meta.FindStatusCondition(*conditions, c.Type) == nil {
		return
	}
	common.SetCondition(conditions, c, st.stored.Generation)
}

// setNameConflictCondition reports children whose names are held by objects Grove did not
// create, naming each and the field its name comes from; without a conflict, ever, there is no
// condition.
func setNameConflictCondition(conditions *[]metav1.Condition, st *state) {
	c := metav1.Condition{Type: apicommon.ConditionNameConflict, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonChildNamesOwned, Message: "every child name is free or held by an object Grove created for this PodCliqueSet"}
	if len(st.nameConflicts) > 0 {
		msgs := make([]string, 0, len(st.nameConflicts))
		for _, nc := range st.nameConflicts {
			msgs = append(msgs, nc.Error())
		}
		slices.Sort(msgs) // one message for one set of conflicts, whatever order the writers ran in
		c.Status, c.Reason = metav1.ConditionTrue, apicommon.ReasonChildNameConflict
		c.Message = strings.Join(slices.Compact(msgs), "; ") + ". Grove never adopts, changes or deletes it: delete it or rename the PodCliqueSet"
	} else if meta.FindStatusCondition(*conditions, c.Type) == nil {
		return
	}
	common.SetCondition(conditions, c, st.stored.Generation)
}

// recordConditionEvents emits a warning event when a problem condition starts reporting (or
// changes what it reports).
func (r *Reconciler) recordConditionEvents(st *state, status *corev1alpha1.PodCliqueSetStatus) {
	for _, ev := range []struct{ condition, action string }{
		{apicommon.ConditionPriorityClassNotFound, "CreatePods"},
		{apicommon.ConditionPodGangConflict, "CreatePodGang"},
		{apicommon.ConditionNameConflict, "CreateChild"},
		// Required constraints degraded: a level or the whole ClusterTopology went away.
		{apicommon.ConditionTopologyLevelsUnavailable, "TranslateTopology"},
	} {
		now := meta.FindStatusCondition(status.Conditions, ev.condition)
		if now == nil || now.Status != metav1.ConditionTrue {
			continue
		}
		if prev := meta.FindStatusCondition(st.stored.Status.Conditions, now.Type); prev != nil && prev.Status == now.Status && prev.Message == now.Message {
			continue
		}
		r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, now.Reason, ev.action, "%s", now.Message)
	}
}

// podCliqueSetsOfPriorityClass maps a PriorityClass to the PodCliqueSets whose pods name it.
func (r *Reconciler) podCliqueSetsOfPriorityClass(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &corev1alpha1.PodCliqueSetList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{IndexPriorityClassName: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing PodCliqueSets of a PriorityClass", "priorityClass", obj.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
