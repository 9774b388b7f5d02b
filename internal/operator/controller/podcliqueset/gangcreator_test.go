package podcliqueset

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The fast path creates a PodGang once every pod of it exists, reading only its replica's
// objects; a gang still missing pods, one that exists, and pods the clique does not control are
// left to the gang writer.
func TestGangCreatorCreatesACompleteGangOfItsReplica(t *testing.T) {
	now := time.Now()
	f := newGangFixture(3, now)
	f.addPod(0, "p-0-w-a", now, false) // replica 0: one pod of two
	f.addPod(1, "p-1-w-a", now, false) // replica 1: complete
	f.addPod(1, "p-1-w-b", now, false)
	f.addPod(2, "p-2-w-a", now, false) // replica 2: the second pod is a stray
	f.addPod(2, "p-2-w-b", now, true)
	pcs := f.pcs
	var created []string
	c := f.client(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			created = append(created, obj.GetName())
			return c.Create(ctx, obj, opts...)
		},
	})
	gc := &gangCreator{r: &Reconciler{Client: c, Registry: &backend.Registry{}}}
	ctx := context.Background()

	for i := range 3 {
		_, err := gc.Reconcile(ctx, gangRequest("p-"+strconv.Itoa(i)))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"p-1"}, created, "only the gang whose pods all exist")

	pg := &schedv1alpha1.PodGang{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "p-1"}, pg))
	require.Len(t, pg.Spec.PodGroups, 1)
	assert.Equal(t, "p-1-w", pg.Spec.PodGroups[0].Name)
	assert.Equal(t, []schedv1alpha1.NamespacedName{{Namespace: "ns", Name: "p-1-w-a"}, {Namespace: "ns", Name: "p-1-w-b"}}, pg.Spec.PodGroups[0].PodReferences)
	assert.Equal(t, "1", pg.Labels[apicommon.LabelPodCliqueSetReplicaIndex])
	assert.True(t, metav1.IsControlledBy(pg, pcs), "owned by its PodCliqueSet, as the gang writer's gangs are")

	res, err := gc.Reconcile(ctx, gangRequest("p-1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"p-1"}, created, "an existing gang is the gang writer's")
	assert.Zero(t, res.RequeueAfter)

	// The old gang of a replica made again is still going away: no pod event will come back,
	// so the request does.
	old := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-9", Finalizers: []string{"test/hold"}}}
	require.NoError(t, c.Create(ctx, old))
	require.NoError(t, c.Delete(ctx, old))
	res, err = gc.Reconcile(ctx, gangRequest("p-9"))
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter)
}

func gangRequest(name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
}

// Two passes that find the same gang missing at once send one create: the second leaves the
// gang to the first instead of a create the apiserver refuses with AlreadyExists.
func TestAGangIsCreatedOnceByPassesRacingForIt(t *testing.T) {
	now := time.Now()
	f := newGangFixture(1, now)
	f.addPod(0, "p-0-w-a", now, false)
	f.addPod(0, "p-0-w-b", now, false)
	var (
		mu      sync.Mutex
		created []string
	)
	entered, release := make(chan struct{}), make(chan struct{})
	c := f.client(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			created = append(created, obj.GetName())
			first := len(created) == 1
			mu.Unlock()
			if first {
				close(entered)
				<-release // the first create is still on its way when the second pass runs
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	gc := &gangCreator{r: &Reconciler{Client: c, Registry: &backend.Registry{}}}
	ctx := context.Background()

	firstDone := make(chan error, 1)
	go func() {
		_, err := gc.Reconcile(ctx, gangRequest("p-0"))
		firstDone <- err
	}()
	<-entered
	_, err := gc.Reconcile(ctx, gangRequest("p-0"))
	require.NoError(t, err)
	close(release)
	require.NoError(t, <-firstDone)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"p-0"}, created, "one create of the gang")
}

// A gang whose pods all exist is created while another gang of the same PodCliqueSet is still
// being written: the fast path waits for its own gang's create, not for every PodGang write
// of the PodCliqueSet (at 500 replicas that put every gang back every 20 ms while any other was
// written).
func TestAGangIsNotHeldBackByAnotherGangsWrite(t *testing.T) {
	now := time.Now()
	f := newGangFixture(2, now)
	f.addPod(0, "p-0-w-a", now, false)
	f.addPod(0, "p-0-w-b", now, false)
	f.addPod(1, "p-1-w-a", now, false)
	f.addPod(1, "p-1-w-b", now, false)
	var (
		mu      sync.Mutex
		created []string
	)
	entered, release := make(chan struct{}), make(chan struct{})
	c := f.client(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			mu.Lock()
			created = append(created, obj.GetName())
			mu.Unlock()
			if obj.GetName() == "p-0" {
				close(entered)
				<-release // p-0's create is on its way while p-1 is reconciled
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	gc := &gangCreator{r: &Reconciler{Client: c, Registry: &backend.Registry{}}}
	ctx := context.Background()

	firstDone := make(chan error, 1)
	go func() {
		_, err := gc.Reconcile(ctx, gangRequest("p-0"))
		firstDone <- err
	}()
	<-entered
	res, err := gc.Reconcile(ctx, gangRequest("p-1"))
	require.NoError(t, err)
	mu.Lock()
	assert.Equal(t, []string{"p-0", "p-1"}, created, "p-1 is created while p-0's create is under way")
	mu.Unlock()
	assert.Zero(t, res.RequeueAfter)

	// The same gang, though, waits for its own create.
	res, err = gc.Reconcile(ctx, gangRequest("p-0"))
	require.NoError(t, err)
	assert.Positive(t, res.RequeueAfter, "p-0's own create is still under way")
	close(release)
	require.NoError(t, <-firstDone)
}

// laggingInformer is a PodGang informer that has processed events up to rv.
type laggingInformer struct{ rv atomic.Value }

func (l *laggingInformer) LastStoreSyncResourceVersion() string {
	s, _ := l.rv.Load().(string)
	return s
}

// A gang created a moment ago is not created again when the cache catches up between the
// creator's read and its check of the record: the check comes first, so a read after it shows
// the gang. Read first, the creator sent a create the apiserver refused (AlreadyExists) for 30
// of the 165 gangs of the 1000-pod apply while the operator's informers lagged behind.
func TestAGangIsNotCreatedAgainWhenTheCacheCatchesUpMidReconcile(t *testing.T) {
	now := time.Now()
	f := newGangFixture(1, now)
	f.addPod(0, "p-0-w-a", now, false)
	f.addPod(0, "p-0-w-b", now, false)
	informer := &laggingInformer{}
	var (
		created   []string
		lagging   atomic.Bool
		createdRV string
	)
	c := f.client(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			created = append(created, obj.GetName())
			err := c.Create(ctx, obj, opts...)
			// The apiserver's resourceVersions are cluster-wide; the fake client's start at 1
			// for each object, which leaves no room for an informer behind it.
			obj.SetResourceVersion("10")
			createdRV = obj.GetResourceVersion()
			return err
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, gang := obj.(*schedv1alpha1.PodGang); gang && lagging.Load() {
				// The cache does not show the gang yet, and its create event arrives just
				// after this read.
				lagging.Store(false)
				informer.rv.Store(createdRV)
				return apierrors.NewNotFound(schedv1alpha1.Resource("podgangs"), key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	gc := &gangCreator{r: &Reconciler{Client: c, Registry: &backend.Registry{},
		gangWrites: common.NewWritesFrom(c.Scheme(), c, map[client.Object]consistency.LastSyncRVGetter{&schedv1alpha1.PodGang{}: informer})}}
	gc.r.gangWrites.RememberCreates(&schedv1alpha1.PodGang{})
	ctx := context.Background()

	_, err := gc.Reconcile(ctx, gangRequest("p-0"))
	require.NoError(t, err)
	require.Equal(t, []string{"p-0"}, created)
	informer.rv.Store("9")
	lagging.Store(true)

	// A pod event brings the gang back while the informer lags.
	res, err := gc.Reconcile(ctx, gangRequest("p-0"))
	require.NoError(t, err)
	assert.Equal(t, []string{"p-0"}, created, "the gang is not created again")
	assert.Positive(t, res.RequeueAfter, "put off until the cache shows the create")
	assert.True(t, lagging.Load(), "the cache is not read before the record says it shows the create")

	lagging.Store(false) // the create event arrives
	informer.rv.Store(createdRV)
	res, err = gc.Reconcile(ctx, gangRequest("p-0"))
	require.NoError(t, err)
	assert.Equal(t, []string{"p-0"}, created)
	assert.Zero(t, res.RequeueAfter, "the cache shows the gang: nothing left to do")
}
