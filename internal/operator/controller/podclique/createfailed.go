package podclique

import (
	"context"
	"errors"
	"fmt"

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

// Pods the apiserver refuses.
//
// A PodClique whose pods the apiserver refuses (most often: the ServiceAccount they name does
// not exist yet, because NVIDIA Dynamo creates it next to the PodCliqueSet) has acted on its
// spec: the refusal is reported as the PodCreateFailed condition (the apiserver's reason and
// message) and observedGeneration advances. The creates are retried with the controller's
// backoff, and at once when a ServiceAccount appears in the namespace.

// errPodCreateRefused is a pod create the apiserver refused (as opposed to one that could not
// be sent).
type errPodCreateRefused struct{ err error }

func (e errPodCreateRefused) Error() string { return e.err.Error() }
func (e errPodCreateRefused) Unwrap() error { return e.err }

// refusal marks err as a refusal when the apiserver answered it with one.
func refusal(err error) error {
	if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
		return errPodCreateRefused{err}
	}
	return err
}

// createOutcome is what the last pod creations of a clique came to: nil when no create was
// tried or it failed for a reason other than a refusal (nothing to report, or a transient
// error), else a refusal or a success.
type createOutcome struct {
	refused *metav1.Status
}

// outcomeOf sorts the result of a sync. ok is false when it says nothing about pod creation.
func outcomeOf(syncErr error) (createOutcome, bool) {
	if syncErr == nil {
		return createOutcome{}, true
	}
	var r errPodCreateRefused
	if !errors.As(syncErr, &r) {
		return createOutcome{}, false
	}
	var status apierrors.APIStatus
	if errors.As(r.err, &status) {
		st := status.Status()
		return createOutcome{refused: &st}, true
	}
	return createOutcome{refused: &metav1.Status{Reason: metav1.StatusReasonUnknown, Message: r.err.Error()}}, true
}

// setPodCreateFailedCondition reports the outcome on the clique's conditions.
func setPodCreateFailedCondition(conditions *[]metav1.Condition, o createOutcome, generation int64) {
	c := metav1.Condition{Type: apicommon.ConditionPodCreateFailed, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonPodsCreated, Message: "the apiserver creates the clique's pods"}
	if o.refused != nil {
		c.Status, c.Reason = metav1.ConditionTrue, string(o.refused.Reason)
		if c.Reason == "" {
			c.Reason = string(metav1.StatusReasonUnknown)
		}
		c.Message = fmt.Sprintf("the apiserver refuses the clique's pods (retried with backoff, and when a ServiceAccount is created): %s", o.refused.Message)
	} else if meta.FindStatusCondition(*conditions, c.Type) == nil {
		return
	}
	common.SetCondition(conditions, c, generation)
}

// cliquesWaitingForPods maps a new ServiceAccount to the PodCliques of its namespace whose pods
// the apiserver refused: the ServiceAccount may be the one they name.
func (r *Reconciler) cliquesWaitingForPods(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &corev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing PodCliques", "namespace", obj.GetNamespace())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		pclq := &list.Items[i]
		sa := pclq.Spec.PodSpec.ServiceAccountName
		if sa == "" {
			sa = "default"
		}
		if sa == obj.GetName() && meta.IsStatusConditionTrue(pclq.Status.Conditions, apicommon.ConditionPodCreateFailed) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})
		}
	}
	return reqs
}
