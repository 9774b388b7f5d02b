package kubectlgrove

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, cluster.Options{WithoutControllerManager: true}))
}

// fixture writes objects the way grove-operator and grove-scheduler would, into one namespace
// of the real apiserver; the plugin then reads them back through its client.
type fixture struct {
	t   *testing.T
	ctx context.Context
	// c writes the fixture's objects (status included) generically; clients is what the
	// plugin reads through.
	c       client.Client
	clients Clients
	ns      string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, corev1alpha1.AddToScheme(s))
	require.NoError(t, schedv1alpha1.AddToScheme(s))
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: s})
	require.NoError(t, err)
	clients, err := NewClients(cluster.Shared.Config)
	require.NoError(t, err)
	f := &fixture{t: t, ctx: context.Background(), c: c, clients: clients, ns: cluster.Shared.TestNamespace(t)}
	// No controller manager runs here to make the namespace's default ServiceAccount.
	require.NoError(t, c.Create(f.ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "default"}}))
	return f
}

func (f *fixture) create(obj client.Object) {
	f.t.Helper()
	if obj.GetNamespace() == "" && obj.GetObjectKind() != nil {
		if _, ok := obj.(*corev1.Node); !ok {
			if _, ok := obj.(*corev1alpha1.ClusterTopology); !ok {
				obj.SetNamespace(f.ns)
			}
		}
	}
	status := obj.DeepCopyObject().(client.Object)
	require.NoError(f.t, f.c.Create(f.ctx, obj))
	// Status is not taken on create: write it as its owner would.
	status.SetResourceVersion(obj.GetResourceVersion())
	status.SetUID(obj.GetUID())
	require.NoError(f.t, f.c.Status().Update(f.ctx, status))
}

func (f *fixture) gang(name string, minReplicas int32, conds ...metav1.Condition) {
	g := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{common.LabelPartOfKey: "work"}},
		Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: name + "-worker", MinReplicas: minReplicas, PodReferences: []schedv1alpha1.NamespacedName{}}}}}
	g.Status.Phase = schedv1alpha1.PodGangPhasePending
	for _, c := range conds {
		c.LastTransitionTime = metav1.Now()
		g.Status.Conditions = append(g.Status.Conditions, c)
	}
	f.create(g)
}

func (f *fixture) pod(name, gang, node string, mutate ...func(*corev1.Pod)) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		common.LabelPartOfKey: "work", common.LabelPodGang: gang, common.LabelPodClique: gang + "-worker"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), corev1.ResourceCPU: resource.MustParse("1")},
				Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}}}}}}
	p.Status.Phase = corev1.PodPending
	for _, m := range mutate {
		m(p)
	}
	f.create(p)
}

func (f *fixture) why(kind, name string) string {
	f.t.Helper()
	var out bytes.Buffer
	require.NoError(f.t, Why(f.ctx, f.clients, f.ns, kind, name, &out))
	return out.String()
}

func assertLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		assert.Contains(t, out, w)
	}
	if t.Failed() {
		t.Log(out)
	}
}

// A gang whose pods are not all created yet: why names the missing pods, the gate the operator
// still holds and the operator as the one to look at.
func TestWhyGangWaitingForItsPods(t *testing.T) {
	f := newFixture(t)
	f.gang("work-0", 2, metav1.Condition{Type: schedv1alpha1.PodGangConditionInitialized, Status: metav1.ConditionFalse,
		Reason: common.ReasonPodGangPodsCreationPending, Message: "1 of 2 pods exist"})
	f.pod("work-0-worker-a", "work-0", "", func(p *corev1.Pod) {
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: common.SchedulingGatePodGangPendingCreation}}
	})
	assertLines(t, f.why("PodGang", "work-0"),
		"PodGang "+f.ns+"/work-0 is not scheduled (phase Pending)",
		"1. pods: 1 exist, 0 bound to nodes, 1 still gated",
		"2. not every pod of the gang exists yet (PodGangPodsCreationPending): 1 of 2 pods exist",
		"3. 1 pods carry the scheduling gate "+common.SchedulingGatePodGangPendingCreation,
		"4. quorum: PodClique work-0-worker has 1 of the 2 pods its gang needs",
		"5. grove-scheduler has not reported on this gang yet",
		"next: grove-operator is still creating the pods")
}

// The demo's too-big gang, as the scheduler leaves it: every pod exists, none is bound, the
// Scheduled condition and a GangUnschedulable event say why. why reaches it from the pod and
// from the PodCliqueSet, quotes the reason and points at the topology.
func TestWhyUnschedulableGangFromPodAndPodCliqueSet(t *testing.T) {
	f := newFixture(t)
	reason := "needs 6 pods of 8 nvidia.com/gpu within one rack; the best rack (z0-b0-r1) fits 4"
	f.gang("work-0", 6, metav1.Condition{Type: schedv1alpha1.PodGangConditionScheduled, Status: metav1.ConditionFalse,
		Reason: common.ReasonNoDomainFits, Message: reason})
	for i := range 6 {
		f.pod("work-0-worker-"+string(rune('a'+i)), "work-0", "", func(p *corev1.Pod) {
			if i == 0 {
				p.Status.NominatedNodeName = "" // a plain pending pod
			}
		})
	}
	require.NoError(t, f.c.Create(f.ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "work-0.1"}, Type: corev1.EventTypeWarning,
		Reason: common.EventReasonGangUnschedulable, Message: reason, Count: 3, LastTimestamp: metav1.Now(),
		InvolvedObject: corev1.ObjectReference{Kind: "PodGang", Namespace: f.ns, Name: "work-0"}}))
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "work"}, Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1,
		Template: corev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "worker",
			Spec: corev1alpha1.PodCliqueSpec{Replicas: 6, PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}}}}
	pcs.Status.TotalPodGangs = 1
	pcs.Status.Conditions = []metav1.Condition{{Type: common.ConditionReady, Status: metav1.ConditionFalse, Reason: common.ReasonPodGangUnschedulable,
		Message: "PodGang work-0 unschedulable: " + reason, LastTransitionTime: metav1.Now()}}
	f.create(pcs)

	gangLines := []string{
		"1. pods: 6 exist, 0 bound to nodes, 0 still gated",
		"2. grove-scheduler: NoDomainFits — " + reason,
		"3. event GangUnschedulable (×3, ",
		"next: free capacity inside one domain of the required level, lower minAvailable so the quorum fits, or relax the PodCliqueSet's topologyConstraint",
	}
	out := f.why("Pod", "work-0-worker-a")
	assertLines(t, out, append([]string{"Pod " + f.ns + "/work-0-worker-a: pending, not placed", "PodGang " + f.ns + "/work-0 is not scheduled"}, gangLines...)...)
	assert.NotContains(t, out, "carry the scheduling gate")

	out = f.why("PodCliqueSet", "work")
	assertLines(t, out, append([]string{"PodCliqueSet " + f.ns + "/work is not Ready (PodGangUnschedulable): PodGang work-0 unschedulable: " + reason,
		"replicas: 1 wanted, 0 available; PodGangs: 0 of 1 scheduled"}, gangLines...)...)
}

// why's next step follows the Scheduled condition's reason — the scheduler's cause as data —
// whatever the message's words say: every message below names a rack, reserved nodes and
// devices at once.
func TestWhyReadsTheCauseNotTheMessage(t *testing.T) {
	msg := "the PodGang needs 4 pods of 1 device within one rack (rack); 2 nodes are reserved for PodGang other; the best rack fits 2"
	for reason, next := range map[string]string{
		common.ReasonUnschedulable:        "next: add capacity",
		common.ReasonNoDomainFits:         "next: free capacity inside one domain of the required level",
		common.ReasonFilterRejected:       "next: the room is there but a filter refuses it",
		common.ReasonReservedForOtherGang: "next: nodes are reserved for a gang that has waited longer",
		common.ReasonDevicesUnavailable:   "next: free or add devices",
		common.ReasonAttemptFailed:        "next: the gang got nodes but lost them",
	} {
		t.Run(reason, func(t *testing.T) {
			f := newFixture(t)
			f.gang("work-0", 1, metav1.Condition{Type: schedv1alpha1.PodGangConditionScheduled, Status: metav1.ConditionFalse,
				Reason: reason, Message: msg})
			f.pod("work-0-worker-a", "work-0", "")
			assertLines(t, f.why("PodGang", "work-0"), "grove-scheduler: "+reason+" — "+msg, next)
		})
	}
}

// A gang being placed by preemption: why shows the nominated node and says victims go first.
func TestWhyGangWaitingForPreemption(t *testing.T) {
	f := newFixture(t)
	f.gang("work-0", 1, metav1.Condition{Type: schedv1alpha1.PodGangConditionScheduled, Status: metav1.ConditionFalse,
		Reason: common.ReasonInsufficientScheduledPods, Message: "0 of 1 required pods are bound"})
	f.pod("work-0-worker-a", "work-0", "", func(p *corev1.Pod) { p.Status.NominatedNodeName = "host-7" })
	assertLines(t, f.why("PodGang", "work-0"),
		"preemption in progress, nominated: work-0-worker-a → host-7")
}

// topology lists each domain with its free capacity (allocatable minus the requests of the pods
// bound there) and each gang at the narrowest domain holding all of its bound pods.
func TestTopologyShowsFreeCapacityAndGangs(t *testing.T) {
	f := newFixture(t)
	suffix := rand.String(5)
	blockKey, rackKey := "test.grove.io/block-"+suffix, "test.grove.io/rack-"+suffix
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "fabric-" + suffix},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "block", Key: blockKey}, {Domain: "rack", Key: rackKey}, {Domain: "host", Key: corev1.LabelHostname}}}}
	require.NoError(t, f.c.Create(f.ctx, ct))
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), ct) })
	node := func(name, block, rack string) string {
		name += "-" + suffix
		n := cluster.FakeNode(name, map[string]string{blockKey: block, rackKey: rack},
			map[corev1.ResourceName]string{"nvidia.com/gpu": "16", "cpu": "64", "memory": "256Gi"})
		f.create(n)
		t.Cleanup(func() { _ = f.c.Delete(context.Background(), n) })
		return name
	}
	h1, h2, h3 := node("h1", "b0", "r0"), node("h2", "b0", "r0"), node("h3", "b0", "r1")
	f.gang("packed-0", 2)
	f.pod("packed-0-a", "packed-0", h1)
	f.pod("packed-0-b", "packed-0", h2)
	f.gang("spread-0", 2)
	f.pod("spread-0-a", "spread-0", h1)
	f.pod("spread-0-b", "spread-0", h3)

	var out bytes.Buffer
	require.NoError(t, Topology(f.ctx, f.clients, ct.Name, &out))
	got := out.String()
	t.Log(got)
	lines := strings.Split(got, "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	assert.Equal(t, "ClusterTopology "+ct.Name+": block ("+blockKey+") > rack ("+rackKey+") > host (kubernetes.io/hostname)", lines[0])
	assertLines(t, got,
		// Block b0: 3 nodes × 16 GPUs, 4 pods × 8 GPUs (and 1 CPU) bound.
		"block b0  nodes=3  cpu free 188 of 192  nvidia.com/gpu free 16 of 48",
		"gangs inside: "+f.ns+"/spread-0 (2 pods)",
		"rack r0  nodes=2  cpu free 125 of 128  nvidia.com/gpu free 8 of 32",
		"gangs inside: "+f.ns+"/packed-0 (2 pods)",
		"rack r1  nodes=1  cpu free 63 of 64  nvidia.com/gpu free 8 of 16",
	)
}

// A gang that lost a member to a failed node says so, with the node, on the PodGang and on the
// PodCliqueSet; the other members are bound and running.
func TestWhyMemberReplacing(t *testing.T) {
	f := newFixture(t)
	msg := "members lost on failed node n-3 are being replaced; the others keep running"
	f.gang("work-0", 4,
		metav1.Condition{Type: schedv1alpha1.PodGangConditionScheduled, Status: metav1.ConditionFalse, Reason: common.ReasonWaitingForPods, Message: "3 of 4 pods"},
		metav1.Condition{Type: common.ConditionMemberReplacing, Status: metav1.ConditionTrue, Reason: common.ReasonNodeFailed, Message: msg})
	for i := range 3 {
		f.pod("work-0-w-"+string(rune('a'+i)), "work-0", "n-"+string(rune('0'+i)))
	}
	f.pod("work-0-w-d", "work-0", "")
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "work"}, Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1,
		Template: corev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "w",
			Spec: corev1alpha1.PodCliqueSpec{Replicas: 4, PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}}}}
	pcs.Status.TotalPodGangs = 1
	now := metav1.Now()
	pcs.Status.Conditions = []metav1.Condition{
		{Type: common.ConditionReady, Status: metav1.ConditionFalse, Reason: common.ReasonPodGangUnschedulable, Message: "PodGang work-0 is not scheduled", LastTransitionTime: now},
		{Type: common.ConditionMemberReplacing, Status: metav1.ConditionTrue, Reason: common.ReasonNodeFailed,
			Message: "replica 0 lost pods on node n-3: those pods are being replaced, the rest keep running", LastTransitionTime: now},
	}
	f.create(pcs)
	out := f.why("PodCliqueSet", "work")
	assertLines(t, out,
		"condition MemberReplacing (NodeFailed): replica 0 lost pods on node n-3",
		"1. pods: 4 exist, 3 bound to nodes, 0 still gated",
		"grove-operator: NodeFailed — "+msg,
		"next: ")
}
