// Package nodes decides cheaply which nodes a gang's capacity checks may count: the hard,
// pod-independent-of-placement rules of the default Filter plugins (cordon, taints, node
// selector and required node affinity). The checks stay optimistic about everything else
// (ports, volumes, inter-pod affinity); the per-pod Filter still has the last word.
package nodes

import (
	v1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// EligibilityFor returns a test of whether pod (standing for its PodGroup) may run on a node.
func EligibilityFor(pod *v1.Pod) func(*v1.Node) bool {
	affinity := nodeaffinity.GetRequiredNodeAffinity(pod)
	tolerations := pod.Spec.Tolerations
	hardTaint := func(t *v1.Taint) bool {
		return t.Effect == v1.TaintEffectNoSchedule || t.Effect == v1.TaintEffectNoExecute
	}
	return func(node *v1.Node) bool {
		if node == nil {
			return false
		}
		if node.Spec.Unschedulable && !v1helper.TolerationsTolerateTaint(klog.Background(), tolerations, &v1.Taint{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}, false) {
			return false
		}
		if _, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, tolerations, hardTaint, false); untolerated {
			return false
		}
		match, err := affinity.Match(node)
		return err == nil && match
	}
}
