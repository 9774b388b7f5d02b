package pluginargs

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Plugin names. A plugin's args kind is its name + "Args".
const (
	GangPluginName     = "Gang"
	TopologyPluginName = "Topology"
	DRAPluginName      = "DRA"
	// GangPreemptionPluginName is the PostFilter that replaces DefaultPreemption: it preempts
	// whole gangs only. It takes no args.
	GangPreemptionPluginName = "GangPreemption"
)

// +kubebuilder:object:root=true

// GangArgs configures the Gang plugin.
type GangArgs struct {
	metav1.TypeMeta
	// PermitWaitTimeout is how long assumed members wait at the gang barrier for the rest of
	// the gang. A PodGang may override it with the grove.io/permit-wait-timeout annotation.
	PermitWaitTimeout metav1.Duration
	// MaxBackoff caps the back-off of a gang that failed to place.
	MaxBackoff metav1.Duration
	// ReservationDelay is how long a gang the cluster could hold stays unplaceable for lack of
	// free room before the nodes it needs are reserved for it: gangs of the same or a lower
	// priority may then not use them, so freed room adds up until it fits. 0 turns
	// reservations off.
	ReservationDelay metav1.Duration
}

// +kubebuilder:object:root=true

// TopologyArgs configures the Topology plugin.
type TopologyArgs struct {
	metav1.TypeMeta
	// PreferredDomainWeight scales the score for nodes inside the gang's preferred domain
	// against the pack score (both 0-100).
	PreferredDomainWeight int32
}

// +kubebuilder:object:root=true

// DRAArgs configures the DRA plugin.
type DRAArgs struct {
	metav1.TypeMeta
	// ReservedForLimit is the most pods one ResourceClaim may list in status.reservedFor.
	ReservedForLimit int32
}
