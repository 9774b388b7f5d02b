package clustertopology

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/kai"
	"github.com/ai-dynamo/grove/internal/operator/backend/koordinator"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, cluster.Options{WithThirdPartyCRDs: true}))
}

const (
	keyBlock = "example.com/block"
	keyRack  = "example.com/rack"
	keyHost  = "kubernetes.io/hostname"
	timeout  = 30 * time.Second
)

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, corev1alpha1.AddToScheme, schedv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

func directClient(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	ctrllog.SetLogger(testr.New(t))
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: scheme()})
	require.NoError(t, err)
	return c
}

// plainBackend is an enabled backend without topology objects (like the native grove backend).
type plainBackend struct{}

func (plainBackend) Name() configv1alpha1.SchedulerName                        { return configv1alpha1.SchedulerNameGrove }
func (plainBackend) Init(context.Context, backend.InitContext) error           { return nil }
func (plainBackend) SyncPodGang(context.Context, *schedv1alpha1.PodGang) error { return nil }
func (plainBackend) PreparePod(*corev1.Pod, backend.PodGangRef)                {}
func (plainBackend) ValidatePodCliqueSet(context.Context, *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	return nil, nil
}

// newRegistry enables grove-scheduler (no topology object), kai-scheduler and koord-scheduler.
func newRegistry(t *testing.T, ic backend.InitContext) *backend.Registry {
	t.Helper()
	cfg := configv1alpha1.SchedulerConfiguration{
		DefaultProfileName: configv1alpha1.SchedulerNameKAI,
		Profiles: []configv1alpha1.SchedulerProfile{
			{Name: configv1alpha1.SchedulerNameGrove},
			{Name: configv1alpha1.SchedulerNameKAI},
			{Name: configv1alpha1.SchedulerNameKoordinator, Config: &runtime.RawExtension{Raw: []byte(
				`{"topologyLayers":{"rack":{"key":"example.com/rack","layer":"RackLayer"},"block":{"key":"example.com/block","layer":"BlockLayer"}}}`)}},
		},
	}
	reg, err := backend.NewRegistry(cfg, map[configv1alpha1.SchedulerName]backend.Factory{
		configv1alpha1.SchedulerNameGrove:       func() backend.Backend { return plainBackend{} },
		configv1alpha1.SchedulerNameKAI:         kai.New,
		configv1alpha1.SchedulerNameKoordinator: koordinator.New,
	})
	require.NoError(t, err)
	ic.Logger = testr.New(t)
	require.NoError(t, reg.Init(context.Background(), ic, cfg))
	return reg
}

// startController runs a manager with the ClusterTopology controller until the test ends.
func startController(t *testing.T) client.Client {
	t.Helper()
	c := directClient(t)
	mgr, err := ctrl.NewManager(cluster.Shared.Config, ctrl.Options{
		Scheme:                 scheme(),
		Logger:                 testr.New(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	reg := newRegistry(t, backend.InitContext{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("test")})
	require.NoError(t, SetupWithManager(mgr, reg, configv1alpha1.ConcurrencyConfiguration{}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return c
}

func levels(keys ...string) []corev1alpha1.TopologyLevel {
	domains := map[string]corev1alpha1.TopologyDomain{keyBlock: "block", keyRack: "rack", keyHost: "host"}
	var l []corev1alpha1.TopologyLevel
	for _, k := range keys {
		l = append(l, corev1alpha1.TopologyLevel{Domain: domains[k], Key: k})
	}
	return l
}

func createClusterTopology(t *testing.T, c client.Client, refs ...corev1alpha1.SchedulerReference) *corev1alpha1.ClusterTopology {
	t.Helper()
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "topo-" + rand.String(6)},
		Spec:       corev1alpha1.ClusterTopologySpec{Levels: levels(keyBlock, keyRack, keyHost), SchedulerReferences: refs},
	}
	require.NoError(t, c.Create(context.Background(), ct))
	t.Cleanup(func() {
		// Without a running controller the finalizer would keep it forever.
		ctx := context.Background()
		if err := c.Get(ctx, client.ObjectKeyFromObject(ct), ct); err == nil {
			patch := client.MergeFrom(ct.DeepCopy())
			ct.Finalizers = nil
			_ = c.Patch(ctx, ct, patch)
			_ = client.IgnoreNotFound(c.Delete(ctx, ct))
		}
	})
	return ct
}

var (
	kaiTopologyGVK            = schema.GroupVersionKind{Group: "kai.scheduler", Version: "v1alpha1", Kind: "Topology"}
	clusterNetworkTopologyGVK = schema.GroupVersionKind{Group: "scheduling.koordinator.sh", Version: "v1alpha1", Kind: "ClusterNetworkTopology"}
)

func getObject(t *testing.T, c client.Client, gvk schema.GroupVersionKind, name string) (*unstructured.Unstructured, bool) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(context.Background(), client.ObjectKey{Name: name}, u)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return u, true
}

func kaiLevels(u *unstructured.Unstructured) []string {
	ls, _, _ := unstructured.NestedSlice(u.Object, "spec", "levels")
	var keys []string
	for _, l := range ls {
		keys = append(keys, l.(map[string]any)["nodeLabel"].(string))
	}
	return keys
}

func createKAITopology(t *testing.T, c client.Client, name string, keys ...string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kaiTopologyGVK)
	u.SetName(name)
	var ls []any
	for _, k := range keys {
		ls = append(ls, map[string]any{"nodeLabel": k})
	}
	u.Object["spec"] = map[string]any{"levels": ls}
	require.NoError(t, c.Create(context.Background(), u, client.FieldValidation("Strict")))
	t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(context.Background(), u)) })
	return u
}

func networkTopologySpec(rackKey string) []any {
	return []any{
		map[string]any{"topologyLayer": "BlockLayer", "labelKey": []any{keyBlock}},
		map[string]any{"topologyLayer": "RackLayer", "parentTopologyLayer": "BlockLayer", "labelKey": []any{rackKey}},
		map[string]any{"topologyLayer": "NodeTopologyLayer", "parentTopologyLayer": "RackLayer"},
	}
}

// waitFor polls the ClusterTopology until cond holds and returns it.
func waitFor(t *testing.T, c client.Client, name, what string, cond func(ct *corev1alpha1.ClusterTopology) bool) *corev1alpha1.ClusterTopology {
	t.Helper()
	ct := &corev1alpha1.ClusterTopology{}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Name: name}, ct); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(ct), nil
	})
	require.NoError(t, err, "waiting for ClusterTopology %s: %s; last status: %+v", name, what, ct.Status)
	return ct
}

func driftStatus(ct *corev1alpha1.ClusterTopology) (metav1.ConditionStatus, string) {
	c := meta.FindStatusCondition(ct.Status.Conditions, common.ConditionSchedulerTopologyDrift)
	if c == nil {
		return "", ""
	}
	return c.Status, c.Reason
}

func hasDrift(status metav1.ConditionStatus, reason string) func(*corev1alpha1.ClusterTopology) bool {
	return func(ct *corev1alpha1.ClusterTopology) bool {
		s, r := driftStatus(ct)
		return s == status && r == reason && ct.Status.ObservedGeneration == ct.Generation
	}
}

// eventReasons are the reasons of the events recorded about a ClusterTopology, oldest first.
func eventReasons(t *testing.T, c client.Client, ctName string) []string {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, c.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)))
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int { return a.EventTime.Compare(b.EventTime.Time) })
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "ClusterTopology" && e.Regarding.Name == ctName && e.ReportingController == ControllerName {
			reasons = append(reasons, e.Type+"/"+e.Reason)
		}
	}
	return reasons
}

func TestGroveManagedKAITopologyFollowsItsClusterTopology(t *testing.T) {
	c := startController(t)
	ct := createClusterTopology(t, c)

	ct = waitFor(t, c, ct.Name, "the KAI Topology in sync", hasDrift(metav1.ConditionFalse, common.ReasonSchedulerTopologiesInSync))
	topo, found := getObject(t, c, kaiTopologyGVK, ct.Name)
	require.True(t, found)
	assert.Equal(t, []string{keyBlock, keyRack, keyHost}, kaiLevels(topo))
	assert.Equal(t, []corev1alpha1.SchedulerTopologyStatus{{SchedulerName: "kai-scheduler", Reference: ct.Name, InSync: true,
		SchedulerBackendTopologyObservedVersion: topo.GetGeneration()}}, ct.Status.SchedulerTopologyStatuses,
		"koord-scheduler has no referenced object and is not listed; grove-scheduler has no topology object")
	assert.Contains(t, ct.Finalizers, common.FinalizerClusterTopology)

	// KAI Topology levels are immutable: the changed ClusterTopology gets a new one.
	ct.Spec.Levels = levels(keyRack, keyHost)
	require.NoError(t, c.Update(context.Background(), ct))
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		u, found := getObject(t, c, kaiTopologyGVK, ct.Name)
		return found && u.GetUID() != topo.GetUID() && slices.Equal(kaiLevels(u), []string{keyRack, keyHost}), nil
	}), "waiting for the KAI Topology to be recreated with the new levels")
	waitFor(t, c, ct.Name, "in sync at the new generation", hasDrift(metav1.ConditionFalse, common.ReasonSchedulerTopologiesInSync))

	require.NoError(t, c.Delete(context.Background(), ct))
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, topoFound := getObject(t, c, kaiTopologyGVK, ct.Name)
		err := c.Get(ctx, client.ObjectKeyFromObject(ct), &corev1alpha1.ClusterTopology{})
		return !topoFound && apierrors.IsNotFound(err), nil
	}), "waiting for the finalizer to delete the KAI Topology and release the ClusterTopology")
}

func TestReferencedTopologiesAreComparedNeverWritten(t *testing.T) {
	c := startController(t)
	ctx := context.Background()
	kaiRef, cntRef := "ext-kai-"+rand.String(5), "ext-koord-"+rand.String(5)
	kaiTopo := createKAITopology(t, c, kaiRef, keyBlock, keyRack, keyHost)
	cnt := &unstructured.Unstructured{}
	cnt.SetGroupVersionKind(clusterNetworkTopologyGVK)
	cnt.SetName(cntRef)
	cnt.Object["spec"] = map[string]any{"networkTopologySpec": networkTopologySpec(keyRack)}
	require.NoError(t, c.Create(ctx, cnt, client.FieldValidation("Strict")))
	t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(ctx, cnt)) })

	ct := createClusterTopology(t, c,
		corev1alpha1.SchedulerReference{SchedulerName: "kai-scheduler", Reference: kaiRef},
		corev1alpha1.SchedulerReference{SchedulerName: "koord-scheduler", Reference: cntRef})
	ct = waitFor(t, c, ct.Name, "both references in sync", hasDrift(metav1.ConditionFalse, common.ReasonSchedulerTopologiesInSync))
	assert.Equal(t, []corev1alpha1.SchedulerTopologyStatus{
		{SchedulerName: "kai-scheduler", Reference: kaiRef, InSync: true, SchedulerBackendTopologyObservedVersion: kaiTopo.GetGeneration()},
		{SchedulerName: "koord-scheduler", Reference: cntRef, InSync: true, SchedulerBackendTopologyObservedVersion: cnt.GetGeneration()},
	}, ct.Status.SchedulerTopologyStatuses)
	_, managed := getObject(t, c, kaiTopologyGVK, ct.Name)
	assert.False(t, managed, "a referenced backend gets no Grove-managed topology object")

	// Someone edits the ClusterNetworkTopology: the watch reports the drift.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cnt), cnt))
	cnt.Object["spec"] = map[string]any{"networkTopologySpec": networkTopologySpec("example.com/switch")}
	require.NoError(t, c.Update(ctx, cnt))
	ct = waitFor(t, c, ct.Name, "drift of the edited ClusterNetworkTopology", hasDrift(metav1.ConditionTrue, common.ReasonSchedulerTopologyDrift))
	koord := ct.Status.SchedulerTopologyStatuses[1]
	assert.Equal(t, corev1alpha1.SchedulerTopologyStatus{SchedulerName: "koord-scheduler", Reference: cntRef,
		SchedulerBackendTopologyObservedVersion: cnt.GetGeneration(), Message: fmt.Sprintf(
			`ClusterNetworkTopology %q has layer keys ["example.com/block" "example.com/switch" "kubernetes.io/hostname"]; `+
				`the ClusterTopology's keys are ["example.com/block" "example.com/rack" "kubernetes.io/hostname"]`, cntRef)}, koord)

	// The referenced KAI Topology disappears.
	require.NoError(t, c.Delete(ctx, kaiTopo))
	ct = waitFor(t, c, ct.Name, "the missing KAI Topology reported", func(ct *corev1alpha1.ClusterTopology) bool {
		return len(ct.Status.SchedulerTopologyStatuses) == 2 && ct.Status.SchedulerTopologyStatuses[0].Message != ""
	})
	assert.Equal(t, corev1alpha1.SchedulerTopologyStatus{SchedulerName: "kai-scheduler", Reference: kaiRef,
		Message: fmt.Sprintf("KAI Topology %q not found", kaiRef)}, ct.Status.SchedulerTopologyStatuses[0])
	status, _ := driftStatus(ct)
	assert.Equal(t, metav1.ConditionTrue, status)

	// Both fixed again.
	createKAITopology(t, c, kaiRef, keyBlock, keyRack, keyHost)
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(cnt), cnt))
	cnt.Object["spec"] = map[string]any{"networkTopologySpec": networkTopologySpec(keyRack)}
	require.NoError(t, c.Update(ctx, cnt))
	waitFor(t, c, ct.Name, "back in sync", hasDrift(metav1.ConditionFalse, common.ReasonSchedulerTopologiesInSync))

	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return slices.Equal(eventReasons(t, c, ct.Name), []string{
			"Normal/SchedulerTopologiesInSync", "Warning/SchedulerTopologyDrift", "Normal/SchedulerTopologiesInSync"}), nil
	}), "one event per condition transition; got %v", eventReasons(t, c, ct.Name))

	require.NoError(t, c.Delete(ctx, ct))
	waitGone(t, c, ct)
	_, kept := getObject(t, c, kaiTopologyGVK, kaiRef)
	assert.True(t, kept, "deleting the ClusterTopology leaves the referenced objects alone")
	_, kept = getObject(t, c, clusterNetworkTopologyGVK, cntRef)
	assert.True(t, kept)
}

func waitGone(t *testing.T, c client.Client, ct *corev1alpha1.ClusterTopology) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(ct), &corev1alpha1.ClusterTopology{})), nil
	}), "waiting for ClusterTopology %s to go", ct.Name)
}

func TestReferencesToBackendsThatCannotBeCheckedAreUnknown(t *testing.T) {
	c := startController(t)
	ct := createClusterTopology(t, c,
		corev1alpha1.SchedulerReference{SchedulerName: "default-scheduler", Reference: "workload-topology"},
		corev1alpha1.SchedulerReference{SchedulerName: "grove-scheduler", Reference: "anything"})
	ct = waitFor(t, c, ct.Name, "Unknown drift", hasDrift(metav1.ConditionUnknown, common.ReasonSchedulerBackendNotAvailable))
	topo, found := getObject(t, c, kaiTopologyGVK, ct.Name)
	require.True(t, found, "the unreferenced KAI backend is still managed")
	assert.Equal(t, []corev1alpha1.SchedulerTopologyStatus{
		{SchedulerName: "default-scheduler", Reference: "workload-topology", Message: `scheduler backend "default-scheduler" is not enabled in the operator configuration`},
		{SchedulerName: "grove-scheduler", Reference: "anything", Message: `scheduler backend "grove-scheduler" has no topology object to compare`},
		{SchedulerName: "kai-scheduler", Reference: ct.Name, InSync: true, SchedulerBackendTopologyObservedVersion: topo.GetGeneration()},
	}, ct.Status.SchedulerTopologyStatuses)
}

func TestAForeignKAITopologyIsReportedNotOverwritten(t *testing.T) {
	c := startController(t)
	name := "topo-" + rand.String(6)
	foreign := createKAITopology(t, c, name, "example.com/zone", keyHost)
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ClusterTopologySpec{Levels: levels(keyBlock, keyRack, keyHost)}}
	require.NoError(t, c.Create(context.Background(), ct))
	ct = waitFor(t, c, name, "the failed sync reported", hasDrift(metav1.ConditionTrue, common.ReasonSchedulerTopologySyncFailed))
	require.Len(t, ct.Status.SchedulerTopologyStatuses, 1)
	assert.Contains(t, ct.Status.SchedulerTopologyStatuses[0].Message, "is not managed by Grove")

	require.NoError(t, c.Delete(context.Background(), ct))
	waitGone(t, c, ct)
	after, found := getObject(t, c, kaiTopologyGVK, name)
	require.True(t, found, "the foreign Topology was deleted")
	assert.Equal(t, foreign.GetResourceVersion(), after.GetResourceVersion(), "the foreign Topology was written")
}

// recordingRecorder counts the events it is given.
type recordingRecorder struct{ reasons []string }

func (r *recordingRecorder) Eventf(_ runtime.Object, _ runtime.Object, eventtype, reason, _, _ string, _ ...interface{}) {
	r.reasons = append(r.reasons, eventtype+"/"+reason)
}

var _ events.EventRecorder = &recordingRecorder{}

func TestStatusIsWrittenOnlyOnChange(t *testing.T) {
	c := directClient(t)
	ctx := context.Background()
	rec := &recordingRecorder{}
	r := &Reconciler{Client: c, Registry: newRegistry(t, backend.InitContext{Client: c, APIReader: c}), Recorder: rec, Log: testr.New(t)}
	ct := createClusterTopology(t, c)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(ct)}

	_, err := r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, req.NamespacedName, ct))
	first := ct.ResourceVersion
	status, reason := driftStatus(ct)
	require.Equal(t, metav1.ConditionFalse, status)
	require.Equal(t, common.ReasonSchedulerTopologiesInSync, reason)

	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, req.NamespacedName, ct))
	assert.Equal(t, first, ct.ResourceVersion, "a reconcile without changes must not write")
	assert.Equal(t, []string{"Normal/SchedulerTopologiesInSync"}, rec.reasons, "one event for the one transition")

	// Clean up the KAI Topology through the finalizer path.
	require.NoError(t, c.Delete(ctx, ct))
	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	waitGone(t, c, ct)
	_, found := getObject(t, c, kaiTopologyGVK, ct.Name)
	assert.False(t, found)
}

// unservedBackend is topology-aware but its topology CRD is not installed.
type unservedBackend struct{ plainBackend }

func (unservedBackend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKube }
func (unservedBackend) TopologyGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "nosuchtopologies"}
}
func (unservedBackend) SyncTopology(context.Context, *corev1alpha1.ClusterTopology) error { return nil }
func (unservedBackend) OnTopologyDelete(context.Context, *corev1alpha1.ClusterTopology) error {
	return nil
}
func (unservedBackend) CheckTopologyDrift(context.Context, *corev1alpha1.ClusterTopology, string) (backend.DriftResult, error) {
	return backend.DriftResult{}, nil
}

func TestSetupSkipsTopologyResourcesThatAreNotServed(t *testing.T) {
	directClient(t)
	var logged []string
	logger := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	mgr, err := ctrl.NewManager(cluster.Shared.Config, ctrl.Options{
		Scheme: scheme(), Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Logger: logger,
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	cfg := configv1alpha1.SchedulerConfiguration{DefaultProfileName: configv1alpha1.SchedulerNameKube,
		Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameKube}}}
	reg, err := backend.NewRegistry(cfg, map[configv1alpha1.SchedulerName]backend.Factory{
		configv1alpha1.SchedulerNameKube: func() backend.Backend { return unservedBackend{} },
	})
	require.NoError(t, err)
	require.Len(t, reg.TopologyAware(), 1)
	require.NoError(t, SetupWithManager(mgr, reg, configv1alpha1.ConcurrencyConfiguration{}))
	require.Len(t, logged, 1)
	assert.Contains(t, logged[0], `"msg"="not watching the scheduler backend's topology objects: their CRD is not installed"`)
	assert.Contains(t, logged[0], `"resource"="example.com/v1, Resource=nosuchtopologies"`)
}
