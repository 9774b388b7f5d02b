package kai

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
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

func createGangs(t *testing.T, c client.Client, gangs ...*schedv1alpha1.PodGang) {
	t.Helper()
	for _, g := range gangs {
		require.NoError(t, c.Create(context.Background(), g))
	}
}

func getPodGroup(t *testing.T, c client.Client, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, found, err := thirdparty.Get(context.Background(), c, PodGroupGVK, client.ObjectKey{Namespace: ns, Name: name})
	require.NoError(t, err)
	require.True(t, found, "KAI PodGroup %s/%s not found", ns, name)
	return u
}

func assertOwnedBy(t *testing.T, obj metav1.Object, apiVersion, kind, name string, uid types.UID) {
	t.Helper()
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}, obj.GetOwnerReferences())
}

func TestPodGangsOfAReplicaBecomeKAIPodGroupsAcceptedByTheRealCRD(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := backendtest.CreateClusterTopology(t, c)
	b := newBackend(t, c, "")

	base, scaled := backendtest.ReplicaGangs(ns, ct.Name)
	for _, g := range append([]*schedv1alpha1.PodGang{base}, scaled...) {
		g.Labels[LabelQueue] = "team-a"
	}
	// The scaling group starts with two replicas: the base gang and one scaled gang.
	createGangs(t, c, base, scaled[0])
	require.NoError(t, b.SyncPodGang(ctx, base))
	require.NoError(t, b.SyncPodGang(ctx, scaled[0]))

	gotBase := getPodGroup(t, c, ns, "inf-0")
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "grove-operator", "grove.io/podgang": "inf-0", "kai.scheduler/queue": "team-a"}, gotBase.GetLabels())
	assert.Equal(t, map[string]string{"grove.io/topology-name": ct.Name}, gotBase.GetAnnotations())
	assertOwnedBy(t, gotBase, "scheduler.grove.io/v1alpha1", "PodGang", "inf-0", base.UID)
	backendtest.JSONEqYAML(t, fmt.Sprintf(`
queue: team-a
priorityClassName: inference-high
minMember: 4
topologyConstraint: {topology: %[1]s, requiredTopologyLevel: example.com/block}
subGroups:
- name: inf-0-workers-0
  minMember: 3
  topologyConstraint: {topology: %[1]s, requiredTopologyLevel: example.com/rack}
- name: inf-0-router
  minMember: 1
- name: inf-0-workers-0-prefill
  parent: inf-0-workers-0
  minMember: 2
  topologyConstraint: {topology: %[1]s, preferredTopologyLevel: kubernetes.io/hostname}
- name: inf-0-workers-0-decode
  parent: inf-0-workers-0
  minMember: 1
`, ct.Name), gotBase.Object["spec"])

	scaledSpec := func(replica int) string {
		return fmt.Sprintf(`
queue: team-a
priorityClassName: inference-high
minMember: 3
topologyConstraint: {topology: %[1]s, requiredTopologyLevel: example.com/rack}
subGroups:
- name: inf-0-workers-%[2]d-prefill
  minMember: 2
  topologyConstraint: {topology: %[1]s, preferredTopologyLevel: kubernetes.io/hostname}
- name: inf-0-workers-%[2]d-decode
  minMember: 1
`, ct.Name, replica)
	}
	gotScaled := getPodGroup(t, c, ns, "inf-0-workers-0")
	assertOwnedBy(t, gotScaled, "scheduler.grove.io/v1alpha1", "PodGang", "inf-0-workers-0", scaled[0].UID)
	backendtest.JSONEqYAML(t, scaledSpec(1), gotScaled.Object["spec"])

	t.Run("an update keeps the fields KAI owns", func(t *testing.T) {
		// KAI (another field manager) sets status and a spec field Grove leaves unset.
		kaiChange := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0"})
		kaiChange.Object["spec"] = map[string]any{"preemptibility": "non-preemptible"}
		require.NoError(t, c.Patch(ctx, kaiChange, client.Merge, client.FieldOwner("kai-scheduler")))
		kaiStatus := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0"})
		kaiStatus.Object["status"] = map[string]any{"schedulingConditions": []any{map[string]any{"nodePool": "default", "reason": "Scheduled"}}}
		require.NoError(t, c.Status().Patch(ctx, kaiStatus, client.Merge, client.FieldOwner("kai-scheduler")))

		// The gang's router now needs two pods and the gang-wide constraint is gone.
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(base), base))
		base.Spec.PodGroups[0].MinReplicas = 2
		base.Spec.TopologyConstraint = nil
		require.NoError(t, c.Update(ctx, base))
		require.NoError(t, b.SyncPodGang(ctx, base))

		got := getPodGroup(t, c, ns, "inf-0")
		backendtest.JSONEqYAML(t, fmt.Sprintf(`
queue: team-a
priorityClassName: inference-high
preemptibility: non-preemptible
minMember: 5
subGroups:
- name: inf-0-workers-0
  minMember: 3
  topologyConstraint: {topology: %[1]s, requiredTopologyLevel: example.com/rack}
- name: inf-0-router
  minMember: 2
- name: inf-0-workers-0-prefill
  parent: inf-0-workers-0
  minMember: 2
  topologyConstraint: {topology: %[1]s, preferredTopologyLevel: kubernetes.io/hostname}
- name: inf-0-workers-0-decode
  parent: inf-0-workers-0
  minMember: 1
`, ct.Name), got.Object["spec"])
		assert.Equal(t, map[string]any{"schedulingConditions": []any{map[string]any{"nodePool": "default", "reason": "Scheduled"}}}, got.Object["status"])
	})

	t.Run("scale-out adds a KAI PodGroup, scale-in removes it", func(t *testing.T) {
		createGangs(t, c, scaled[1])
		require.NoError(t, b.SyncPodGang(ctx, scaled[1]))
		backendtest.JSONEqYAML(t, scaledSpec(2), getPodGroup(t, c, ns, "inf-0-workers-1").Object["spec"])

		require.NoError(t, c.Delete(ctx, scaled[1]))
		backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
			_, found, err := thirdparty.Get(ctx, c, PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0-workers-1"})
			return !found, err
		}, "the garbage collector to delete the KAI PodGroup of the removed PodGang")
		getPodGroup(t, c, ns, "inf-0-workers-0") // the other scaled gang's PodGroup stays
	})
}

func TestSyncPodGangNeverOverwritesAForeignPodGroup(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	foreign := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0"})
	foreign.Object["spec"] = map[string]any{"queue": "someone-else", "minMember": int64(7)}
	require.NoError(t, c.Create(ctx, foreign))

	base, _ := backendtest.ReplicaGangs(ns, "")
	base.Spec.TopologyConstraint, base.Spec.TopologyConstraintGroupConfigs = nil, nil
	for i := range base.Spec.PodGroups {
		base.Spec.PodGroups[i].TopologyConstraint = nil
	}
	base.Labels[LabelQueue] = "team-a"
	createGangs(t, c, base)
	err := newBackend(t, c, "").SyncPodGang(ctx, base)
	var notOwned *thirdparty.NotOwnedError
	require.True(t, errors.As(err, &notOwned), "want NotOwnedError, got %v", err)
	assert.Equal(t, foreign.GetResourceVersion(), getPodGroup(t, c, ns, "inf-0").GetResourceVersion(), "the foreign PodGroup was written")
}

func TestSyncPodGangQueueAndTopologyName(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	external := corev1alpha1.SchedulerReference{SchedulerName: "kai-scheduler", Reference: "kai-managed-elsewhere"}
	ct := backendtest.CreateClusterTopology(t, c, external)

	_, scaled := backendtest.ReplicaGangs(ns, ct.Name)
	createGangs(t, c, scaled[0])
	require.ErrorContains(t, newBackend(t, c, "").SyncPodGang(ctx, scaled[0]), "has no kai.scheduler/queue label")

	require.NoError(t, newBackend(t, c, `{"defaultQueue":"shared"}`).SyncPodGang(ctx, scaled[0]))
	spec := getPodGroup(t, c, ns, scaled[0].Name).Object["spec"].(map[string]any)
	assert.Equal(t, "shared", spec["queue"])
	assert.Equal(t, map[string]any{"topology": "kai-managed-elsewhere", "requiredTopologyLevel": "example.com/rack"}, spec["topologyConstraint"],
		"constraints name the KAI Topology referenced by the ClusterTopology")

	noTopologyName := scaled[1].DeepCopy()
	delete(noTopologyName.Annotations, common.AnnotationTopologyName)
	createGangs(t, c, noTopologyName)
	require.ErrorContains(t, newBackend(t, c, `{"defaultQueue":"shared"}`).SyncPodGang(ctx, noTopologyName), "no grove.io/topology-name annotation")
}

func TestApplyIsCheckedAgainstTheCRDSchema(t *testing.T) {
	c := backendtest.Client(t)
	ns := cluster.Shared.TestNamespace(t)
	bad := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "bad"})
	bad.Object["spec"] = map[string]any{"queue": "q", "minMembers": int64(1)}
	err := thirdparty.Apply(context.Background(), c, bad)
	require.Error(t, err, "an unknown field must fail the write, not be pruned")
	assert.Contains(t, err.Error(), ".spec.minMembers: field not declared in schema")
}

func getTopology(t *testing.T, c client.Client, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u, found, err := thirdparty.Get(context.Background(), c, TopologyGVK, client.ObjectKey{Name: name})
	require.NoError(t, err)
	return u, found
}

func createForeignTopology(t *testing.T, c client.Client, name string, keys ...string) *unstructured.Unstructured {
	t.Helper()
	u := thirdparty.New(TopologyGVK, client.ObjectKey{Name: name})
	var levels []any
	for _, k := range keys {
		levels = append(levels, map[string]any{"nodeLabel": k})
	}
	u.Object["spec"] = map[string]any{"levels": levels}
	require.NoError(t, c.Create(context.Background(), u, client.FieldValidation("Strict")))
	t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(context.Background(), u)) })
	return u
}

func TestKAITopologyFollowsItsClusterTopology(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	b := newBackend(t, c, "")
	ct := backendtest.CreateClusterTopology(t, c)
	t.Cleanup(func() { _ = b.OnTopologyDelete(ctx, ct) })

	require.NoError(t, b.SyncTopology(ctx, ct))
	topo, found := getTopology(t, c, ct.Name)
	require.True(t, found)
	assertOwnedBy(t, topo, "grove.io/v1alpha1", "ClusterTopology", ct.Name, ct.UID)
	backendtest.JSONEqYAML(t, `
levels:
- nodeLabel: example.com/block
- nodeLabel: example.com/rack
- nodeLabel: kubernetes.io/hostname
`, topo.Object["spec"])
	drift, err := b.CheckTopologyDrift(ctx, ct, ct.Name)
	require.NoError(t, err)
	assert.Equal(t, backend.DriftResult{Found: true, InSync: true, ObservedGeneration: topo.GetGeneration()}, drift)

	require.NoError(t, b.SyncTopology(ctx, ct))
	again, _ := getTopology(t, c, ct.Name)
	assert.Equal(t, topo.GetUID(), again.GetUID(), "an unchanged ClusterTopology must not recreate its KAI Topology")

	// KAI's levels are immutable: a changed ClusterTopology gets a new KAI Topology.
	ct.Spec.Levels = ct.Spec.Levels[1:]
	require.NoError(t, c.Update(ctx, ct))
	require.NoError(t, b.SyncTopology(ctx, ct))
	recreated, found := getTopology(t, c, ct.Name)
	require.True(t, found)
	assert.NotEqual(t, topo.GetUID(), recreated.GetUID())
	backendtest.JSONEqYAML(t, `
levels:
- nodeLabel: example.com/rack
- nodeLabel: kubernetes.io/hostname
`, recreated.Object["spec"])

	require.NoError(t, b.OnTopologyDelete(ctx, ct))
	_, found = getTopology(t, c, ct.Name)
	assert.False(t, found)
	require.NoError(t, b.OnTopologyDelete(ctx, ct), "deleting twice is fine")
}

func TestKAITopologyNotOwnedByGroveIsNeverOverwrittenOrDeleted(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	b := newBackend(t, c, "")
	ct := backendtest.CreateClusterTopology(t, c)
	foreign := createForeignTopology(t, c, ct.Name, "example.com/zone", backendtest.KeyHost)

	err := b.SyncTopology(ctx, ct)
	var notOwned *thirdparty.NotOwnedError
	require.True(t, errors.As(err, &notOwned), "want NotOwnedError, got %v", err)
	require.NoError(t, b.OnTopologyDelete(ctx, ct))
	after, found := getTopology(t, c, ct.Name)
	require.True(t, found, "a foreign Topology was deleted")
	assert.Equal(t, foreign.GetResourceVersion(), after.GetResourceVersion(), "a foreign Topology was written")
}

func TestCheckTopologyDriftOfAReferencedKAITopology(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	b := newBackend(t, c, "")
	ct := backendtest.CreateClusterTopology(t, c)
	name := "ext-" + rand.String(5)

	drift, err := b.CheckTopologyDrift(ctx, ct, name)
	require.NoError(t, err)
	assert.Equal(t, backend.DriftResult{Message: fmt.Sprintf("KAI Topology %q not found", name)}, drift)

	same := createForeignTopology(t, c, name, backendtest.KeyBlock, backendtest.KeyRack, backendtest.KeyHost)
	drift, err = b.CheckTopologyDrift(ctx, ct, name)
	require.NoError(t, err)
	assert.Equal(t, backend.DriftResult{Found: true, InSync: true, ObservedGeneration: same.GetGeneration()}, drift)

	reordered := createForeignTopology(t, c, name+"-r", backendtest.KeyRack, backendtest.KeyBlock, backendtest.KeyHost)
	drift, err = b.CheckTopologyDrift(ctx, ct, name+"-r")
	require.NoError(t, err)
	assert.True(t, drift.Found)
	assert.False(t, drift.InSync, "same keys in another order is drift")
	assert.Equal(t, reordered.GetGeneration(), drift.ObservedGeneration)
	assert.Contains(t, drift.Message, `levels ["example.com/rack" "example.com/block" "kubernetes.io/hostname"]`)
}

func TestPodGroupCarriesThePodGangsLabelsAndAnnotations(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	_, scaled := backendtest.ReplicaGangs(ns, "")
	g := scaled[0]
	g.Spec.TopologyConstraint = nil
	for i := range g.Spec.PodGroups {
		g.Spec.PodGroups[i].TopologyConstraint = nil
	}
	// What the operator writes on a PodGang: the PodCliqueSet's labels and annotations, the
	// queue, and the pod-grouper opt-out. Upstream Grove puts the queue in an annotation.
	g.Labels = map[string]string{"kai.scheduler/node-pool": "pool-a", "team": "inference", common.LabelPodGang: "ignored-overwritten"}
	g.Annotations = map[string]string{LabelQueue: "from-annotation", AnnotationSkipPodGrouper: "true", "example.com/owner": "alice"}
	createGangs(t, c, g)
	require.NoError(t, newBackend(t, c, `{"defaultQueue":"shared"}`).SyncPodGang(ctx, g))

	got := getPodGroup(t, c, ns, g.Name)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "grove-operator", common.LabelPodGang: g.Name,
		"kai.scheduler/node-pool": "pool-a", "team": "inference",
	}, got.GetLabels())
	assert.Equal(t, g.Annotations, got.GetAnnotations())
	assert.Equal(t, "from-annotation", got.Object["spec"].(map[string]any)["queue"], "the annotation names the queue when no label does")

	// A label removed from the PodGang leaves the PodGroup too (server-side apply).
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(g), g))
	delete(g.Labels, "team")
	g.Labels[LabelQueue] = "from-label"
	require.NoError(t, c.Update(ctx, g))
	require.NoError(t, newBackend(t, c, "").SyncPodGang(ctx, g))
	got = getPodGroup(t, c, ns, g.Name)
	assert.NotContains(t, got.GetLabels(), "team")
	assert.Equal(t, "from-label", got.Object["spec"].(map[string]any)["queue"], "the label wins over the annotation")
}

func initWithDiscovery(t *testing.T, c client.Client, config string) *Backend {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Shared.Config)
	require.NoError(t, err)
	b := &Backend{}
	require.NoError(t, b.Init(context.Background(), backend.InitContext{Client: c, APIReader: c, Discovery: dc, Logger: testr.New(t), Config: []byte(config)}))
	return b
}

// KAI's stale-gang eviction is turned off on Grove's PodGroups where the PodGroup API has
// spec.stalenessGracePeriod. The vendored KAI CRD has it; the test takes it out of the served
// schema (as on a KAI before v0.17) and checks both states against the apiserver.
func TestStaleGangEvictionIsOffWhereKAIOffersIt(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	gang := func(name string) *schedv1alpha1.PodGang {
		g := backendtest.PodGang(ns, name, "", []schedv1alpha1.PodGroup{{Name: name + "-a", MinReplicas: 2, PodReferences: []schedv1alpha1.NamespacedName{}}})
		createGangs(t, c, g)
		return g
	}

	current := initWithDiscovery(t, c, `{"defaultQueue":"q"}`)
	require.True(t, current.disableStaleEviction, "the vendored KAI CRD has stalenessGracePeriod")
	require.NoError(t, current.SyncPodGang(ctx, gang("current")))
	assert.Equal(t, "-1s", getPodGroup(t, c, ns, "current").Object["spec"].(map[string]any)["stalenessGracePeriod"])

	withoutSpecField(t, c, "stalenessGracePeriod")
	var older *Backend
	backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
		older = initWithDiscovery(t, c, `{"defaultQueue":"q"}`)
		return !older.disableStaleEviction, nil
	}, "the OpenAPI schema to drop spec.stalenessGracePeriod")
	require.NoError(t, older.SyncPodGang(ctx, gang("older")))
	assert.NotContains(t, getPodGroup(t, c, ns, "older").Object["spec"], "stalenessGracePeriod")
}

// A PodCliqueSet-level required domain over scaled PodGangs: with the real CRD (which has
// minSubGroup) the replica becomes one KAI PodGroup named after its base PodGang, and a
// scale-out adds its gang there instead of a PodGroup of its own. Without minSubGroup in the
// served schema the backend refuses such a PodCliqueSet.
func TestAReplicaWideDomainIsOneKAIPodGroup(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := backendtest.CreateClusterTopology(t, c)
	b := initWithDiscovery(t, c, "")
	require.True(t, b.nestedSubGroups, "the vendored KAI CRD has minSubGroup")

	p := replicaWide(pcs(map[string]string{LabelQueue: "team-a"}, nil), 3)
	_, errs := b.ValidatePodCliqueSet(ctx, p)
	require.Empty(t, errs, "KAI with minSubGroup keeps the replica in one domain")
	_, annotations := b.PodGangMetadata(p)
	require.Equal(t, "true", annotations[AnnotationReplicaPodGroup])

	base, scaled := backendtest.ReplicaGangs(ns, ct.Name)
	sharedBlock(append(scaled, base)...)
	for _, g := range append([]*schedv1alpha1.PodGang{base}, scaled...) {
		g.Labels[LabelQueue] = "team-a"
	}
	createGangs(t, c, base, scaled[0])
	require.NoError(t, b.SyncPodGang(ctx, scaled[0]), "a scaled gang synced first writes the replica's PodGroup too")
	require.NoError(t, b.SyncPodGang(ctx, base))
	got := getPodGroup(t, c, ns, "inf-0")
	assertOwnedBy(t, got, "scheduler.grove.io/v1alpha1", "PodGang", "inf-0", base.UID)
	spec := got.Object["spec"].(map[string]any)
	kaiAdmits(t, spec)
	assert.Equal(t, map[string]any{"topology": ct.Name, "requiredTopologyLevel": backendtest.KeyBlock}, spec["topologyConstraint"])
	assert.Equal(t, "-1s", spec["stalenessGracePeriod"])
	assert.Equal(t, []string{"inf-0", "inf-0-workers-0", "inf-0-router", "inf-0-workers-0-prefill", "inf-0-workers-0-decode",
		"inf-0-scaled-podgangs", "inf-0-workers-0-podgang", "inf-0-workers-1-prefill", "inf-0-workers-1-decode"}, subGroupNamesOf(spec))
	_, found, err := thirdparty.Get(ctx, c, PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "inf-0-workers-0"})
	require.NoError(t, err)
	assert.False(t, found, "a scaled gang of a replica PodGroup has no KAI PodGroup of its own")

	createGangs(t, c, scaled[1])
	require.NoError(t, b.SyncPodGang(ctx, scaled[1]))
	spec = getPodGroup(t, c, ns, "inf-0").Object["spec"].(map[string]any)
	kaiAdmits(t, spec)
	assert.Contains(t, subGroupNamesOf(spec), "inf-0-workers-2-decode", "the scale-out's gang joins the replica's PodGroup")

	pod := backendtest.Pod()
	b.PreparePod(pod, backend.PodGangRef{Name: scaled[1].Name, PodGroup: "inf-0-workers-2-decode", SharedGroup: "inf-0"})
	assert.Equal(t, "inf-0", pod.Annotations[AnnotationPodGroupName], "the pod joins the replica's PodGroup")
	assert.Equal(t, "inf-0-workers-2-decode", pod.Labels[LabelSubGroupName])

	withoutSpecField(t, c, "minSubGroup")
	var older *Backend
	backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
		older = initWithDiscovery(t, c, "")
		return !older.nestedSubGroups, nil
	}, "the OpenAPI schema to drop spec.minSubGroup")
	_, errs = older.ValidatePodCliqueSet(ctx, p)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.topologyConstraint.pack.required", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "has no minSubGroup")
	pod = backendtest.Pod()
	older.PreparePod(pod, backend.PodGangRef{Name: scaled[1].Name, PodGroup: "inf-0-workers-2-decode", SharedGroup: "inf-0"})
	assert.Equal(t, scaled[1].Name, pod.Annotations[AnnotationPodGroupName], "without minSubGroup each PodGang is its own PodGroup")
}

func subGroupNamesOf(spec map[string]any) []string {
	var names []string
	for _, s := range spec["subGroups"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	return names
}

// withoutSpecField removes a spec field from the served KAI PodGroup schema of this test
// binary's control plane (as on an older KAI) and restores the schema when the test ends.
func withoutSpecField(t *testing.T, c client.Client, field string) {
	t.Helper()
	ctx := context.Background()
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "podgroups.scheduling.run.ai"}, crd))
	original := crd.DeepCopy()
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	found := false
	for i, v := range versions {
		vm := v.(map[string]any)
		if vm["name"] != PodGroupGVK.Version {
			continue
		}
		unstructured.RemoveNestedField(vm, "schema", "openAPIV3Schema", "properties", "spec", "properties", field)
		versions[i], found = vm, true
	}
	require.True(t, found)
	require.NoError(t, unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"))
	require.NoError(t, c.Update(ctx, crd))
	t.Cleanup(func() {
		restore := &unstructured.Unstructured{}
		restore.SetGroupVersionKind(original.GroupVersionKind())
		if err := c.Get(ctx, client.ObjectKey{Name: original.GetName()}, restore); err != nil {
			t.Errorf("restoring the KAI PodGroup CRD: %v", err)
			return
		}
		restore.Object["spec"] = original.Object["spec"]
		if err := c.Update(ctx, restore); err != nil {
			t.Errorf("restoring the KAI PodGroup CRD: %v", err)
		}
		// Later tests read the schema through discovery: wait until it serves the field again.
		dc, err := discovery.NewDiscoveryClientForConfig(cluster.Shared.Config)
		if err != nil {
			t.Errorf("restoring the KAI PodGroup CRD: %v", err)
			return
		}
		backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
			return podGroupHasSpecField(dc, field)
		}, "the restored schema to serve spec."+field)
	})
}
