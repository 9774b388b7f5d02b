package dra

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins/internal/devices"
	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

const (
	gpuClass = "gpu.example.com"
	rackKey  = "topology.kubernetes.io/rack"
)

// testEnv is the plugin under test and the fakes behind it.
type testEnv struct {
	p      *Plugin
	dra    *fakeDRA
	handle *fakeHandle
	pods   cache.Indexer
}

// newTestPlugin is the one place tests build the plugin: over an empty gang cache (fed through
// its exported methods), an in-memory DRA manager holding a "gpu.example.com" DeviceClass, a
// pod lister and a handle that records events and waiting pods.
func newTestPlugin(t *testing.T) *testEnv {
	t.Helper()
	d := &fakeDRA{claims: map[string]*resourcev1.ResourceClaim{}, api: map[string]*resourcev1.ResourceClaim{},
		pending: map[types.UID]*resourcev1.AllocationResult{},
		classes: map[string]*resourcev1.DeviceClass{gpuClass: {ObjectMeta: metav1.ObjectMeta{Name: gpuClass}}}}
	h := &fakeHandle{recorder: events.NewFakeRecorder(100), waiting: map[types.UID]*fakeWaitingPod{}}
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	gangs := &gangcache.Shared{Cache: gangcache.New()}
	p := &Plugin{args: pluginargs.DRAArgs{ReservedForLimit: 2}, handle: h, gangs: gangs, dra: d,
		match: devices.CELMatcher(context.Background(), d.DeviceClasses().Get), pods: corelisters.NewPodLister(pods),
		inFlight: map[types.UID]*inFlight{}}
	gangs.SetDeviceAdvisor(p)
	return &testEnv{p: p, dra: d, handle: h, pods: pods}
}

// addGang records PodGang ns/name (one PodGroup "w" of minReplicas min, packed by required when
// set) and its pending members; member i names the claims claimsOf(i).
func (e *testEnv) addGang(t *testing.T, name string, minReplicas int32, required string, members int, claimsOf func(i int) []string) []*v1.Pod {
	t.Helper()
	spec := v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: minReplicas}}}
	if required != "" {
		spec.TopologyConstraint = &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(required)}}
	}
	e.p.gangs.UpsertPodGang(&v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pg-" + name), Generation: 1}, Spec: spec})
	var out []*v1.Pod
	for i := range members {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("%s-%d", name, i), UID: types.UID(fmt.Sprintf("%s-%d", name, i)),
			Labels: map[string]string{common.LabelPodGang: name, common.LabelPodClique: "w"}}}
		for _, c := range claimsOf(i) {
			pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: c, ResourceClaimName: ptr.To(c)})
		}
		e.p.gangs.UpsertPod(pod)
		if err := e.pods.Add(pod); err != nil {
			t.Fatal(err)
		}
		out = append(out, pod)
	}
	return out
}

// gpuClaim is an unallocated claim in ns for count GPUs.
func gpuClaim(name string, count int64) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name)},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "r",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: gpuClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}}}}}}
}

// gpuSlice publishes n GPUs on node.
func gpuSlice(node string, n int) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node + "-gpus"}, Spec: resourcev1.ResourceSliceSpec{
		Driver: "drv", NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return s
}

// fakeDRA is the scheduler's DRA manager in memory: claims (as the scheduler's cache shows
// them, and as the API has them), pending allocations, slices and classes.
type fakeDRA struct {
	mu      sync.Mutex
	claims  map[string]*resourcev1.ResourceClaim
	api     map[string]*resourcev1.ResourceClaim
	pending map[types.UID]*resourcev1.AllocationResult
	slices  []*resourcev1.ResourceSlice
	classes map[string]*resourcev1.DeviceClass
}

func (d *fakeDRA) addClaim(c *resourcev1.ResourceClaim) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.claims[c.Namespace+"/"+c.Name], d.api[c.Namespace+"/"+c.Name] = c, c
}

func (d *fakeDRA) get(namespace, name string) *resourcev1.ResourceClaim {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.claims[namespace+"/"+name]
}

func (d *fakeDRA) ResourceClaims() fwk.ResourceClaimTracker     { return (*fakeClaims)(d) }
func (d *fakeDRA) ResourceSlices() fwk.ResourceSliceLister      { return (*fakeSlices)(d) }
func (d *fakeDRA) DeviceClasses() fwk.DeviceClassLister         { return (*fakeClasses)(d) }
func (d *fakeDRA) DeviceClassResolver() fwk.DeviceClassResolver { return nil }

type fakeClaims fakeDRA

func (c *fakeClaims) List() ([]*resourcev1.ResourceClaim, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*resourcev1.ResourceClaim
	for _, claim := range c.claims {
		out = append(out, claim)
	}
	return out, nil
}

func (c *fakeClaims) Get(namespace, name string) (*resourcev1.ResourceClaim, error) {
	if claim := (*fakeDRA)(c).get(namespace, name); claim != nil {
		return claim, nil
	}
	return nil, apierrors.NewNotFound(resourcev1.Resource("resourceclaims"), name)
}

func (c *fakeClaims) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	claims, _ := c.List()
	out := sets.New[structured.DeviceID]()
	for _, claim := range claims {
		if a := claim.Status.Allocation; a != nil {
			for _, r := range a.Devices.Results {
				out.Insert(structured.MakeDeviceID(r.Driver, r.Pool, r.Device))
			}
		}
	}
	return out, nil
}

func (c *fakeClaims) GatherAllocatedState() (*structured.AllocatedState, error) { return nil, nil }

func (c *fakeClaims) SignalClaimPendingAllocation(uid types.UID, claim *resourcev1.ResourceClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending[uid] = claim.Status.Allocation
	return nil
}

func (c *fakeClaims) GetPendingAllocation(uid types.UID) *resourcev1.AllocationResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[uid]
}

func (c *fakeClaims) MaybeRemoveClaimPendingAllocation(uid types.UID, _ bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[uid]
	delete(c.pending, uid)
	return ok
}

func (c *fakeClaims) AssumeClaimAfterAPICall(claim *resourcev1.ResourceClaim) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims[claim.Namespace+"/"+claim.Name] = claim
	return nil
}

func (c *fakeClaims) AssumedClaimRestore(namespace, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.claims[namespace+"/"+name] = c.api[namespace+"/"+name]
}

type fakeSlices fakeDRA

func (s *fakeSlices) ListWithDeviceTaintRules() ([]*resourcev1.ResourceSlice, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.slices, nil
}

type fakeClasses fakeDRA

func (c *fakeClasses) List() ([]*resourcev1.DeviceClass, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*resourcev1.DeviceClass
	for _, class := range c.classes {
		out = append(out, class)
	}
	return out, nil
}

func (c *fakeClasses) Get(name string) (*resourcev1.DeviceClass, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if class := c.classes[name]; class != nil {
		return class, nil
	}
	return nil, apierrors.NewNotFound(resourcev1.Resource("deviceclasses"), name)
}

// fakeHandle records events and hands out the pods waiting at Permit.
type fakeHandle struct {
	fwk.Handle
	recorder *events.FakeRecorder
	mu       sync.Mutex
	waiting  map[types.UID]*fakeWaitingPod
}

func (h *fakeHandle) EventRecorder() events.EventRecorderLogger { return h.recorder }

func (h *fakeHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	if wp := h.waiting[uid]; wp != nil {
		return wp
	}
	return nil
}

// wait makes pod wait at Permit.
func (h *fakeHandle) wait(pod *v1.Pod) *fakeWaitingPod {
	h.mu.Lock()
	defer h.mu.Unlock()
	wp := &fakeWaitingPod{pod: pod}
	h.waiting[pod.UID] = wp
	return wp
}

// fakeWaitingPod records what the plugin decided about a pod waiting at Permit.
type fakeWaitingPod struct {
	pod      *v1.Pod
	mu       sync.Mutex
	allowed  []string
	rejected []string
}

func (w *fakeWaitingPod) GetPod() *v1.Pod             { return w.pod }
func (w *fakeWaitingPod) GetPendingPlugins() []string { return []string{Name} }
func (w *fakeWaitingPod) Preempt(string, string) bool { return false }

func (w *fakeWaitingPod) Allow(plugin string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.allowed = append(w.allowed, plugin)
}

func (w *fakeWaitingPod) Reject(plugin, msg string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rejected = append(w.rejected, plugin+": "+msg)
	return true
}

func (w *fakeWaitingPod) decisions() (allowed, rejected []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.allowed...), append([]string(nil), w.rejected...)
}
