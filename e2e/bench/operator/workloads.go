package main

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Scale sizes every workload: "full" is upstream Grove's 1000-pod scale test, "small" a smoke run.
type Scale struct {
	Name string
	// Nodes is the number of kwok nodes (110 pods each).
	Nodes int
	// Replicas of the PodCliqueSet of 2-pod replicas (500 × 2 = 1000 pods in full).
	Replicas int32
	// Router pods and prefill/decode scaling-group replicas of the disaggregated PCS
	// (prefill: 1 leader + 3 workers, decode: 1 leader + 7 workers).
	Router, Prefill, Decode int32
	// SmallSets is the number of small PCS applied at once (5 pods each).
	SmallSets int
	// Steady is the window in which writes after a no-op change are counted.
	Steady metav1.Duration
	// RecoveryReplicas of the PodCliqueSet of 20-pod gangs that loses nodes, one rack of 10
	// nodes per 5 replicas; RecoveryRounds are how many of its nodes fail in each round.
	RecoveryReplicas int32
	RecoveryRounds   []int
}

var scales = map[string]Scale{
	"full": {Name: "full", Nodes: 100, Replicas: 500, Router: 8, Prefill: 82, Decode: 83, SmallSets: 100, Steady: metav1.Duration{Duration: 30e9},
		RecoveryReplicas: 50, RecoveryRounds: []int{1, 4, 16}},
	"small": {Name: "small", Nodes: 10, Replicas: 50, Router: 2, Prefill: 6, Decode: 3, SmallSets: 10, Steady: metav1.Duration{Duration: 30e9},
		RecoveryReplicas: 5, RecoveryRounds: []int{1, 2, 3}},
}

// Pods of the disaggregated PCS.
func (s Scale) disaggPods() int { return int(s.Router + 4*s.Prefill + 8*s.Decode) }

// podSpec is every benchmark pod's spec: one small container, scheduled by schedulerName.
func podSpec(schedulerName string) corev1.PodSpec {
	return corev1.PodSpec{
		SchedulerName: schedulerName,
		Containers: []corev1.Container{{
			Name: "main", Image: "registry.example/bench:1",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi"),
			}},
		}},
	}
}

func clique(name string, replicas int32) *corev1alpha1.PodCliqueTemplateSpec {
	return &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{
		RoleName: name, Replicas: replicas, MinAvailable: ptr.To(replicas), PodSpec: podSpec(groveScheduler),
	}}
}

const groveScheduler = "grove-scheduler"

// replicatedPCS is upstream's scale-test shape: replicas × one clique of 2 pods.
func replicatedPCS(ns, name string, replicas int32) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: replicas, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("worker", 2)},
		}},
	}
}

// disaggPCS is one replica of disaggregated serving: router pods plus prefill and decode
// scaling groups (a leader and workers each); minAvailable 1 puts one of each group in the
// base PodGang and every further group replica in a scaled PodGang of its own. Each group
// replica prefers one rack (pack.preferred), so that its PodGang gets a placement score and a
// rollout's effect on placement is measured; a rack holds any replica, so nothing waits on it.
func disaggPCS(ns, name string, s Scale) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{
				clique("router", s.Router),
				clique("pleader", 1), clique("pworker", 3),
				clique("dleader", 1), clique("dworker", 7),
			},
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "prefill", CliqueNames: []string{"pleader", "pworker"}, Replicas: ptr.To(s.Prefill), MinAvailable: ptr.To[int32](1), TopologyConstraint: rackPreferred()},
				{Name: "decode", CliqueNames: []string{"dleader", "dworker"}, Replicas: ptr.To(s.Decode), MinAvailable: ptr.To[int32](1), TopologyConstraint: rackPreferred()},
			},
			TopologyConstraint: &corev1alpha1.TopologyConstraint{TopologyName: benchTopology},
		}},
	}
}

func rackPreferred() *corev1alpha1.TopologyConstraint {
	return &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "rack"}}
}

// smallPCS is one replica of a leader and 4 workers.
func smallPCS(ns string, i int) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("small-%03d", i)},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 4)},
		}},
	}
}
