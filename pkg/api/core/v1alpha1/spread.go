package v1alpha1

// SpreadAction says what happens when a spread constraint cannot be met.
// +kubebuilder:validation:Enum=DoNotSchedule;ScheduleAnyway
type SpreadAction string

// Spread actions. The names are Kubernetes' pod topology spread ones, so that users (and
// Dynamo, which passes replicaSpreadConstraints through) need not learn new words.
const (
	// SpreadDoNotSchedule makes the spread required: a replica waits rather than share a domain.
	SpreadDoNotSchedule SpreadAction = "DoNotSchedule"
	// SpreadScheduleAnyway makes the spread preferred: a replica shares a domain when it must.
	SpreadScheduleAnyway SpreadAction = "ScheduleAnyway"
)

// ReplicaSpreadConstraint spreads the replicas of the constrained object over the domains of
// one level of the ClusterTopology, while each replica's own pack constraint still holds. On
// the PodCliqueSet-level topologyConstraint it spreads the PodCliqueSet's replicas; on a
// scaling group's it spreads that group's replicas within each PodCliqueSet replica (e.g.
// multi-node decode workers, each packed into one rack, in different racks).
//
// Required (DoNotSchedule): no two replicas share a domain of the level; a replica that finds
// no domain of its own waits. Preferred (ScheduleAnyway): replicas go to the domains holding
// fewest replicas, keeping the difference between the fullest and the emptiest domain within
// maxSkew where they can, and share a domain when they must.
// +kubebuilder:validation:XValidation:rule="!has(self.maxSkew) || (has(self.whenUnsatisfiable) && self.whenUnsatisfiable == 'ScheduleAnyway')",message="maxSkew applies to ScheduleAnyway only: DoNotSchedule allows one replica per domain",fieldPath=".maxSkew",reason=FieldValueForbidden
type ReplicaSpreadConstraint struct {
	// Domain is the ClusterTopology level the replicas spread over, e.g. rack or zone. It must
	// be equal to or broader than the level the replicas are packed into.
	Domain TopologyDomain `json:"domain"`
	// WhenUnsatisfiable: DoNotSchedule (required, the default) or ScheduleAnyway (preferred).
	// +optional
	// +kubebuilder:default=DoNotSchedule
	WhenUnsatisfiable SpreadAction `json:"whenUnsatisfiable,omitempty"`
	// MaxSkew is, for ScheduleAnyway, the largest difference in replicas between two domains
	// the scheduler keeps to while it can (default 1).
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxSkew *int32 `json:"maxSkew,omitempty"`
}

// Required reports whether the spread is required (DoNotSchedule, the default).
func (c *ReplicaSpreadConstraint) Required() bool {
	return c.WhenUnsatisfiable != SpreadScheduleAnyway
}

// Skew is the preferred spread's maxSkew, 1 when unset.
func (c *ReplicaSpreadConstraint) Skew() int32 {
	if c.MaxSkew == nil {
		return 1
	}
	return *c.MaxSkew
}
