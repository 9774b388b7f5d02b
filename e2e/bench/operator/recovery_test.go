package main

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/e2e/framework"
)

func TestPickNodesRoundRobinsOverRacksSkippingIdleAndUsedNodes(t *testing.T) {
	node := func(name, rack string) corev1.Node {
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{framework.RackKey: rack}}}
	}
	pod := func(node string) corev1.Pod { return corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	nodes := []corev1.Node{node("a2", "a"), node("a1", "a"), node("a0", "a"), node("b1", "b"), node("b0", "b"), node("c0", "c")}
	// c0 runs nothing; a0 failed in an earlier round.
	pods := []corev1.Pod{pod("a0"), pod("a1"), pod("a2"), pod("b0"), pod("b1")}
	used := map[string]bool{"a0": true}

	got, err := pickNodes(nodes, pods, 3, used)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b0", "a2"}; !slices.Equal(got, want) {
		t.Errorf("pickNodes = %v, want %v (one per rack before a second from any)", got, want)
	}
	if _, err := pickNodes(nodes, pods, 5, used); err == nil {
		t.Error("pickNodes found 5 nodes where only 4 run pods and have not failed")
	}
}
