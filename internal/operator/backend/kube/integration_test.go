package kube

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The podgroup-protection controller lets a PodGroup go once no pod uses it, as on a real
// cluster (the apiserver's PodGroupProtection admission puts its finalizer on every PodGroup).
var podGroupProtection = []string{"podgroup-protection-controller"}

// fullWorkloadAPIOptions serve PodGroups with topology constraints and CompositePodGroups.
var fullWorkloadAPIOptions = cluster.Options{
	FeatureGates:     map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true},
	RuntimeConfig:    []string{"scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"},
	ExtraControllers: podGroupProtection,
}

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, fullWorkloadAPIOptions))
}

// logLines collects what a backend logs.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{Verbosity: 1})
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// newBackend initialises a backend against the apiserver of cfg, as grove-operator does.
func newBackend(t *testing.T, cfg *rest.Config, c client.Client) (*Backend, *logLines) {
	t.Helper()
	logs := &logLines{}
	b := &Backend{}
	require.NoError(t, b.Init(context.Background(), backend.InitContext{
		Client: c, APIReader: c, Discovery: discovery.NewDiscoveryClientForConfigOrDie(cfg), Logger: logs.logger(),
	}))
	return b, logs
}

// clientFor is an admin client of another control plane.
func clientFor(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: backendtest.Scheme()})
	require.NoError(t, err)
	return c
}

// ensurePriorityClass creates the PriorityClass the test gangs name (value 1000).
func ensurePriorityClass(t *testing.T, c client.Client) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "inference-high"}, Value: 1000}
	if err := c.Create(context.Background(), pc); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// requiredOnlyGangs are backendtest.ReplicaGangs without the preferred host of prefill, which
// the Workload API cannot express: base "inf-0" (router + workers replica 0, block, the
// replica packed into a rack) and scaled "inf-0-workers-0" / "inf-0-workers-1" (rack).
func requiredOnlyGangs(ns string) (*schedv1alpha1.PodGang, []*schedv1alpha1.PodGang) {
	base, scaled := backendtest.ReplicaGangs(ns, "")
	for _, g := range append([]*schedv1alpha1.PodGang{base}, scaled...) {
		for i := range g.Spec.PodGroups {
			if g.Spec.PodGroups[i].TopologyConstraint.Preferred() != "" {
				g.Spec.PodGroups[i].TopologyConstraint = nil
			}
		}
	}
	return base, scaled
}

// group is a PodGroup whose pods are not created yet.
func group(name string, minReplicas int32, tc *schedv1alpha1.TopologyConstraint) schedv1alpha1.PodGroup {
	return schedv1alpha1.PodGroup{Name: name, MinReplicas: minReplicas, TopologyConstraint: tc, PodReferences: []schedv1alpha1.NamespacedName{}}
}

func createGangs(t *testing.T, c client.Client, gangs ...*schedv1alpha1.PodGang) {
	t.Helper()
	for _, g := range gangs {
		require.NoError(t, c.Create(context.Background(), g))
	}
}

func getPodGroup(t *testing.T, c client.Client, ns, name string) *schedulingv1beta1.PodGroup {
	t.Helper()
	pg := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg), "PodGroup %s", name)
	return pg
}

func getCompositePodGroup(t *testing.T, c client.Client, ns, name string) *schedulingv1alpha3.CompositePodGroup {
	t.Helper()
	cpg := &schedulingv1alpha3.CompositePodGroup{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cpg), "CompositePodGroup %s", name)
	return cpg
}

// names lists the names of the objects of a list kind in a namespace.
func names(t *testing.T, c client.Client, ns string, list client.ObjectList) []string {
	t.Helper()
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(ns)))
	var out []string
	switch l := list.(type) {
	case *schedulingv1beta1.PodGroupList:
		for _, it := range l.Items {
			out = append(out, it.Name)
		}
	case *schedulingv1alpha3.CompositePodGroupList:
		for _, it := range l.Items {
			out = append(out, it.Name)
		}
	}
	return out
}

// eventuallyNames waits until the namespace holds exactly these objects of a kind.
func eventuallyNames(t *testing.T, c client.Client, ns string, list client.ObjectList, want []string, what string) {
	t.Helper()
	var got []string
	backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
		got = names(t, c, ns, list)
		return assert.ObjectsAreEqual(want, got) || (len(want) == 0 && len(got) == 0), nil
	}, what)
}

func assertOwnedByGang(t *testing.T, obj metav1.Object, gang string, uid types.UID) {
	t.Helper()
	assert.Equal(t, []metav1.OwnerReference{{APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Name: gang, UID: uid, Controller: ptr.To(true)}},
		obj.GetOwnerReferences(), obj.GetName())
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "grove-operator", "grove.io/podgang": gang}, obj.GetLabels(), obj.GetName())
}

func TestInitDiscoversTheFullWorkloadAPI(t *testing.T) {
	c := backendtest.Client(t)
	b, logs := newBackend(t, cluster.Shared.Config, c)
	assert.Equal(t, WorkloadAPI{PodGroups: true, TopologyConstraints: true, CompositePodGroups: true}, b.WorkloadAPI())
	assert.Contains(t, logs.String(), `"msg"="`+GangCompositeMessage+`" "gangSchedulingAvailable"=true`)
}

// TestPodGangsOfAReplicaBecomeCompositePodGroups writes the objects of a PodCliqueSet replica
// with a scaling group (replicas 3, minAvailable 1) and three-level topology, compares what
// the real apiserver stored with the expected objects, then scales.
func TestPodGangsOfAReplicaBecomeCompositePodGroups(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ensurePriorityClass(t, c)
	b, _ := newBackend(t, cluster.Shared.Config, c)

	base, scaled := requiredOnlyGangs(ns)
	createGangs(t, c, base, scaled[0])
	require.NoError(t, b.SyncPodGang(ctx, base))
	require.NoError(t, b.SyncPodGang(ctx, scaled[0]))

	assert.ElementsMatch(t, []string{"inf-0", "inf-0-inf-0-workers-0", "inf-0-workers-0"},
		names(t, c, ns, &schedulingv1alpha3.CompositePodGroupList{}))
	assert.ElementsMatch(t, []string{"inf-0-inf-0-router", "inf-0-inf-0-workers-0-prefill", "inf-0-inf-0-workers-0-decode",
		"inf-0-workers-0-inf-0-workers-1-prefill", "inf-0-workers-0-inf-0-workers-1-decode"},
		names(t, c, ns, &schedulingv1beta1.PodGroupList{}))

	// The base gang: router and the packed workers replica 0 must all be placed.
	root := getCompositePodGroup(t, c, ns, "inf-0")
	assertOwnedByGang(t, root, "inf-0", base.UID)
	backendtest.JSONEqYAML(t, `
workloadRef: {workloadName: inf-0, templateName: podgang}
schedulingPolicy: {gang: {minGroupCount: 2}}
schedulingConstraints: {topology: [{key: example.com/block}]}
priorityClassName: inference-high
priority: 1000
disruptionMode: {single: {}}
`, root.Spec)
	replica0 := getCompositePodGroup(t, c, ns, "inf-0-inf-0-workers-0")
	assertOwnedByGang(t, replica0, "inf-0", base.UID)
	backendtest.JSONEqYAML(t, `
parentCompositePodGroupName: inf-0
workloadRef: {workloadName: inf-0, templateName: topology-group}
schedulingPolicy: {gang: {minGroupCount: 2}}
schedulingConstraints: {topology: [{key: example.com/rack}]}
priorityClassName: inference-high
priority: 1000
disruptionMode: {single: {}}
`, replica0.Spec)
	podGroupSpec := func(parent string, minCount int, gang string) string {
		return fmt.Sprintf(`
parentCompositePodGroupName: %s
workloadRef: {workloadName: %s, templateName: podclique}
schedulingPolicy: {gang: {minCount: %d}}
priorityClassName: inference-high
priority: 1000
disruptionMode: {single: {}}
`, parent, gang, minCount)
	}
	for name, want := range map[string]string{
		"inf-0-inf-0-router":            podGroupSpec("inf-0", 1, "inf-0"),
		"inf-0-inf-0-workers-0-prefill": podGroupSpec("inf-0-inf-0-workers-0", 2, "inf-0"),
		"inf-0-inf-0-workers-0-decode":  podGroupSpec("inf-0-inf-0-workers-0", 1, "inf-0"),
	} {
		got := getPodGroup(t, c, ns, name)
		assertOwnedByGang(t, got, "inf-0", base.UID)
		assert.Equal(t, []string{"scheduling.k8s.io/podgroup-protection"}, got.Finalizers, name)
		backendtest.JSONEqYAML(t, want, got.Spec, name)
	}

	// The scaled gang of workers replica 1, packed into a rack as a whole.
	scaledRoot := getCompositePodGroup(t, c, ns, "inf-0-workers-0")
	assertOwnedByGang(t, scaledRoot, "inf-0-workers-0", scaled[0].UID)
	backendtest.JSONEqYAML(t, `
workloadRef: {workloadName: inf-0-workers-0, templateName: podgang}
schedulingPolicy: {gang: {minGroupCount: 2}}
schedulingConstraints: {topology: [{key: example.com/rack}]}
priorityClassName: inference-high
priority: 1000
disruptionMode: {single: {}}
`, scaledRoot.Spec)
	backendtest.JSONEqYAML(t, podGroupSpec("inf-0-workers-0", 2, "inf-0-workers-0"), getPodGroup(t, c, ns, "inf-0-workers-0-inf-0-workers-1-prefill").Spec)
	backendtest.JSONEqYAML(t, podGroupSpec("inf-0-workers-0", 1, "inf-0-workers-0"), getPodGroup(t, c, ns, "inf-0-workers-0-inf-0-workers-1-decode").Spec)

	t.Run("a pod prepared for its PodGroup is accepted and joins it", func(t *testing.T) {
		pod := backendtest.Pod()
		pod.Namespace, pod.Name = ns, "inf-0-workers-1-prefill-0"
		b.PreparePod(pod, backend.PodGangRef{Name: "inf-0-workers-0", PodGroup: "inf-0-workers-1-prefill"})
		require.NoError(t, c.Create(ctx, pod))
		stored := &corev1.Pod{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), stored))
		assert.Equal(t, "default-scheduler", stored.Spec.SchedulerName)
		require.NotNil(t, stored.Spec.SchedulingGroup, "the apiserver dropped spec.schedulingGroup")
		joined := getPodGroup(t, c, ns, ptr.Deref(stored.Spec.SchedulingGroup.PodGroupName, ""))
		assert.Equal(t, ptr.To("inf-0-workers-0"), joined.Spec.ParentCompositePodGroupName, "the pod's PodGroup is the one of its PodClique in its PodGang")
		assert.Equal(t, int32(2), joined.Spec.SchedulingPolicy.Gang.MinCount)
		require.NoError(t, c.Delete(ctx, stored, client.GracePeriodSeconds(0)))
	})

	t.Run("an unchanged sync rewrites nothing", func(t *testing.T) {
		before := getPodGroup(t, c, ns, "inf-0-inf-0-router").ResourceVersion
		rootBefore := getCompositePodGroup(t, c, ns, "inf-0").ResourceVersion
		require.NoError(t, b.SyncPodGang(ctx, base))
		assert.Equal(t, before, getPodGroup(t, c, ns, "inf-0-inf-0-router").ResourceVersion)
		assert.Equal(t, rootBefore, getCompositePodGroup(t, c, ns, "inf-0").ResourceVersion)
	})

	t.Run("minAvailable of a PodClique updates its PodGroup in place", func(t *testing.T) {
		uid := getPodGroup(t, c, ns, "inf-0-inf-0-router").UID
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(base), base))
		base.Spec.PodGroups[0].MinReplicas = 2
		require.NoError(t, c.Update(ctx, base))
		require.NoError(t, b.SyncPodGang(ctx, base))
		got := getPodGroup(t, c, ns, "inf-0-inf-0-router")
		assert.Equal(t, uid, got.UID)
		assert.Equal(t, int32(2), got.Spec.SchedulingPolicy.Gang.MinCount)
	})

	// minAvailable of the scaling group 1 -> 2: workers replica 1 moves into the base gang.
	replica1 := func(gang *schedv1alpha1.PodGang) {
		gang.Spec.PodGroups = append(gang.Spec.PodGroups, scaled[0].Spec.PodGroups...)
		gang.Spec.TopologyConstraintGroupConfigs = append(gang.Spec.TopologyConstraintGroupConfigs, schedv1alpha1.TopologyConstraintGroupConfig{
			Name: "inf-0-workers-1", PodGroupNames: []string{"inf-0-workers-1-prefill", "inf-0-workers-1-decode"},
			TopologyConstraint: scaled[0].Spec.TopologyConstraint.DeepCopy()})
	}
	t.Run("a group more in the gang: new PodGroups, a new nested CompositePodGroup, the root recreated", func(t *testing.T) {
		rootUID := getCompositePodGroup(t, c, ns, "inf-0").UID
		routerUID := getPodGroup(t, c, ns, "inf-0-inf-0-router").UID
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(base), base))
		replica1(base)
		require.NoError(t, c.Update(ctx, base))
		require.NoError(t, b.SyncPodGang(ctx, base))

		got := getCompositePodGroup(t, c, ns, "inf-0")
		assert.NotEqual(t, rootUID, got.UID, "minGroupCount is immutable: the root CompositePodGroup is created anew")
		assert.Equal(t, &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: 3}, got.Spec.SchedulingPolicy.Gang)
		assert.Equal(t, routerUID, getPodGroup(t, c, ns, "inf-0-inf-0-router").UID, "unchanged PodGroups stay")
		backendtest.JSONEqYAML(t, `
parentCompositePodGroupName: inf-0
workloadRef: {workloadName: inf-0, templateName: topology-group}
schedulingPolicy: {gang: {minGroupCount: 2}}
schedulingConstraints: {topology: [{key: example.com/rack}]}
priorityClassName: inference-high
priority: 1000
disruptionMode: {single: {}}
`, getCompositePodGroup(t, c, ns, "inf-0-inf-0-workers-1").Spec)
		backendtest.JSONEqYAML(t, podGroupSpec("inf-0-inf-0-workers-1", 2, "inf-0"), getPodGroup(t, c, ns, "inf-0-inf-0-workers-1-prefill").Spec)
		backendtest.JSONEqYAML(t, podGroupSpec("inf-0-inf-0-workers-1", 1, "inf-0"), getPodGroup(t, c, ns, "inf-0-inf-0-workers-1-decode").Spec)
	})

	t.Run("scale-in deletes the objects of removed groups", func(t *testing.T) {
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(base), base))
		base.Spec.PodGroups = base.Spec.PodGroups[:3]
		base.Spec.TopologyConstraintGroupConfigs = base.Spec.TopologyConstraintGroupConfigs[:1]
		require.NoError(t, c.Update(ctx, base))
		require.NoError(t, b.SyncPodGang(ctx, base))
		eventuallyNames(t, c, ns, &schedulingv1beta1.PodGroupList{}, []string{
			"inf-0-inf-0-router", "inf-0-inf-0-workers-0-decode", "inf-0-inf-0-workers-0-prefill",
			"inf-0-workers-0-inf-0-workers-1-decode", "inf-0-workers-0-inf-0-workers-1-prefill"}, "the PodGroups of workers replica 1 in the base gang to go")
		eventuallyNames(t, c, ns, &schedulingv1alpha3.CompositePodGroupList{}, []string{"inf-0", "inf-0-inf-0-workers-0", "inf-0-workers-0"},
			"the nested CompositePodGroup of workers replica 1 to go")
		assert.Equal(t, int32(2), getCompositePodGroup(t, c, ns, "inf-0").Spec.SchedulingPolicy.Gang.MinGroupCount)
	})

	t.Run("a removed PodGang takes its objects along", func(t *testing.T) {
		require.NoError(t, c.Delete(ctx, scaled[0]))
		eventuallyNames(t, c, ns, &schedulingv1alpha3.CompositePodGroupList{}, []string{"inf-0", "inf-0-inf-0-workers-0"},
			"the garbage collector to delete the scaled gang's CompositePodGroup")
		eventuallyNames(t, c, ns, &schedulingv1beta1.PodGroupList{}, []string{"inf-0-inf-0-router", "inf-0-inf-0-workers-0-decode", "inf-0-inf-0-workers-0-prefill"},
			"the garbage collector to delete the scaled gang's PodGroups")
	})
}

// A PodGroup whose topology key changes must be created anew (schedulingConstraints is
// immutable), which the apiserver holds back while a pod still uses it.
func TestAPodGroupWithAnImmutableChangeIsReplacedOnceItsPodsAreGone(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	b, _ := newBackend(t, cluster.Shared.Config, c)
	gang := backendtest.PodGang(ns, "solo-0", "", []schedv1alpha1.PodGroup{group("solo-0-a", 1,
		&schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(backendtest.KeyRack)}})})
	createGangs(t, c, gang)
	require.NoError(t, b.SyncPodGang(ctx, gang))
	old := getPodGroup(t, c, ns, "solo-0-solo-0-a")
	pod := backendtest.Pod()
	pod.Namespace, pod.Name = ns, "solo-0-a-0"
	b.PreparePod(pod, backend.PodGangRef{Name: "solo-0", PodGroup: "solo-0-a"})
	require.NoError(t, c.Create(ctx, pod))

	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gang), gang))
	gang.Spec.PodGroups[0].TopologyConstraint.PackConstraint.Required = ptr.To(backendtest.KeyBlock)
	require.NoError(t, c.Update(ctx, gang))
	err := b.SyncPodGang(ctx, gang)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PodGroup "+ns+"/solo-0-solo-0-a: spec.schedulingConstraints is immutable and changed; the object is being deleted and is created anew once the pods that use it are gone")
	held := getPodGroup(t, c, ns, "solo-0-solo-0-a")
	assert.Equal(t, old.UID, held.UID)
	assert.NotNil(t, held.DeletionTimestamp, "the PodGroup is being deleted while its pod holds it")
	require.ErrorContains(t, b.SyncPodGang(ctx, gang), "is being deleted (pods that still use it keep it)")

	require.NoError(t, c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	backendtest.Eventually(t, 30*time.Second, func() (bool, error) {
		return b.SyncPodGang(ctx, gang) == nil, nil
	}, "the PodGroup to go once its pod is gone and be created anew")
	replaced := getPodGroup(t, c, ns, "solo-0-solo-0-a")
	assert.NotEqual(t, old.UID, replaced.UID)
	assert.Equal(t, &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: backendtest.KeyBlock}}},
		replaced.Spec.SchedulingConstraints)
}

func TestSyncPodGangNeverOverwritesAForeignPodGroup(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	foreign := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "solo-0-solo-0-a"},
		Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 7}}},
	}
	require.NoError(t, c.Create(ctx, foreign))
	gang := backendtest.PodGang(ns, "solo-0", "", []schedv1alpha1.PodGroup{group("solo-0-a", 1, nil)})
	createGangs(t, c, gang)
	b, _ := newBackend(t, cluster.Shared.Config, c)
	err := b.SyncPodGang(ctx, gang)
	var notOwned *thirdparty.NotOwnedError
	require.True(t, errors.As(err, &notOwned), "want NotOwnedError, got %v", err)
	assert.Equal(t, foreign.ResourceVersion, getPodGroup(t, c, ns, "solo-0-solo-0-a").ResourceVersion, "the foreign PodGroup was written")
}

// PodGroups without the topology gate and without CompositePodGroups: each PodClique is a gang
// of its own and required keys are rejected.
func TestPodGroupsWithoutTopologyOrCompositePodGroups(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := cluster.StartForTest(t, cluster.Options{
		FeatureGates:     map[string]bool{"GenericWorkload": true},
		RuntimeConfig:    []string{"scheduling.k8s.io/v1beta1=true"},
		ExtraControllers: podGroupProtection,
	})
	c := clientFor(t, cp.Config)
	ctx := context.Background()
	ns := cp.TestNamespace(t)
	b, logs := newBackend(t, cp.Config, c)
	assert.Equal(t, WorkloadAPI{PodGroups: true}, b.WorkloadAPI(), "the dry-run probe finds the topology gate off")
	assert.Contains(t, logs.String(), GangPerPodGroupMessage)

	gang := backendtest.PodGang(ns, "inf-0", "", []schedv1alpha1.PodGroup{group("inf-0-router", 1, nil), group("inf-0-workers-0-prefill", 2, nil)})
	createGangs(t, c, gang)
	require.NoError(t, b.SyncPodGang(ctx, gang))
	assert.ElementsMatch(t, []string{"inf-0-inf-0-router", "inf-0-inf-0-workers-0-prefill"}, names(t, c, ns, &schedulingv1beta1.PodGroupList{}))
	prefill := getPodGroup(t, c, ns, "inf-0-inf-0-workers-0-prefill")
	assertOwnedByGang(t, prefill, "inf-0", gang.UID)
	backendtest.JSONEqYAML(t, `
schedulingPolicy: {gang: {minCount: 2}}
priority: 0
disruptionMode: {single: {}}
`, prefill.Spec)

	pod := backendtest.Pod()
	pod.Namespace, pod.Name = ns, "inf-0-router-0"
	b.PreparePod(pod, backend.PodGangRef{Name: "inf-0", PodGroup: "inf-0-router"})
	require.NoError(t, c.Create(ctx, pod))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), pod))
	assert.Equal(t, &corev1.PodSchedulingGroup{PodGroupName: ptr.To("inf-0-inf-0-router")}, pod.Spec.SchedulingGroup)

	// Admitted elsewhere, a required key reaches SyncPodGang: it fails instead of being dropped.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(gang), gang))
	gang.Spec.PodGroups[1].TopologyConstraint = &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(backendtest.KeyRack)}}
	require.NoError(t, c.Update(ctx, gang))
	require.ErrorContains(t, b.SyncPodGang(ctx, gang), "the apiserver does not keep PodGroup topology constraints")

	// The scaling group gives the PodCliqueSet two cliques: each is a gang on its own.
	warnings, errs := b.ValidatePodCliqueSet(ctx, pcsWithConstraints(func(t *corev1alpha1.PodCliqueSetTemplateSpec) {
		t.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack"}
	}))
	assert.Equal(t, []string{GangPerPodCliqueWarning}, warnings)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.cliques[0].topologyConstraint.packDomain", errs[0].Field)
	assert.Equal(t, TopologyGateOffMessage, errs[0].Detail)
}

// Without the Workload API: plain default scheduling, reported as such.
func TestWithoutTheWorkloadAPIPodsAreScheduledOneByOne(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := cluster.StartForTest(t, cluster.Options{})
	c := clientFor(t, cp.Config)
	ctx := context.Background()
	ns := cp.TestNamespace(t)
	b, logs := newBackend(t, cp.Config, c)
	assert.Equal(t, WorkloadAPI{}, b.WorkloadAPI())
	assert.Contains(t, logs.String(), `"msg"="`+GangUnavailableMessage+`" "gangSchedulingAvailable"=false`, "the start-up log line")
	available, message := b.GangSchedulingAvailable()
	assert.False(t, available)
	assert.Equal(t, GangUnavailableMessage, message)

	gang := backendtest.PodGang(ns, "inf-0", "", []schedv1alpha1.PodGroup{group("inf-0-router", 1, nil)})
	createGangs(t, c, gang)
	require.NoError(t, b.SyncPodGang(ctx, gang), "nothing to write")
	err := c.List(ctx, &schedulingv1beta1.PodGroupList{}, client.InNamespace(ns))
	assert.True(t, meta.IsNoMatchError(err), "the PodGroup API is not served here: %v", err)

	pod := backendtest.Pod()
	pod.Namespace, pod.Name = ns, "inf-0-router-0"
	b.PreparePod(pod, backend.PodGangRef{Name: "inf-0", PodGroup: "inf-0-router"})
	require.NoError(t, c.Create(ctx, pod))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pod), pod))
	assert.Equal(t, "default-scheduler", pod.Spec.SchedulerName)
	assert.Nil(t, pod.Spec.SchedulingGroup)
}
