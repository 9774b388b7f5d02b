package kubectlgrove

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func pod(name, gang, clique, idx, node string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			common.LabelPodGang: gang, common.LabelPodClique: clique, common.LabelPodCliquePodIndex: idx}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func TestRenderShowsGangsCliquesPodsAndPlacement(t *testing.T) {
	gang := func(name string, scheduled metav1.ConditionStatus, msg string, groups ...string) schedv1alpha1.PodGang {
		g := schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{common.LabelPodCliqueSetReplicaIndex: "0"}}}
		for _, n := range groups {
			g.Spec.PodGroups = append(g.Spec.PodGroups, schedv1alpha1.PodGroup{Name: n, MinReplicas: 1})
		}
		g.Status.Phase = schedv1alpha1.PodGangPhaseRunning
		g.Status.Conditions = []metav1.Condition{{Type: "Scheduled", Status: scheduled, Message: msg}}
		return g
	}
	s := &Snapshot{
		PCS:   &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "disagg"}, Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1}},
		Gangs: []schedv1alpha1.PodGang{gang("disagg-0", "True", "", "disagg-0-router"), gang("disagg-0-workers-0", "False", "needs 4 GPUs within one rack", "disagg-0-workers-1-prefill")},
		Pods: []corev1.Pod{
			pod("disagg-0-router-abc", "disagg-0", "disagg-0-router", "0", "z0-b0-r0-h0"),
			pod("disagg-0-workers-1-prefill-xyz", "disagg-0-workers-0", "disagg-0-workers-1-prefill", "0", ""),
		},
		Nodes: map[string]*corev1.Node{"z0-b0-r0-h0": {ObjectMeta: metav1.ObjectMeta{Name: "z0-b0-r0-h0",
			Labels: map[string]string{"rack": "z0-b0-r0", "block": "z0-b0"}}}},
		RackKey: "rack", BlockKey: "block",
	}
	var out bytes.Buffer
	s.Render(&out)
	got := out.String()
	for _, want := range []string{
		"PodCliqueSet ns/disagg  replicas=1",
		"└─ replica 0",
		"├─ PodGang disagg-0  phase=Running scheduled=True",
		"└─ PodGang disagg-0-workers-0  phase=Running scheduled=False",
		"reason: needs 4 GPUs within one rack",
		"PodClique disagg-0-router  min=1 pods=1",
		"node=z0-b0-r0-h0 rack=z0-b0-r0 block=z0-b0",
		"(not placed)",
	} {
		assert.Contains(t, got, want)
	}
}

// Packing reads the required domain from the PodCliqueSet (a scaling group's own for its scaled
// PodGangs, else the PodCliqueSet's) and the domain of each bound pod from its node; the tree
// shows it on the PodGang's line.
func TestPackingUsesTheRequiredDomainOfThePodGang(t *testing.T) {
	node := func(name, rack, block string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": rack, "block": block}}}
	}
	gang := func(name, pcsg string) schedv1alpha1.PodGang {
		g := schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{common.LabelPodCliqueSetReplicaIndex: "0"}}}
		if pcsg != "" {
			g.Labels[common.LabelPodCliqueScalingGroup] = pcsg
		}
		g.Spec.PodGroups = []schedv1alpha1.PodGroup{{Name: name + "-c", MinReplicas: 2}}
		return g
	}
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "block"}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []corev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "g", TopologyConstraint: &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}}}}
	s := &Snapshot{
		PCS:   pcs,
		Gangs: []schedv1alpha1.PodGang{gang("p-0", ""), gang("p-0-g-0", "p-0-g")},
		Pods: []corev1.Pod{
			pod("a", "p-0", "p-0-c", "0", "h1"), pod("b", "p-0", "p-0-c", "1", "h2"),
			pod("c", "p-0-g-0", "p-0-g-0-c", "0", "h1"), pod("d", "p-0-g-0", "p-0-g-0-c", "1", "h2"),
		},
		// h1 and h2 share block b0 but not a rack.
		Nodes:   map[string]*corev1.Node{"h1": node("h1", "r0", "b0"), "h2": node("h2", "r1", "b0")},
		RackKey: "rack", BlockKey: "block",
		Topology: &corev1alpha1.ClusterTopology{Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "block", Key: "block"}, {Domain: "rack", Key: "rack"}}}},
	}
	base, scaled := s.Packing(&s.Gangs[0]), s.Packing(&s.Gangs[1])
	assert.Equal(t, Packing{Domain: "block", Values: []string{"b0"}, Pods: 2, Bound: 2}, base)
	assert.True(t, base.Packed())
	assert.Equal(t, Packing{Domain: "rack", Values: []string{"r0", "r1"}, Pods: 2, Bound: 2}, scaled)
	assert.False(t, scaled.Packed())
	assert.Equal(t, []string{"b0"}, s.PackingIn(&s.Gangs[1], "block").Values)

	var out bytes.Buffer
	s.Render(&out)
	assert.Contains(t, out.String(), "PodGang p-0  phase=- scheduled=-  in block b0")
	assert.Contains(t, out.String(), "PodGang p-0-g-0  phase=- scheduled=-  SPREAD over racks r0, r1 (one rack required)")

	// A pod not yet bound: not packed, and the tree says nothing about packing until one is.
	s.Pods[1].Spec.NodeName = ""
	assert.False(t, s.Packing(&s.Gangs[0]).Packed())
	s.Pods[0].Spec.NodeName = ""
	out.Reset()
	s.Render(&out)
	assert.NotContains(t, out.String(), "PodGang p-0  phase=- scheduled=-  in")
	// Without a topology nothing is required.
	s.Topology = nil
	assert.Equal(t, Packing{Pods: 2, Bound: 2}, s.Packing(&s.Gangs[1]))
}

// During a rollout each replica line names the versions its pods run (the current one first,
// with how many pods run each) and marks the replica being updated; a settled replica shows
// one version. Terminating pods do not count.
func TestRenderShowsEachReplicasVersions(t *testing.T) {
	versioned := func(name, replica, hash string) corev1.Pod {
		p := pod(name, "g-"+replica, "c-"+replica, "0", "")
		p.Labels[common.LabelPodCliqueSetReplicaIndex] = replica
		p.Labels[common.LabelPodCliqueSetGenerationHash] = hash
		return p
	}
	gone := versioned("old-going", "1", "old")
	gone.DeletionTimestamp = &metav1.Time{}
	current := "new"
	s := &Snapshot{
		PCS: &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
			Status: corev1alpha1.PodCliqueSetStatus{CurrentGenerationHash: &current, UpdateProgress: &corev1alpha1.PodCliqueSetUpdateProgress{
				CurrentlyUpdating: []corev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 0}}}}},
		Gangs: []schedv1alpha1.PodGang{
			{ObjectMeta: metav1.ObjectMeta{Name: "g-0", Labels: map[string]string{common.LabelPodCliqueSetReplicaIndex: "0"}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "g-1", Labels: map[string]string{common.LabelPodCliqueSetReplicaIndex: "1"}}},
		},
		Pods: []corev1.Pod{versioned("a", "0", "old"), versioned("b", "0", "new"), versioned("c", "0", "old"), versioned("d", "1", "new"), gone},
	}
	var out bytes.Buffer
	s.Render(&out)
	assert.Contains(t, out.String(), "replica 0  versions=new:1,old:2 (updating)\n")
	assert.Contains(t, out.String(), "replica 1  version=new\n")
}

// The tree shows the PodCliqueSet's replica spread under its header: which replica is in which
// rack, the racks no replica uses and the skew.
func TestRenderShowsReplicaSpread(t *testing.T) {
	gang := func(name, replica string) schedv1alpha1.PodGang {
		return schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{common.LabelPodCliqueSetReplicaIndex: replica}},
			Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: name + "-w", MinReplicas: 1}},
				ReplicaSpreadConstraints: []schedv1alpha1.ReplicaSpreadConstraint{{Group: "serve", Member: name, TopologyKey: "rack", Required: true}}}}
	}
	node := func(name, rack string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": rack}}}
	}
	withNS := func(p corev1.Pod) corev1.Pod { p.Namespace = "ns"; return p }
	s := &Snapshot{
		PCS:      &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "serve"}, Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 3}},
		Topology: &corev1alpha1.ClusterTopology{Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "rack"}}}},
		Gangs:    []schedv1alpha1.PodGang{gang("serve-0", "0"), gang("serve-1", "1"), gang("serve-2", "2")},
		Pods: []corev1.Pod{withNS(pod("serve-0-w-a", "serve-0", "serve-0-w", "0", "h0")), withNS(pod("serve-1-w-a", "serve-1", "serve-1-w", "0", "h1")),
			withNS(pod("serve-2-w-a", "serve-2", "serve-2-w", "0", ""))},
		Nodes:   map[string]*corev1.Node{"h0": node("h0", "r0"), "h1": node("h1", "r1"), "h2": node("h2", "r2")},
		RackKey: "rack",
	}
	var out bytes.Buffer
	s.Render(&out)
	assert.Contains(t, out.String(), "│ replica spread ns/serve over rack (required): r0: serve-0; r1: serve-1; unused: r2; skew 1\n")
}
