package gangcache

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/client/clientset/versioned"
	schedulerclient "github.com/ai-dynamo/grove/pkg/client/clientset/versioned/typed/scheduler/v1alpha1"
	schedulerinformers "github.com/ai-dynamo/grove/pkg/client/informers/externalversions/scheduler/v1alpha1"
)

// Shared is a profile's gang cache with the client and informer that feed it.
type Shared struct {
	*Cache
	// Client reads and writes PodGangs (status included).
	Client schedulerclient.SchedulerV1alpha1Interface
	synced cache.InformerSynced
}

// Synced reports whether the PodGang informer has listed once. Until then a missing PodGang may
// simply not be known yet.
func (s *Shared) Synced() bool { return s.synced() }

// Profiles is the state grove-scheduler's plugins share: one Shared gang cache per scheduling
// profile. The plugin registry makes one and hands it to every plugin factory, so the Gang,
// Topology, DRA and GangPreemption plugins of a profile (built with the profile's framework
// handle) find the same cache, and a second registry (another scheduler in one process, a
// test) shares nothing with the first.
type Profiles struct {
	mu       sync.Mutex
	byHandle map[fwk.Handle]*Shared
}

// Constructor builds a plugin that shares the profiles' state.
type Constructor func(ctx context.Context, args runtime.Object, h fwk.Handle, profiles *Profiles) (fwk.Plugin, error)

// Factory is the framework's factory for a plugin built by c on the profiles' state.
func (ps *Profiles) Factory(c Constructor) frameworkruntime.PluginFactory {
	return func(ctx context.Context, args runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
		return c(ctx, args, h, ps)
	}
}

// NewProfiles returns an empty set of profiles.
func NewProfiles() *Profiles { return &Profiles{byHandle: map[fwk.Handle]*Shared{}} }

// For returns the gang cache of the profile behind h, starting it on first use. It never blocks
// on the PodGang CRD: if the CRD is not installed yet, the informer keeps retrying in the
// background and gangs stay unknown. The profile's entry is dropped when ctx ends.
func (ps *Profiles) For(ctx context.Context, h fwk.Handle) (*Shared, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if s := ps.byHandle[h]; s != nil {
		return s, nil
	}
	if h.KubeConfig() == nil {
		return nil, fmt.Errorf("the scheduler gave the plugin no kubeconfig to watch PodGangs with")
	}
	client, err := NewPodGangClient(h.KubeConfig())
	if err != nil {
		return nil, err
	}
	c := New()
	podGangs := schedulerinformers.NewPodGangInformer(client, metav1.NamespaceAll, 0, cache.Indexers{})
	if _, err := podGangs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.UpsertPodGang(obj.(*v1alpha1.PodGang)) },
		UpdateFunc: func(_, obj any) { c.UpsertPodGang(obj.(*v1alpha1.PodGang)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pg, ok := obj.(*v1alpha1.PodGang); ok {
				c.DeletePodGang(pg.Namespace, pg.Name)
			}
		},
	}); err != nil {
		return nil, err
	}
	// The scheduler's own pod informer: started by the scheduler after the plugins are built.
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			pod, ok := obj.(*v1.Pod)
			if !ok {
				return false
			}
			_, _, member := GangKey(pod)
			return member
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.UpsertPod(obj.(*v1.Pod)) },
			UpdateFunc: func(_, obj any) { c.UpsertPod(obj.(*v1.Pod)) },
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				c.DeletePod(obj.(*v1.Pod))
			},
		},
	}); err != nil {
		return nil, err
	}
	// Room changes (RoomChanged): a pod that held a node deleted, a node added or opened.
	if _, err := h.SharedInformerFactory().Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			if pod, ok := obj.(*v1.Pod); ok && pod.Spec.NodeName != "" {
				c.RoomChanged()
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.RoomChanged() },
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, ok1 := oldObj.(*v1.Node)
			newNode, ok2 := newObj.(*v1.Node)
			if ok1 && ok2 && NodeRoomChanged(oldNode, newNode) {
				c.RoomChanged()
			}
		},
	}); err != nil {
		return nil, err
	}
	resources := h.SharedInformerFactory().Resource().V1()
	if _, err := resources.ResourceSlices().Informer().AddEventHandler(roomHandler(c, SliceRoomChanged)); err != nil {
		return nil, err
	}
	if _, err := resources.DeviceClasses().Informer().AddEventHandler(roomHandler(c, ClassRoomChanged)); err != nil {
		return nil, err
	}
	if _, err := resources.ResourceClaims().Informer().AddEventHandler(roomHandler(c, ClaimRoomChanged)); err != nil {
		return nil, err
	}
	s := &Shared{Cache: c, Client: client.SchedulerV1alpha1(), synced: podGangs.HasSynced}
	ps.byHandle[h] = s
	go podGangs.RunWithContext(ctx)
	go func() {
		<-ctx.Done()
		ps.mu.Lock()
		delete(ps.byHandle, h)
		ps.mu.Unlock()
		klog.FromContext(ctx).V(4).Info("Stopped the gang cache")
	}()
	return s, nil
}

// NewPodGangClient returns a clientset of Grove's API groups for the scheduler's kubeconfig.
func NewPodGangClient(cfg *rest.Config) (versioned.Interface, error) {
	c := rest.CopyConfig(cfg)
	// The scheduler's kubeconfig asks for protobuf, which CRDs are not served in.
	c.ContentType = runtime.ContentTypeJSON
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return versioned.NewForConfig(c)
}

// ApplyStatus server-side applies the status fields that status (a PodGang's apply
// configuration: name, namespace and the fields fieldManager owns) sets, forced: each writer
// owns its own fields, e.g. the Scheduled condition or DisruptionTarget.
func (s *Shared) ApplyStatus(ctx context.Context, status *schedulerac.PodGangApplyConfiguration, fieldManager string) error {
	_, err := s.Client.PodGangs(*status.Namespace).ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	return err
}

// roomHandler bumps the room version on the events of T that changed reports as room changes
// (old is nil on add, new is nil on delete).
func roomHandler[T any](c *Cache, changed func(oldObj, newObj *T) bool) cache.ResourceEventHandler {
	as := func(obj any) *T {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		t, _ := obj.(*T)
		return t
	}
	bump := func(oldObj, newObj *T) {
		if changed(oldObj, newObj) {
			c.RoomChanged()
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { bump(nil, as(obj)) },
		UpdateFunc: func(oldObj, newObj any) { bump(as(oldObj), as(newObj)) },
		DeleteFunc: func(obj any) { bump(as(obj), nil) },
	}
}
