package nodes

import (
	v1 "k8s.io/api/core/v1"
)

// Opened reports whether a node update may give pods with one of rules room they lacked: the
// node now admits them and did not before (a taint or cordon lifted, a label their selector
// needs added), or it admits them and its allocatable grew. Label changes no rule selects on,
// condition, annotation and status-only updates open nothing. Queueing hints use it so a
// heartbeat-like node update does not requeue every pending gang.
func Opened(oldNode, newNode *v1.Node, rules []Rules) bool {
	if newNode == nil {
		return false
	}
	if oldNode == nil {
		return true
	}
	grew := AllocatableGrew(oldNode, newNode)
	for _, r := range rules {
		if !r.Allows(newNode) {
			continue
		}
		if grew || !r.Allows(oldNode) {
			return true
		}
	}
	return false
}

// AllocatableGrew reports whether the node offers more of some resource than before.
func AllocatableGrew(oldNode, newNode *v1.Node) bool {
	for name, q := range newNode.Status.Allocatable {
		was, ok := oldNode.Status.Allocatable[name]
		if !ok || q.Cmp(was) > 0 {
			return true
		}
	}
	return false
}
