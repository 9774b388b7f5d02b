package common

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Writes is the one record a writer keeps of its own writes, so that no reconcile acts on an
// informer cache that does not show them yet: a create sent again (AlreadyExists), a status
// computed from counts older than the last one written, a breach acted on twice. As
// kube-controller-manager's ReplicaSet controller does (its consistency store, which this
// uses), the writes are recorded by owner — the object a reconcile is for — and checked once,
// at the top of each reconcile of that owner (CaughtUp): until every informer the owner's
// writes went to has processed events up to the resourceVersion of the last of them, the
// reconcile is put off. Informers process the events of a resource in resourceVersion order,
// so this holds whatever else was written meanwhile, with no per-object record or time limit.
//
// Writes go through a client the record wraps (Client), which records every create, update,
// patch and apply (status included) made under an owner the context names (For), and every
// delete, which is caught up once the cache no longer shows the object or shows it terminating.
// A create of an object the same record is already creating is refused with AlreadyExists
// instead of sent twice.
//
// Pod counts are the exception, as in the ReplicaSet controller: the PodClique controller's
// expectations (package expectations) say how many pods it still waits to see.
type Writes struct {
	scheme *runtime.Scheme
	// reader is where deletes are looked for (the informer cache).
	reader client.Reader
	store  *consistency.RealConsistencyStore

	mu sync.Mutex
	// deletes are the deletes each owner made that the cache may still not show.
	deletes map[types.NamespacedName][]pendingDelete
	// inFlight counts each owner's writes under way; creating holds the objects being created.
	inFlight map[types.NamespacedName]int
	creating map[objectRef]bool
	// remembered are the kinds whose creates are kept by object (CreateUnseen).
	remembered map[schema.GroupKind]bool
}

type pendingDelete struct {
	obj client.Object // a new object of the kind, to read into
	key types.NamespacedName
	uid types.UID
}

type objectRef struct {
	gvk schema.GroupVersionKind
	key types.NamespacedName
}

// CacheCatchUpRetry is how soon a reconcile put off because the cache did not show its
// owner's writes yet runs again. An informer is normally milliseconds behind.
const CacheCatchUpRetry = 20 * time.Millisecond

// NewWrites returns an empty record for the writes of the given kinds: the informers of
// informers (the manager's cache) tell which resourceVersion each has caught up to, reader is
// where deletes are looked for. A nil informers checks deletes only (a unit test's fake client
// reads what was written).
func NewWrites(scheme *runtime.Scheme, informers cache.Informers, reader client.Reader, kinds ...client.Object) *Writes {
	stores := map[client.Object]consistency.LastSyncRVGetter{}
	if informers != nil {
		for _, obj := range kinds {
			stores[obj] = &informerRV{informers: informers, obj: obj}
		}
	}
	return NewWritesFrom(scheme, reader, stores)
}

// NewWritesFrom is NewWrites with the resourceVersion the cache of each kind (the map's keys)
// has caught up to read from its LastSyncRVGetter: a client-go store stands in for an informer
// in a unit test.
func NewWritesFrom(scheme *runtime.Scheme, reader client.Reader, kinds map[client.Object]consistency.LastSyncRVGetter) *Writes {
	stores := map[schema.GroupResource]consistency.LastSyncRVGetter{}
	for obj, g := range kinds {
		if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
			stores[groupResource(gvk)] = g
		}
	}
	return &Writes{scheme: scheme, reader: reader, store: consistency.NewConsistencyStore(stores),
		deletes: map[types.NamespacedName][]pendingDelete{}, inFlight: map[types.NamespacedName]int{}, creating: map[objectRef]bool{},
		remembered: map[schema.GroupKind]bool{}}
}

// RememberCreates keeps the creates of obj's kind by object as well as by owner, for
// CreateUnseen. Call it before the record is used.
func (w *Writes) RememberCreates(obj client.Object) {
	if gvk, err := apiutil.GVKForObject(obj, w.scheme); err == nil {
		w.remembered[gvk.GroupKind()] = true
	}
}

// createdKey is the store's key of one created object (not an owner: the kind prefix keeps
// it apart from every owner key).
func createdKey(ref objectRef) types.NamespacedName {
	return types.NamespacedName{Namespace: ref.key.Namespace, Name: "created/" + ref.gvk.Kind + "/" + ref.key.Name}
}

// CreateUnseen reports whether the object of obj's kind named key is being created through
// the record, or was created with a resourceVersion its informer has not reached: a reconcile
// that creates one object by name, and reads the cache to know whether it exists, waits for
// that create alone instead of for every write of the object's owner (CaughtUp). Only kinds
// passed to RememberCreates are kept.
func (w *Writes) CreateUnseen(obj client.Object, key types.NamespacedName) bool {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return false
	}
	ref := objectRef{gvk: gvk, key: key}
	w.mu.Lock()
	busy := w.creating[ref]
	w.mu.Unlock()
	return busy || w.store.EnsureReady(createdKey(ref)) != nil
}

// DeletesShown reports whether the cache shows every delete recorded for the owner (gone, or
// terminating): the part of CaughtUp that does not wait for the owner's other writes.
func (w *Writes) DeletesShown(ctx context.Context, owner client.Object, key types.NamespacedName) bool {
	return w.deletesShown(ctx, ownerKey(w.kindOf(owner), key))
}

// groupResource names a kind's resource for the store (a key only; the guess is exact for the
// kinds Grove writes).
func groupResource(gvk schema.GroupVersionKind) schema.GroupResource {
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.GroupResource()
}

// informerRV reads the last resourceVersion the informer of a kind has processed, resolving the
// informer on first use (the cache starts after the controllers are registered).
type informerRV struct {
	informers cache.Informers
	obj       client.Object
	mu        sync.Mutex
	store     toolscache.Store
}

func (g *informerRV) LastStoreSyncResourceVersion() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.store == nil {
		inf, err := g.informers.GetInformer(context.Background(), g.obj.DeepCopyObject().(client.Object), cache.BlockUntilSynced(false))
		if err != nil {
			return ""
		}
		s, ok := inf.(interface{ GetStore() toolscache.Store })
		if !ok {
			return "" // not a client-go informer: not checked
		}
		g.store = s.GetStore()
	}
	return g.store.LastStoreSyncResourceVersion()
}

type ownersKey struct{ w *Writes }

type owner struct {
	key types.NamespacedName
	uid types.UID
}

// ownerKey is the record's key of an owner: its kind and name, so owners of different kinds
// never share a record.
func ownerKey(kind string, key types.NamespacedName) types.NamespacedName {
	return types.NamespacedName{Namespace: key.Namespace, Name: kind + "/" + key.Name}
}

// For returns a context whose writes through the record's clients are recorded for the owners
// (usually one: the object the reconcile is for).
func (w *Writes) For(ctx context.Context, owners ...client.Object) context.Context {
	out := make([]owner, 0, len(owners))
	for _, o := range owners {
		out = append(out, owner{key: ownerKey(w.kindOf(o), client.ObjectKeyFromObject(o)), uid: o.GetUID()})
	}
	return context.WithValue(ctx, ownersKey{w}, out)
}

func (w *Writes) kindOf(obj client.Object) string {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return ""
	}
	return gvk.Kind
}

func (w *Writes) owners(ctx context.Context) []owner {
	o, _ := ctx.Value(ownersKey{w}).([]owner)
	return o
}

// CaughtUp reports whether the cache shows every write recorded for the owner (of the given
// kind, named by key) and none is under way; a reconcile that gets false returns
// Requeue(). An owner that is gone (NotFound) should be Forgotten.
func (w *Writes) CaughtUp(ctx context.Context, owner client.Object, key types.NamespacedName) bool {
	k := ownerKey(w.kindOf(owner), key)
	w.mu.Lock()
	if w.inFlight[k] > 0 {
		w.mu.Unlock()
		return false
	}
	w.mu.Unlock()
	if err := w.store.EnsureReady(k); err != nil {
		return false
	}
	return w.deletesShown(ctx, k)
}

func (w *Writes) deletesShown(ctx context.Context, k types.NamespacedName) bool {
	w.mu.Lock()
	deletes := w.deletes[k]
	w.mu.Unlock()
	if len(deletes) == 0 {
		return true
	}
	shown := map[types.UID]bool{}
	for _, d := range deletes {
		if w.deleteShown(ctx, d) {
			shown[d.uid] = true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Deletes recorded meanwhile are kept, and so is what another caller for the same owner
	// (the gang creator checks a PodCliqueSet from several workers) left of the list.
	left := slices.DeleteFunc(slices.Clone(w.deletes[k]), func(d pendingDelete) bool { return shown[d.uid] })
	if len(left) == 0 {
		delete(w.deletes, k)
	} else {
		w.deletes[k] = left
	}
	return len(shown) == len(deletes)
}

// deleteShown reports whether the cache shows a delete: the object gone, replaced (another
// UID) or terminating.
func (w *Writes) deleteShown(ctx context.Context, d pendingDelete) bool {
	obj := d.obj.DeepCopyObject().(client.Object)
	err := w.reader.Get(ctx, d.key, obj)
	if err != nil {
		return apierrors.IsNotFound(err) || meta.IsNoMatchError(err)
	}
	return obj.GetUID() != d.uid || obj.GetDeletionTimestamp() != nil
}

// Requeue is the result of a reconcile put off until the cache catches up.
func Requeue() reconcile.Result { return reconcile.Result{RequeueAfter: CacheCatchUpRetry} }

// Forget drops what is recorded for an owner that is gone.
func (w *Writes) Forget(owner client.Object, key types.NamespacedName) {
	k := ownerKey(w.kindOf(owner), key)
	w.store.Clear(k, "")
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.deletes, k)
}

// begin marks a write of the context's owners as under way; the returned func ends it.
func (w *Writes) begin(ctx context.Context) (owners []owner, end func()) {
	owners = w.owners(ctx)
	if len(owners) == 0 {
		return nil, func() {}
	}
	w.mu.Lock()
	for _, o := range owners {
		w.inFlight[o.key]++
	}
	w.mu.Unlock()
	return owners, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		for _, o := range owners {
			if w.inFlight[o.key]--; w.inFlight[o.key] <= 0 {
				delete(w.inFlight, o.key)
			}
		}
	}
}

// wrote records the resourceVersion the apiserver returned for a write of obj (a client.Object
// or an apply configuration) for each owner.
func (w *Writes) wrote(owners []owner, obj any) {
	if len(owners) == 0 {
		return
	}
	gvk, rv, ok := w.versionOf(obj)
	if !ok || rv == "" {
		return
	}
	for _, o := range owners {
		w.store.WroteAt(o.key, o.uid, groupResource(gvk), rv)
	}
}

func (w *Writes) versionOf(obj any) (schema.GroupVersionKind, string, bool) {
	if o, ok := obj.(client.Object); ok {
		gvk, err := apiutil.GVKForObject(o, w.scheme)
		if err != nil {
			return gvk, "", false
		}
		return gvk, o.GetResourceVersion(), true
	}
	// A typed apply configuration: the response is decoded into it.
	raw, err := json.Marshal(obj)
	if err != nil {
		return schema.GroupVersionKind{}, "", false
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return schema.GroupVersionKind{}, "", false
	}
	return u.GroupVersionKind(), u.GetResourceVersion(), true
}

// Client returns c with its writes recorded (see Writes).
func (w *Writes) Client(c client.Client) client.Client {
	if wc, ok := c.(*writesClient); ok && wc.w == w {
		return c
	}
	return &writesClient{Client: c, w: w}
}

type writesClient struct {
	client.Client
	w *Writes
}

func (c *writesClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if len(owners) > 0 && obj.GetName() != "" {
		gvk, err := apiutil.GVKForObject(obj, c.w.scheme)
		if err != nil {
			return err
		}
		ref := objectRef{gvk: gvk, key: client.ObjectKeyFromObject(obj)}
		c.w.mu.Lock()
		busy := c.w.creating[ref]
		c.w.creating[ref] = true
		c.w.mu.Unlock()
		if busy {
			// Another reconcile of this writer is creating it: the object will exist, and its
			// create event brings the owner back.
			return apierrors.NewAlreadyExists(groupResource(gvk), obj.GetName())
		}
		defer func() {
			c.w.mu.Lock()
			defer c.w.mu.Unlock()
			delete(c.w.creating, ref)
		}()
	}
	if err := c.Client.Create(ctx, obj, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	c.w.wroteCreate(obj)
	return nil
}

// wroteCreate keeps a create of a remembered kind by object (CreateUnseen).
func (w *Writes) wroteCreate(obj client.Object) {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil || !w.remembered[gvk.GroupKind()] || obj.GetResourceVersion() == "" {
		return
	}
	w.store.WroteAt(createdKey(objectRef{gvk: gvk, key: client.ObjectKeyFromObject(obj)}), obj.GetUID(), groupResource(gvk), obj.GetResourceVersion())
}

func (c *writesClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if err := c.Client.Update(ctx, obj, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	return nil
}

func (c *writesClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if err := c.Client.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	return nil
}

func (c *writesClient) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if err := c.Client.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	return nil
}

func (c *writesClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	err := c.Client.Delete(ctx, obj, opts...)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if gvk, gerr := apiutil.GVKForObject(obj, c.w.scheme); gerr == nil && c.w.remembered[gvk.GroupKind()] {
		c.w.store.Clear(createdKey(objectRef{gvk: gvk, key: client.ObjectKeyFromObject(obj)}), "")
	}
	if len(owners) > 0 && obj.GetUID() != "" {
		if blank, nerr := c.w.newObject(obj); nerr == nil {
			c.w.mu.Lock()
			for _, o := range owners {
				c.w.deletes[o.key] = append(c.w.deletes[o.key], pendingDelete{obj: blank, key: client.ObjectKeyFromObject(obj), uid: obj.GetUID()})
			}
			c.w.mu.Unlock()
		}
	}
	return err
}

// newObject is an empty object of obj's kind.
func (w *Writes) newObject(obj client.Object) (client.Object, error) {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return nil, err
	}
	switch obj.(type) {
	case *unstructured.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return u, nil
	case *metav1.PartialObjectMetadata:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return m, nil
	}
	raw, err := w.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	return raw.(client.Object), nil
}

func (c *writesClient) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *writesClient) SubResource(sub string) client.SubResourceClient {
	return &writesSubResource{SubResourceClient: c.Client.SubResource(sub), w: c.w}
}

type writesSubResource struct {
	client.SubResourceClient
	w *Writes
}

func (c *writesSubResource) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if err := c.SubResourceClient.Update(ctx, obj, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	return nil
}

func (c *writesSubResource) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if err := c.SubResourceClient.Patch(ctx, obj, patch, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	return nil
}

func (c *writesSubResource) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	owners, end := c.w.begin(ctx)
	defer end()
	if err := c.SubResourceClient.Apply(ctx, obj, opts...); err != nil {
		return err
	}
	c.w.wrote(owners, obj)
	return nil
}
