package podcliqueset

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// reuseReservation points a placed PodGang at its own earlier placement while an update of its
// PodCliqueSet is under way (upstream Grove's meaning of spec.reuseReservationRef: the newer
// version of a PodGang reuses the reservation of the previous one). The PodGang keeps its name
// across the update, so the reference names itself, and grove-scheduler reads the placement
// from its status.lastPlacement, which outlives the replaced pods. The PodCliqueSet's
// updateStrategy.reuseReservation travels as an annotation, the PodGang API being upstream's.
//
// The reference only matters to pods being placed, and those reach the PodGang through a change
// of its pod list; so it is decided only in a write the PodGang gets anyway. A PodGang whose spec
// is otherwise unchanged keeps whatever reference it has: setting it on every placed PodGang
// when an update starts, and clearing it when the update ends, cost two extra PodGang writes per
// gang (each answered by grove-scheduler's status rewrites), for gangs whose pods were not being
// placed. Outside an update the reference goes with the next change of the pod list, so a gang
// placed again for another reason (its pods recreated after a failure) is not held to where it
// was.
func reuseReservation(pcs *corev1alpha1.PodCliqueSet, underWay bool, spec *schedv1alpha1.PodGangSpec, annotations map[string]string, existing *schedv1alpha1.PodGang) {
	spec.ReuseReservationRef = nil
	if existing == nil {
		return
	}
	spec.ReuseReservationRef = existing.Spec.ReuseReservationRef
	if equality.Semantic.DeepEqual(*spec, existing.Spec) {
		return
	}
	spec.ReuseReservationRef = nil
	if existing.Status.LastPlacement == nil || !underWay {
		return
	}
	spec.ReuseReservationRef = &schedv1alpha1.NamespacedName{Namespace: existing.Namespace, Name: existing.Name}
	annotations[apicommon.AnnotationReuseReservation] = string(corev1alpha1.ReuseReservationOf(pcs))
}

// updateUnderWay reports whether the operator is replacing the PodCliqueSet's pods for an
// update, or is about to: the template already differs from the one the status last reported,
// and the pods the update deletes first (Coherent deletes a whole replica in one pass) may be
// replaced before the status shows the update's start.
func updateUnderWay(pcs *corev1alpha1.PodCliqueSet) bool {
	if updating(pcs) {
		return true
	}
	last := pcs.Status.CurrentGenerationHash
	return last != nil && corev1alpha1.IsRollingStrategy(corev1alpha1.StrategyOf(pcs)) && *last != hash.PodCliqueSetGeneration(&pcs.Spec.Template)
}

// updating reports whether the PodCliqueSet's status shows an update it drives under way.
func updating(pcs *corev1alpha1.PodCliqueSet) bool {
	up := pcs.Status.UpdateProgress
	return up != nil && up.UpdateEndedAt == nil && corev1alpha1.IsRollingStrategy(corev1alpha1.StrategyOf(pcs))
}

// updateStartedOrEnded passes PodCliqueSet status changes that start or end an update: the
// PodGangs' references follow them, and the gang writer sees no other status change.
var updateStartedOrEnded = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1alpha1.PodCliqueSet)
		n, ok2 := e.ObjectNew.(*corev1alpha1.PodCliqueSet)
		return ok1 && ok2 && updating(o) != updating(n)
	},
}
