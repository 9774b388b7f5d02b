package v1alpha1

// ReuseReservationPolicy says how strictly a PodGang whose pods an update replaces keeps the
// placement its previous pods had (the domains of its pack keys, and their nodes where the new
// pods fit).
// +kubebuilder:validation:Enum=Preferred;Required
type ReuseReservationPolicy string

const (
	// ReuseReservationPreferred: the replacing pods go back to the previous domain (and nodes)
	// when there is room there, and elsewhere when there is not. The default.
	ReuseReservationPreferred ReuseReservationPolicy = "Preferred"
	// ReuseReservationRequired: the replacing pods wait for room in the previous domain rather
	// than move; the PodGang's Scheduled condition says so (reason ReservationReuseRequired).
	ReuseReservationRequired ReuseReservationPolicy = "Required"
)

// ReuseReservationOf is the PodCliqueSet's reuse policy, Preferred when unset.
func ReuseReservationOf(pcs *PodCliqueSet) ReuseReservationPolicy {
	if s := pcs.Spec.UpdateStrategy; s != nil && s.ReuseReservation != "" {
		return s.ReuseReservation
	}
	return ReuseReservationPreferred
}
