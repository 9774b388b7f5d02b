package gang

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

func TestEventsToRegister(t *testing.T) {
	p, _ := testPlugin(t)
	events, err := p.EventsToRegister(context.Background())
	require.NoError(t, err)
	var got []fwk.ClusterEvent
	for _, e := range events {
		assert.NotNil(t, e.QueueingHintFn, "every event has a hint: %v", e.Event)
		got = append(got, e.Event)
	}
	assert.Equal(t, []fwk.ClusterEvent{
		{Resource: fwk.AssignedPod, ActionType: fwk.Delete},
		{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAllocatable | fwk.UpdateNodeLabel | fwk.UpdateNodeTaint},
	}, got)
}

func hintNode(name string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": "a"}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), v1.ResourcePods: resource.MustParse("110")}}}
}

// backOff makes gang key back off as after a member lost its node mid-attempt.
func backOff(t *testing.T, p *Plugin, key string, member *v1.Pod) {
	t.Helper()
	g, ok := p.gangs.Get(key)
	require.True(t, ok)
	v := p.ledger.Admit(key, member.UID, "w", g.Quorum)
	_, err := p.ledger.Reserve(key, v.Epoch)
	require.NoError(t, err)
	require.NotNil(t, p.ledger.Lost(key, member.UID, v.Epoch, g.Quorum, time.Minute))
	_, _, backingOff := p.ledger.BackingOff(key)
	require.True(t, backingOff)
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	base := hintNode("n")
	with := func(change func(n *v1.Node)) *v1.Node {
		n := base.DeepCopy()
		change(n)
		return n
	}
	tainted := with(func(n *v1.Node) { n.Spec.Taints = []v1.Taint{{Key: "gpu", Effect: v1.TaintEffectNoExecute}} })
	cases := []struct {
		name string
		// pod: "member", "plain" (outside gangs) or "selective" (its gang selects pool=gpu).
		pod      string
		scout    bool // another member scouts for the gang
		backOff  bool
		old, new any
		want     fwk.QueueingHint
	}{
		{name: "node added", pod: "member", new: base, want: fwk.Queue},
		{name: "pods outside gangs are left to their plugins", pod: "plain", old: base, new: base, want: fwk.Queue},
		{name: "more allocatable", pod: "member", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("9") }), want: fwk.Queue},
		{name: "less allocatable", pod: "member", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("7") }), want: fwk.QueueSkip},
		{name: "a label nobody selects", pod: "member", old: base, new: with(func(n *v1.Node) { n.Labels["team"] = "b" }), want: fwk.QueueSkip},
		{name: "a pack key label is not this plugin's concern", pod: "member", old: base, new: with(func(n *v1.Node) { n.Labels["topology.kubernetes.io/rack"] = "r" }), want: fwk.QueueSkip},
		{name: "taint removed", pod: "member", old: tainted, new: base, want: fwk.Queue},
		{name: "taint added", pod: "member", old: base, new: tainted, want: fwk.QueueSkip},
		{name: "PreferNoSchedule taint removed", pod: "member", old: with(func(n *v1.Node) {
			n.Spec.Taints = []v1.Taint{{Key: "soft", Effect: v1.TaintEffectPreferNoSchedule}}
		}), new: base, want: fwk.QueueSkip},
		{name: "gained the label the gang selects", pod: "selective", old: base, new: with(func(n *v1.Node) { n.Labels["pool"] = "gpu" }), want: fwk.Queue},
		{name: "more room where the gang may not go", pod: "selective", old: base, new: with(func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("9") }), want: fwk.QueueSkip},
		{name: "another member scouts", pod: "member", scout: true, new: base, want: fwk.QueueSkip},
		{name: "the gang backs off", pod: "member", backOff: true, new: base, want: fwk.QueueSkip},
		{name: "final state unknown", pod: "member", old: cache.DeletedFinalStateUnknown{Obj: tainted}, new: base, want: fwk.Queue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := testPlugin(t)
			pods := addGang(p, "g", 3, 0, 0, 3)
			pod := pods[0]
			switch tc.pod {
			case "plain":
				pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
			case "selective":
				// Rules are read from the gang's first member (its PodGroup's template).
				sel := pods[0].DeepCopy()
				sel.Name, sel.UID, sel.Labels[common.LabelPodGang] = "s-0", "s-0", "s"
				sel.Spec.NodeSelector = map[string]string{"pool": "gpu"}
				addGang(p, "s", 1, 0, 0, 0)
				p.gangs.UpsertPod(sel)
				pod = sel
			}
			if tc.scout {
				p.gangs.SetScout("ns/g", pods[1].UID)
			}
			if tc.backOff {
				backOff(t, p, "ns/g", pods[1])
			}
			got, err := p.isSchedulableAfterNodeChange(klog.Background(), pod, tc.old, tc.new)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestIsSchedulableAfterPodDeleted(t *testing.T) {
	onNode := func(pod *v1.Pod) *v1.Pod {
		pod = pod.DeepCopy()
		pod.Spec.NodeName = "n"
		return pod
	}
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "plain"}}
	cases := []struct {
		name    string
		plain   bool
		scout   bool
		backOff bool
		deleted func(own, other []*v1.Pod) any
		want    fwk.QueueingHint
	}{
		{name: "a pod outside gangs freed room", deleted: func(_, _ []*v1.Pod) any { return onNode(plain) }, want: fwk.Queue},
		{name: "a member of another gang freed room", deleted: func(_, other []*v1.Pod) any { return other[0] }, want: fwk.Queue},
		{name: "a member of the same gang: it needs that room again", deleted: func(own, _ []*v1.Pod) any { return own[0] }, want: fwk.QueueSkip},
		{name: "a terminating member of the same gang, replaced already: its room is free for the replacements", deleted: func(own, _ []*v1.Pod) any {
			gone := own[0].DeepCopy()
			gone.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			return gone
		}, want: fwk.Queue},
		{name: "a pod without a node freed nothing", deleted: func(_, _ []*v1.Pod) any { return plain }, want: fwk.QueueSkip},
		{name: "pods outside gangs are left to their plugins", plain: true, deleted: func(_, _ []*v1.Pod) any { return plain }, want: fwk.Queue},
		{name: "another member scouts", scout: true, deleted: func(_, other []*v1.Pod) any { return other[0] }, want: fwk.QueueSkip},
		{name: "the gang backs off", backOff: true, deleted: func(_, other []*v1.Pod) any { return other[0] }, want: fwk.QueueSkip},
		{name: "final state unknown", deleted: func(_, other []*v1.Pod) any { return cache.DeletedFinalStateUnknown{Obj: other[0]} }, want: fwk.Queue},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := testPlugin(t)
			own := addGang(p, "g", 3, 0, 1, 3)
			other := addGang(p, "o", 1, 0, 1, 0)
			pod := own[1]
			if tc.plain {
				pod = plain
			}
			if tc.scout {
				p.gangs.SetScout("ns/g", own[2].UID)
			}
			if tc.backOff {
				backOff(t, p, "ns/g", own[2])
			}
			got, err := p.isSchedulableAfterPodDeleted(klog.Background(), pod, tc.deleted(own, other), nil)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A hint given an object of the wrong type requeues (an error counts as Queue) and says so.
func TestHintsRejectWrongObjects(t *testing.T) {
	p, _ := testPlugin(t)
	pod := addGang(p, "g", 1, 0, 0, 1)[0]
	_, err := p.isSchedulableAfterNodeChange(klog.Background(), pod, nil, pod)
	assert.Error(t, err)
	_, err = p.isSchedulableAfterPodDeleted(klog.Background(), pod, hintNode("n"), nil)
	assert.Error(t, err)
}
