package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// NodeFailurePolicy says what grove-operator does with a PodCliqueSet replica when a node that
// runs one of its bound pods fails (NotReady or unreachable past the operator's
// nodeFailure.grace, or deleted).
// +kubebuilder:validation:Enum=ReplaceInDomain;RecreateGang
type NodeFailurePolicy string

const (
	// NodeFailurePolicyReplaceInDomain replaces only the pods on the failed node: they are
	// deleted (force-deleted when the node is gone or unreachable and the operator's policy
	// allows it), their PodClique recreates them with the same index, and the scheduler places
	// them next to the members that kept running. The default.
	NodeFailurePolicyReplaceInDomain NodeFailurePolicy = "ReplaceInDomain"
	// NodeFailurePolicyRecreateGang recreates the whole replica at once, as gang termination
	// does after terminationDelay: for workloads whose members cannot rejoin a running group
	// (a collective that must restart together).
	NodeFailurePolicyRecreateGang NodeFailurePolicy = "RecreateGang"
)

// NodeFailurePolicyOf is the policy of a template; unset means ReplaceInDomain. It is not
// defaulted into the object, so adding the field changes no existing PodCliqueSet's template.
func NodeFailurePolicyOf(t *PodCliqueSetTemplateSpec) NodeFailurePolicy {
	if t.NodeFailurePolicy == nil || *t.NodeFailurePolicy == "" {
		return NodeFailurePolicyReplaceInDomain
	}
	return *t.NodeFailurePolicy
}

// ReplicaNodeFailureStatus is what grove-operator remembers of the node failures of one
// PodCliqueSet replica: the replacement in progress, if any, and how many it made recently
// (for the back-off and the budget).
type ReplicaNodeFailureStatus struct {
	// ReplicaIndex is the PodCliqueSet replica.
	ReplicaIndex int32 `json:"replicaIndex"`
	// Replacements counts the replacements made since the replica last went
	// nodeFailure.resetAfter without one.
	// +optional
	Replacements int32 `json:"replacements,omitempty"`
	// LastReplacementTime is when the last replacement was made.
	// +optional
	LastReplacementTime *metav1.Time `json:"lastReplacementTime,omitempty"`
	// FailedNodes are the failed nodes whose pods are being replaced; empty once the replica
	// is whole again.
	// +optional
	FailedNodes []string `json:"failedNodes,omitempty"`
	// FailedSince is when the first of FailedNodes failed (its Ready condition left True); the
	// replacement's duration is measured from it.
	// +optional
	FailedSince *metav1.Time `json:"failedSince,omitempty"`
	// BudgetExhausted is set once the replica used nodeFailure.maxReplacements: its pods on
	// failed nodes are no longer replaced, and gang termination (terminationDelay) applies.
	// Cleared once the replica goes nodeFailure.resetAfter without a node failure.
	// +optional
	BudgetExhausted bool `json:"budgetExhausted,omitempty"`
}
