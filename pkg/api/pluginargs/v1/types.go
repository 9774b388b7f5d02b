package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true

// GangArgs configures the Gang plugin.
type GangArgs struct {
	metav1.TypeMeta `json:",inline"`
	// PermitWaitTimeout is how long assumed members wait for the rest of the gang. Default 60s.
	PermitWaitTimeout *metav1.Duration `json:"permitWaitTimeout,omitempty"`
	// MaxBackoff caps the back-off of a gang that failed to place. Default 30s.
	MaxBackoff *metav1.Duration `json:"maxBackoff,omitempty"`
	// ReservationDelay is how long a gang the cluster could hold stays unplaceable for lack of
	// free room before its nodes are reserved against gangs of the same or a lower priority.
	// 0s turns reservations off. Default 30s.
	ReservationDelay *metav1.Duration `json:"reservationDelay,omitempty"`
}

// +kubebuilder:object:root=true

// TopologyArgs configures the Topology plugin.
type TopologyArgs struct {
	metav1.TypeMeta `json:",inline"`
	// PreferredDomainWeight weighs the preferred-domain score against the pack score. Default 70.
	PreferredDomainWeight *int32 `json:"preferredDomainWeight,omitempty"`
}

// +kubebuilder:object:root=true

// DRAArgs configures the DRA plugin.
type DRAArgs struct {
	metav1.TypeMeta `json:",inline"`
	// ReservedForLimit is the most pods one ResourceClaim may be reserved for. Default 256.
	ReservedForLimit *int32 `json:"reservedForLimit,omitempty"`
}
