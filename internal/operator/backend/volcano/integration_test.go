package volcano

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, cluster.Options{WithThirdPartyCRDs: true}))
}

func newBackend(t *testing.T, c client.Client, rawConfig string) *Backend {
	t.Helper()
	b := &Backend{}
	require.NoError(t, b.Init(context.Background(), backend.InitContext{Client: c, APIReader: c, Logger: testr.New(t), Config: []byte(rawConfig)}))
	return b
}

func getPodGroup(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, found, err := thirdparty.Get(context.Background(), c, PodGroupGVK, client.ObjectKey{Namespace: ns, Name: name})
	require.NoError(t, err)
	require.True(t, found, "Volcano PodGroup %s/%s not found", ns, name)
	return u
}

func required(key string) *schedv1alpha1.TopologyConstraint {
	return &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(key)}}
}

func preferred(key string) *schedv1alpha1.TopologyConstraint {
	return &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Preferred: ptr.To(key)}}
}

// inferenceGang is the base PodGang of replica 0 of a PodCliqueSet "inf": a router (minAvailable
// 1) and one replica of a prefill/decode scaling group (minAvailable 2 and 1), the whole gang
// required in one block and the scaling group's replica in one block too (implied).
func inferenceGang(ns, topologyName string) *schedv1alpha1.PodGang {
	g := backendtest.PodGang(ns, "inf-0", topologyName, []schedv1alpha1.PodGroup{
		{Name: "inf-0-router", MinReplicas: 1, PodReferences: []schedv1alpha1.NamespacedName{}},
		{Name: "inf-0-workers-0-prefill", MinReplicas: 2, PodReferences: []schedv1alpha1.NamespacedName{}},
		{Name: "inf-0-workers-0-decode", MinReplicas: 1, PodReferences: []schedv1alpha1.NamespacedName{}},
	})
	g.Spec.TopologyConstraint = required(backendtest.KeyBlock)
	g.Spec.TopologyConstraintGroupConfigs = []schedv1alpha1.TopologyConstraintGroupConfig{{
		Name: "inf-0-workers-0", PodGroupNames: []string{"inf-0-workers-0-prefill", "inf-0-workers-0-decode"}, TopologyConstraint: required(backendtest.KeyBlock)}}
	g.Spec.PriorityClassName = "inference-high"
	g.Annotations[KeyQueue] = "team-a"
	return g
}

func TestPodGangBecomesAVolcanoPodGroupAcceptedByTheRealCRD(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := backendtest.CreateClusterTopology(t, c)
	b := newBackend(t, c, tiersConfig)

	pg := inferenceGang(ns, ct.Name)
	require.NoError(t, c.Create(ctx, pg))
	require.NoError(t, b.SyncPodGang(ctx, pg))

	got := getPodGroup(t, c, ns, "inf-0")
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "grove-operator", "grove.io/podgang": "inf-0"}, got.GetLabels())
	assert.Equal(t, map[string]string{"grove.io/topology-name": ct.Name, KeyQueue: "team-a"}, got.GetAnnotations())
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Name: "inf-0", UID: pg.UID, Controller: ptr.To(true)}},
		got.GetOwnerReferences())
	backendtest.JSONEqYAML(t, `
queue: team-a
priorityClassName: inference-high
minMember: 4
minTaskMember: {inf-0-router: 1, inf-0-workers-0-prefill: 2, inf-0-workers-0-decode: 1}
networkTopology: {mode: hard, highestTierAllowed: 2}
`, got.Object["spec"])

	t.Run("a changed gang updates the PodGroup", func(t *testing.T) {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pg), pg))
		pg.Spec.PodGroups = pg.Spec.PodGroups[:2] // decode leaves the gang
		pg.Spec.PodGroups[1].MinReplicas = 3
		pg.Spec.TopologyConstraintGroupConfigs = nil
		pg.Spec.TopologyConstraint = preferred(backendtest.KeyRack)
		pg.Spec.PriorityClassName = ""
		require.NoError(t, c.Update(ctx, pg))
		require.NoError(t, b.SyncPodGang(ctx, pg))
		// Server-side apply drops what Grove no longer sets: decode's minTaskMember entry, the
		// tier and the priority class.
		backendtest.JSONEqYAML(t, `
queue: team-a
minMember: 4
minTaskMember: {inf-0-router: 1, inf-0-workers-0-prefill: 3}
networkTopology: {mode: soft}
`, getPodGroup(t, c, ns, "inf-0").Object["spec"])
	})

	t.Run("Volcano's status is kept", func(t *testing.T) {
		got := getPodGroup(t, c, ns, "inf-0")
		got.Object["status"] = map[string]any{"phase": "Running", "running": int64(4)}
		require.NoError(t, c.Update(ctx, got)) // the CRD has no status subresource
		require.NoError(t, b.SyncPodGang(ctx, pg))
		assert.Equal(t, map[string]any{"phase": "Running", "running": int64(4)}, getPodGroup(t, c, ns, "inf-0").Object["status"])
	})

	t.Run("deleting the PodGang deletes the PodGroup", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, pg))
		backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
			_, found, err := thirdparty.Get(ctx, c, PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0"})
			return !found, err
		}, "the garbage collector to delete the Volcano PodGroup of the removed PodGang")
	})
}

func TestSyncPodGangNeverOverwritesAForeignPodGroup(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	foreign := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0"})
	foreign.Object["spec"] = map[string]any{"queue": "someone-else", "minMember": int64(7)}
	require.NoError(t, c.Create(ctx, foreign))

	pg := inferenceGang(ns, "")
	pg.Spec.TopologyConstraint, pg.Spec.TopologyConstraintGroupConfigs = nil, nil
	require.NoError(t, c.Create(ctx, pg))
	err := newBackend(t, c, "").SyncPodGang(ctx, pg)
	require.ErrorContains(t, err, "is not managed by Grove")
	assert.Equal(t, int64(7), getPodGroup(t, c, ns, "inf-0").Object["spec"].(map[string]any)["minMember"])
}

// The real CRD's schema is in force: a networkTopology mode Volcano does not know is refused,
// so the PodGroups the tests above wrote were checked against it.
func TestApplyIsCheckedAgainstTheCRDSchema(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	u := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "bad"})
	u.Object["spec"] = map[string]any{"minMember": int64(1), "networkTopology": map[string]any{"mode": "firm"}}
	require.ErrorContains(t, thirdparty.Apply(ctx, c, u), "networkTopology.mode")
	u.Object["spec"] = map[string]any{"minMember": int64(1), "gangSize": int64(1)}
	require.ErrorContains(t, thirdparty.Apply(ctx, c, u), "gangSize")
}

func createQueue(t *testing.T, c client.Client, state string) string {
	t.Helper()
	ctx := context.Background()
	q := thirdparty.New(QueueGVK, client.ObjectKey{Name: "q-" + rand.String(6)})
	q.Object["spec"] = map[string]any{"weight": int64(1)}
	require.NoError(t, c.Create(ctx, q))
	t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(context.Background(), q)) })
	if state != "" {
		q.Object["status"] = map[string]any{"state": state}
		require.NoError(t, c.Status().Update(ctx, q))
	}
	return q.GetName()
}

func TestAdmissionWarnsOfAMissingOrClosedQueue(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	b := newBackend(t, c, "")
	open, closed := createQueue(t, c, "Open"), createQueue(t, c, "Closed")
	cases := []struct{ queue, want string }{
		{open, ""},
		{closed, `is Closed, not Open`},
		{"no-such-queue", `Volcano queue "no-such-queue" does not exist`},
	}
	for _, tc := range cases {
		warnings, errs := b.ValidatePodCliqueSet(ctx, pcsWithQueues(nil, map[string]string{KeyQueue: tc.queue}))
		require.Empty(t, errs)
		if tc.want == "" {
			assert.Empty(t, warnings, tc.queue)
			continue
		}
		require.Len(t, warnings, 1)
		assert.Contains(t, warnings[0], tc.want)
	}
}

// topologyPCS is a PodCliqueSet on the test ClusterTopology: a standalone router and a scaling
// group "workers" of prefill and decode with replicas == minAvailable (no scaled PodGangs).
func topologyPCS(topologyName string) *corev1alpha1.PodCliqueSet {
	clique := func(n string) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: n, Spec: corev1alpha1.PodCliqueSpec{RoleName: n, Replicas: 1}}
	}
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "inf"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			TopologyConstraint: &corev1alpha1.TopologyConstraint{TopologyName: topologyName},
			Cliques:            []*corev1alpha1.PodCliqueTemplateSpec{clique("router"), clique("prefill"), clique("decode")},
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "workers", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)}},
		}},
	}
}

func TestAdmissionRefusesWhatVolcanoCannotPack(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ct := backendtest.CreateClusterTopology(t, c) // block, rack, host
	b := newBackend(t, c, `{"topologyTiers":[{"key":"example.com/block","tier":2},{"key":"example.com/rack","tier":1}]}`)
	pack := func(required, preferred corev1alpha1.TopologyDomain) *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: required, Preferred: preferred}}
	}
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"required rack on the PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "rack"}
		}, nil},
		{"packDomain on the PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.TopologyConstraint.PackDomain = "block" }, nil},
		{"preferred host on the PodCliqueSet: soft", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Preferred: "host"}
		}, nil},
		{"required host has no tier", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "host"}
		}, []string{"spec.template.topologyConstraint.pack.required"}},
		{"required and a narrower preferred", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "block", Preferred: "rack"}
		}, []string{"spec.template.topologyConstraint.pack.preferred"}},
		{"required and a broader preferred (implied)", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Required: "rack", Preferred: "block"}
		}, nil},
		{"clique in the PodCliqueSet's domain or broader", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.PackDomain = "rack"
			p.Spec.Template.Cliques[0].TopologyConstraint = pack("rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("block", "")
		}, nil},
		{"clique narrower than the PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.PackDomain = "block"
			p.Spec.Template.Cliques[1].TopologyConstraint = pack("rack", "host")
		}, []string{"spec.template.cliques[1].topologyConstraint.pack.required", "spec.template.cliques[1].topologyConstraint.pack.preferred"}},
		{"scaling group narrower than the PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.PackDomain = "block"
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack"}
		}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.packDomain"}},
		{"clique preference inside a soft PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Preferred: "block"}
			p.Spec.Template.Cliques[0].TopologyConstraint = pack("", "host")
		}, nil},
		{"clique requirement inside a soft PodCliqueSet", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Preferred: "block"}
			p.Spec.Template.Cliques[0].TopologyConstraint = pack("rack", "")
		}, []string{"spec.template.cliques[0].topologyConstraint.pack.required"}},
		{"required domain across scaled PodGangs", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.PackDomain = "block"
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
		}, []string{"spec.template.topologyConstraint.packDomain"}},
		{"scaled PodGangs pack on their own at gang level", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack = &corev1alpha1.TopologyPackConstraint{Preferred: "block"}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("", "rack")
		}, nil},
		{"scaled PodGang's required domain needs a tier", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = pack("host", "")
		}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required", // inside the base PodGang
			"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"}}, // no tier for a scaled PodGang
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := topologyPCS(ct.Name)
			tc.mutate(p)
			_, errs := b.ValidatePodCliqueSet(ctx, p)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			assert.Equal(t, tc.paths, paths, "%v", errs)
		})
	}
}

func TestInitFindsThePodGroupAPI(t *testing.T) {
	backendtest.Client(t) // skips with -short
	d, err := discovery.NewDiscoveryClientForConfig(cluster.Shared.Config)
	require.NoError(t, err)
	served, err := podGroupServed(d)
	require.NoError(t, err)
	assert.True(t, served)
	b := &Backend{}
	require.NoError(t, b.Init(context.Background(), backend.InitContext{Discovery: d, Logger: testr.New(t)}))
}
