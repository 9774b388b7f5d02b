package common

// AnnotationReuseReservation on a PodGang carries its PodCliqueSet's
// spec.updateStrategy.reuseReservation when it is Required: grove-scheduler then keeps the
// gang in the domains of the PodGang its spec.reuseReservationRef names, waiting there rather
// than moving. The PodGang API is upstream Grove's, so the policy travels as an annotation.
const AnnotationReuseReservation = "grove.io/reuse-reservation"

// ReasonReservationReuseRequired: the gang waits for room in the domain it had before its
// pods were replaced, because its PodCliqueSet's updateStrategy.reuseReservation is Required.
const ReasonReservationReuseRequired = "ReservationReuseRequired"
