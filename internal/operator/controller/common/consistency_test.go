package common

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// A reconcile of an owner is put off while the cache of a kind it wrote has not processed
// the write's resourceVersion, and runs once it has; writes made under no owner, or of a kind
// the record does not check, put nothing off.
func TestAnOwnerWaitsUntilTheCacheShowsItsWrites(t *testing.T) {
	ctx := context.Background()
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	informer := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc) // the ServiceAccounts' informer
	w := NewWritesFrom(scheme.Scheme, server, map[client.Object]consistency.LastSyncRVGetter{&corev1.ServiceAccount{}: informer})
	c := w.Client(server)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u"}}
	caughtUp := func() bool { return w.CaughtUp(ctx, owner, client.ObjectKeyFromObject(owner)) }

	require.NoError(t, c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unowned"}}))
	require.NoError(t, c.Create(w.For(ctx, owner), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "unchecked"}}))
	assert.True(t, caughtUp(), "nothing recorded for the owner of a checked kind")

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
	require.NoError(t, c.Create(ctx, sa))
	informer.Bookmark(sa.ResourceVersion)
	sa.Labels = map[string]string{"a": "1"}
	require.NoError(t, c.Update(w.For(ctx, owner), sa))
	assert.False(t, caughtUp(), "the informer has not processed the update (%s)", sa.ResourceVersion)
	assert.True(t, w.CaughtUp(ctx, &corev1.ConfigMap{}, client.ObjectKey{Namespace: "ns", Name: "other"}), "another owner's reconcile runs")

	informer.Bookmark(sa.ResourceVersion)
	assert.True(t, caughtUp())
	assert.True(t, caughtUp(), "the record is dropped once caught up")

	sa.Labels = map[string]string{"a": "2"}
	require.NoError(t, c.Update(w.For(ctx, owner), sa))
	assert.False(t, caughtUp())
	w.Forget(owner, client.ObjectKeyFromObject(owner))
	assert.True(t, caughtUp(), "an owner that is gone is forgotten")
}

// A delete holds its owner back until the cache shows the object gone, replaced or
// terminating: a reconcile on a cache that still shows it would act on it again.
func TestAnOwnerWaitsUntilTheCacheShowsItsDeletes(t *testing.T) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "pod-1"}}
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pod.DeepCopy()).Build()
	var cached client.Object = pod.DeepCopy() // what the cache shows; nil: nothing
	cache := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			if cached == nil {
				return apierrors.NewNotFound(corev1.Resource("pods"), key.Name)
			}
			cached.(*corev1.Pod).DeepCopyInto(obj.(*corev1.Pod))
			return nil
		},
	})
	w := NewWritesFrom(scheme.Scheme, cache, nil)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	caughtUp := func() bool { return w.CaughtUp(ctx, owner, client.ObjectKeyFromObject(owner)) }

	require.NoError(t, Delete(w.For(ctx, owner), w.Client(server), pod))
	assert.False(t, caughtUp(), "the cache still shows the pod")
	terminating := pod.DeepCopy()
	terminating.DeletionTimestamp = &metav1.Time{}
	cached = terminating
	assert.True(t, caughtUp())

	// Gone from the cache, or replaced by a pod of the same name.
	cached = pod.DeepCopy()
	require.NoError(t, client.IgnoreNotFound(w.Client(server).Delete(w.For(ctx, owner), pod)), "the server has let it go already")
	assert.False(t, caughtUp())
	replaced := pod.DeepCopy()
	replaced.UID = "pod-2"
	cached = replaced
	assert.True(t, caughtUp())
}

// Two reconciles of one writer that both find an object missing send one create: the second
// is refused with AlreadyExists before it reaches the apiserver, and the owner is not caught
// up while the first is under way.
func TestACreateUnderWayIsNotSentTwice(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	creates := 0
	entered, release := make(chan struct{}), make(chan struct{})
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			creates++
			mu.Unlock()
			close(entered)
			<-release
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	w := NewWritesFrom(scheme.Scheme, server, nil)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	octx := w.For(ctx, owner)
	done := make(chan error, 1)
	go func() {
		done <- w.Client(server).Create(octx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}})
	}()
	<-entered
	assert.False(t, w.CaughtUp(ctx, owner, client.ObjectKeyFromObject(owner)), "a write is under way")
	err := w.Client(server).Create(octx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}})
	assert.True(t, apierrors.IsAlreadyExists(err), "got %v", err)
	close(release)
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, creates)
}

// A create of a remembered kind is unseen until the informer reaches its resourceVersion, for
// that object only; other objects of the kind, and kinds not remembered, are never unseen; a
// delete through the record forgets it.
func TestACreateIsUnseenUntilTheInformerShowsIt(t *testing.T) {
	ctx := context.Background()
	// The fake apiserver numbers each object's versions from 1; this one returns versions of
	// one sequence, as etcd does.
	var rv int
	server := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme.Scheme).Build(), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if err := c.Create(ctx, obj, opts...); err != nil {
				return err
			}
			rv++
			obj.SetResourceVersion(strconv.Itoa(100 + rv))
			return nil
		},
	})
	informer := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	w := NewWritesFrom(scheme.Scheme, server, map[client.Object]consistency.LastSyncRVGetter{&corev1.ServiceAccount{}: informer, &corev1.ConfigMap{}: informer})
	w.RememberCreates(&corev1.ServiceAccount{})
	informer.Bookmark("100") // synced, before the record's writes
	c := w.Client(server)
	key := client.ObjectKey{Namespace: "ns", Name: "sa"}

	assert.False(t, w.CreateUnseen(&corev1.ServiceAccount{}, key), "nothing created yet")
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa"}}
	require.NoError(t, c.Create(ctx, sa))
	assert.True(t, w.CreateUnseen(&corev1.ServiceAccount{}, key), "the informer is behind the create (%s)", sa.ResourceVersion)
	assert.False(t, w.CreateUnseen(&corev1.ServiceAccount{}, client.ObjectKey{Namespace: "ns", Name: "other"}))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	require.NoError(t, c.Create(ctx, cm))
	assert.False(t, w.CreateUnseen(&corev1.ConfigMap{}, client.ObjectKeyFromObject(cm)), "ConfigMaps are not remembered")

	informer.Bookmark(sa.ResourceVersion)
	assert.False(t, w.CreateUnseen(&corev1.ServiceAccount{}, key))

	sa2 := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa2"}}
	require.NoError(t, c.Create(ctx, sa2))
	require.True(t, w.CreateUnseen(&corev1.ServiceAccount{}, client.ObjectKeyFromObject(sa2)))
	require.NoError(t, c.Delete(ctx, sa2))
	assert.False(t, w.CreateUnseen(&corev1.ServiceAccount{}, client.ObjectKeyFromObject(sa2)), "a deleted object is forgotten")
}

// Several reconciles may check one owner's deletes at once (the gang creator's workers check
// their PodCliqueSet): each sees the deletes the cache shows, none loses a delete another
// recorded meanwhile, and none trips over what another already removed from the list.
func TestDeletesOfOneOwnerCheckedConcurrently(t *testing.T) {
	ctx := context.Background()
	var pods []client.Object
	for _, n := range []string{"a", "b", "c", "d"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: "uid-" + types.UID(n)}})
	}
	server := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pods...).Build()
	gone := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(_ context.Context, _ client.WithWatch, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
			return apierrors.NewNotFound(corev1.Resource("pods"), key.Name)
		},
	})
	w := NewWritesFrom(scheme.Scheme, gone, nil)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for round := range 50 {
		for _, p := range pods[:3] {
			require.NoError(t, client.IgnoreNotFound(w.Client(server).Delete(w.For(ctx, owner), p.DeepCopyObject().(client.Object))))
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { w.DeletesShown(ctx, owner, client.ObjectKeyFromObject(owner)) })
		}
		wg.Go(func() {
			_ = w.Client(server).Delete(w.For(ctx, owner), pods[3].DeepCopyObject().(client.Object))
		})
		wg.Wait()
		assert.True(t, w.DeletesShown(ctx, owner, client.ObjectKeyFromObject(owner)), "round %d", round)
		w.mu.Lock()
		assert.Empty(t, w.deletes, "round %d", round)
		w.mu.Unlock()
	}
}
