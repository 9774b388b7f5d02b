package gang

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
	"github.com/ai-dynamo/grove/plugins/internal/order"
)

// activations records the pods the plugin hands back to the scheduling queue.
type activations struct {
	fwk.Handle
	pods []string
}

func (a *activations) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	for k := range pods {
		a.pods = append(a.pods, k)
	}
}

func testPlugin(t *testing.T) (*Plugin, *activations) {
	t.Helper()
	h := &activations{}
	gangs := &gangcache.Shared{Cache: gangcache.New()}
	l := ledger.NewWithStore(clock.RealClock{}, ledger.Policy{InitialBackoff: time.Second, MaxBackoff: time.Minute, EventInterval: time.Minute}, gangs.Cache)
	p := &Plugin{ctx: context.Background(), handle: h, gangs: gangs, ledger: l, status: newStatusWriter(gangs, l, nil, nil)}
	gangs.SetHandler(p)
	return p, h
}

// addGang adds PodGang ns/name with one PodGroup "w" of minReplicas min and its pods: bound
// ones on nodes, then pending ones, all of priority prio.
func addGang(p *Plugin, name string, minReplicas, prio int32, bound, pending int) []*v1.Pod {
	p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: minReplicas}}}})
	var pods []*v1.Pod
	for i := range bound + pending {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-%d", name, i), UID: types.UID(fmt.Sprintf("%s-%d", name, i)),
				Labels: map[string]string{common.LabelPodGang: name, common.LabelPodClique: "w"}},
			Spec: v1.PodSpec{Priority: ptr.To(prio)},
		}
		if i < bound {
			pod.Spec.NodeName = fmt.Sprintf("node-%s-%d", name, i)
		}
		p.gangs.UpsertPod(pod)
		pods = append(pods, pod)
	}
	return pods
}

// setCreated gives PodGang key a creation time: its age in the order of claims on room.
func setCreated(p *Plugin, key string, at time.Time) {
	g, _ := p.gangs.Get(key)
	pg := g.PodGang.DeepCopy()
	pg.CreationTimestamp = metav1.NewTime(at)
	p.gangs.UpsertPodGang(pg)
}

// A reservation holds back gangs behind its gang in the order of claims on room, not waiting
// quorums ahead of it: those may use the reserved nodes now rather than leave them idle.
func TestReservationYieldsToWaitingQuorumsAheadOfIt(t *testing.T) {
	p, _ := testPlugin(t)
	addGang(p, "holder", 4, 0, 0, 4)
	addGang(p, "older", 2, 0, 0, 2)
	addGang(p, "younger", 2, 0, 0, 2)
	addGang(p, "older-elastic", 1, 0, 1, 2)
	addGang(p, "older-incomplete", 3, 0, 0, 2)
	addGang(p, "older-low", 2, -1, 0, 2)
	for key, at := range map[string]time.Duration{"ns/holder": time.Second, "ns/older": 0, "ns/younger": 2 * time.Second,
		"ns/older-elastic": 0, "ns/older-incomplete": 0, "ns/older-low": 0} {
		setCreated(p, key, t0.Add(at))
	}
	now := time.Now()
	holder, _ := p.gangs.Entry("ns/holder", order.Base, 0)
	r := &gangcache.Reservation{Key: "ns/holder", Priority: 0, Since: now, Nodes: sets.New("n1"), Expires: now.Add(time.Hour),
		Yields: p.reservationYields(holder)}
	tests := []struct {
		key      string
		prio     int32
		node     string
		excluded bool
	}{
		{key: "ns/older", prio: 0, node: "n1", excluded: false},
		{key: "ns/younger", prio: 0, node: "n1", excluded: true},
		{key: "ns/older-elastic", prio: 0, node: "n1", excluded: true},
		{key: "ns/older-incomplete", prio: 0, node: "n1", excluded: true},
		{key: "ns/older-low", prio: -1, node: "n1", excluded: true},
		{key: "ns/younger", prio: 0, node: "n2", excluded: false},
		{key: "ns/holder", prio: 0, node: "n1", excluded: false},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s on %s", tc.key, tc.node), func(t *testing.T) {
			assert.Equal(t, tc.excluded, r.Excludes(tc.key, tc.prio, tc.node, now))
		})
	}
}

// A reservation whose gang lost a member of its quorum ends at once: nothing renews it until
// the gang is whole again, and the nodes would sit idle until it expired.
func TestReservationEndsWhenItsGangCannotBeAttempted(t *testing.T) {
	p, h := testPlugin(t)
	holder := addGang(p, "holder", 2, 0, 0, 3)
	addGang(p, "other", 2, 0, 0, 2)
	now := time.Now()
	require.True(t, p.gangs.Reserve(&gangcache.Reservation{Key: "ns/holder", Nodes: sets.New("n1"), Since: now, Expires: now.Add(time.Hour)}, now))

	// One pod beyond the quorum goes: the gang still waits, the reservation holds.
	p.gangs.DeletePod(holder[2])
	require.NotNil(t, p.gangs.Reservation(), "the quorum is still present")
	// A quorum member goes: the gang cannot be attempted.
	p.gangs.DeletePod(holder[1])
	assert.Nil(t, p.gangs.Reservation())
	assert.Contains(t, h.pods, "ns/other-0", "the gangs it held back are retried")
}

// TestQueueingHints covers the plugin's EventsToRegister hint: a freed pod or a new node
// requeues a turned-away member unless its gang backs off (its timer brings it back) or another
// pending member scouts for its gang.
func TestQueueingHints(t *testing.T) {
	p, _ := testPlugin(t)
	scouted := addGang(p, "scouted", 2, 0, 0, 2)
	p.gangs.SetScout("ns/scouted", scouted[0].UID)
	backingOff := addGang(p, "backing-off", 2, 0, 0, 2)
	g, ok := p.gangs.Get("ns/backing-off")
	require.True(t, ok)
	require.NotNil(t, p.ledger.Lost("ns/backing-off", backingOff[0].UID, 1, g.Quorum, time.Minute), "a lost member fails the attempt")
	plain := addGang(p, "plain", 2, 0, 0, 2)
	outside := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "outside"}}

	events, err := p.EventsToRegister(context.Background())
	require.NoError(t, err)
	require.Len(t, events, 2)
	freedPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone"}, Spec: v1.PodSpec{NodeName: "n1"}}
	newNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}}
	tests := []struct {
		name string
		pod  *v1.Pod
		want fwk.QueueingHint
	}{
		{name: "a pod outside gangs", pod: outside, want: fwk.Queue},
		{name: "a member of a gang nothing holds back", pod: plain[1], want: fwk.Queue},
		{name: "the gang's scout", pod: scouted[0], want: fwk.Queue},
		{name: "a member another pending member scouts for", pod: scouted[1], want: fwk.QueueSkip},
		{name: "a member of a gang that backs off", pod: backingOff[1], want: fwk.QueueSkip},
	}
	for _, ev := range events {
		oldObj, newObj := any(freedPod), any(nil)
		if ev.Event.Resource == fwk.Node {
			oldObj, newObj = nil, newNode
		}
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s: %s", ev.Event.Resource, tc.name), func(t *testing.T) {
				got, err := ev.QueueingHintFn(klog.Background(), tc.pod, oldObj, newObj)
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
			})
		}
	}
}

// A base PodGang holding a scaling-group replica (PodGroup d0, packed into a rack) under a
// required spread scoped to it, and an unpacked clique fe: the scaling group's other replica
// runs in rack r1, which has the most room. The nodes reserved must hold d0 outside r1 — fe,
// which the spread does not bind, may take r1.
func TestReservationHoldsRoomForAScopedSpreadReplicaWhereItMayGo(t *testing.T) {
	p, _ := testPlugin(t)
	rack := "topology.kubernetes.io/rack"
	pod := func(gang, group, name, node string) *v1.Pod {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{common.LabelPodGang: gang, common.LabelPodClique: group}},
			Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}}}}
		p.gangs.UpsertPod(pod)
		return pod
	}
	p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcs-0-sg-1", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "d1", MinReplicas: 1}},
			ReplicaSpreadConstraints: []v1alpha1.ReplicaSpreadConstraint{{Group: "pcs-0-sg", Member: "sg-1", TopologyKey: rack, Required: true}}}})
	pod("pcs-0-sg-1", "d1", "d1-0", "r1-a")
	p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pcs-0", Generation: 1},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "fe", MinReplicas: 1}, {Name: "d0", MinReplicas: 2}},
			TopologyConstraintGroupConfigs: []v1alpha1.TopologyConstraintGroupConfig{{Name: "sg-0", PodGroupNames: []string{"d0"},
				TopologyConstraint: &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(rack)}}}},
			ReplicaSpreadConstraints: []v1alpha1.ReplicaSpreadConstraint{{Group: "pcs-0-sg", Member: "sg-0", TopologyKey: rack, Required: true,
				PodGroupNames: []string{"d0"}}}}})
	fe := pod("pcs-0", "fe", "fe-0", "")
	pod("pcs-0", "d0", "d0-0", "")
	pod("pcs-0", "d0", "d0-1", "")

	var nodeInfos []fwk.NodeInfo
	for _, n := range []struct{ name, rack, cpu string }{{"r1-a", "r1", "8"}, {"r1-b", "r1", "8"}, {"r2-a", "r2", "2"}, {"r2-b", "r2", "2"}} {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{rack: n.rack}},
			Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse(n.cpu),
				v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}}})
		nodeInfos = append(nodeInfos, ni)
	}
	g, ok := p.gangs.Get("ns/pcs-0")
	require.True(t, ok)
	assert.Equal(t, sets.New("r1-a", "r2-a"), p.nodesToReserve(fe, "ns/pcs-0", g, nodeInfos),
		"d0 is reserved room in r2 (r2-a holds both its pods), fe in r1")
}
