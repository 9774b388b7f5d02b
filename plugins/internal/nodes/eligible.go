// Package nodes decides cheaply which nodes a gang's capacity checks may count: the hard,
// pod-independent-of-placement rules of the default Filter plugins (cordon, taints, node
// selector and required node affinity). The checks stay optimistic about everything else
// (ports, volumes, inter-pod affinity); the per-pod Filter still has the last word.
package nodes

import (
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/ai-dynamo/grove/plugins/internal/capacity"
)

// Rules are the hard node rules of one pod, standing for its PodGroup (members share a pod
// template). PodGroups of one gang may have different rules — a router on CPU nodes, workers on
// tainted GPU nodes — so capacity checks ask them per PodGroup.
type Rules struct {
	affinity    nodeaffinity.RequiredNodeAffinity
	tolerations []v1.Toleration
	// key is equal for rules that admit the same nodes.
	key string
}

// RulesOf returns pod's node rules.
func RulesOf(pod *v1.Pod) Rules {
	r := Rules{affinity: nodeaffinity.GetRequiredNodeAffinity(pod), tolerations: pod.Spec.Tolerations}
	var required *v1.NodeSelector
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(pod.Spec.NodeSelector) > 0 || required != nil || len(pod.Spec.Tolerations) > 0 {
		// Marshalling sorts map keys, so equal rules give equal keys.
		b, _ := json.Marshal([]any{pod.Spec.NodeSelector, required, pod.Spec.Tolerations})
		r.key = string(b)
	}
	return r
}

// Same reports whether r and o admit the same nodes.
func (r Rules) Same(o Rules) bool { return r.key == o.key }

// Allows reports whether a pod with these rules may run on node.
func (r Rules) Allows(node *v1.Node) bool {
	if node == nil {
		return false
	}
	if node.Spec.Unschedulable && !v1helper.TolerationsTolerateTaint(klog.Background(), r.tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}, false) {
		return false
	}
	if _, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, r.tolerations, hardTaint, false); untolerated {
		return false
	}
	match, err := r.affinity.Match(node)
	return err == nil && match
}

func hardTaint(t *v1.Taint) bool {
	return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
}

// EligibilityFor returns a test of whether pod (standing for its PodGroup) may run on a node.
func EligibilityFor(pod *v1.Pod) func(*v1.Node) bool {
	return RulesOf(pod).Allows
}

// Classes sorts a gang's PodGroups by their node rules: PodGroups with the same rules share an
// eligibility class (capacity.Demand.Class), so a node is checked once per class, not per group.
type Classes struct{ rules []Rules }

// Of returns the class of r, adding one for rules not seen before.
func (c *Classes) Of(r Rules) int {
	for i := range c.rules {
		if c.rules[i].Same(r) {
			return i
		}
	}
	c.rules = append(c.rules, r)
	return len(c.rules) - 1
}

// Len is the number of classes.
func (c *Classes) Len() int { return len(c.rules) }

// Key is class i's rules' key: classes of equal keys, of any gang, admit the same nodes.
func (c *Classes) Key(i int) string { return c.rules[i].key }

// Admits reports whether a pod of class i may run on node.
func (c *Classes) Admits(i int, node *v1.Node) bool { return c.rules[i].Allows(node) }

// Allowed is the mask of the classes whose pods may run on node.
func (c *Classes) Allowed(node *v1.Node) capacity.Mask {
	var m capacity.Mask
	for i := range c.rules {
		if c.rules[i].Allows(node) {
			m |= capacity.ClassMask(i)
		}
	}
	return m
}
