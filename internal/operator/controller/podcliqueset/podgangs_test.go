package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Whether a gang that is still missing pods is due is judged at the instant the plan read the
// cache, not when its turn comes in the pass. Here the pass's first create takes 1.5 s; the
// second gang, one of its two pods a second old when the plan was made (creation times have
// whole seconds), must not be created incomplete (it was, when the grace was checked against
// the clock at its turn), and the pass asks to come back soon, its grace having run out.
func TestIncompleteGangIsJudgedAtThePlanInstant(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	f := newGangFixture(2, clk.Now().Add(-3*time.Second))
	f.addPod(0, "p-0-w-a", clk.Now().Add(-2*time.Second), false)
	f.addPod(0, "p-0-w-b", clk.Now().Add(-2*time.Second), false)
	f.addPod(1, "p-1-w-a", clk.Now().Add(-time.Second), false)
	var created []string
	c := f.client(t, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			created = append(created, obj.GetName())
			clk.Step(1500 * time.Millisecond) // a create on a busy apiserver
			return c.Create(ctx, obj, opts...)
		},
	})

	r := &Reconciler{Client: c, Registry: &backend.Registry{}, clock: clk}
	st := r.newState(f.pcs)
	require.NoError(t, (&podGangs{r}).Sync(context.Background(), st))

	assert.Equal(t, []string{"p-0"}, created, "only the complete gang is created")
	assert.Equal(t, minGangRequeue, st.requeue, "its grace ran out during the pass: the next pass plans it afresh")
}

// A pass does not create a gang that the fast path (gangCreator) created after the pass read
// the cache: neither when the cache shows it by the time of the gang's turn, nor when the
// cache is still behind the fast path's create. Each such create was refused with
// AlreadyExists (30 in the 1000-pod apply).
func TestAPassLeavesAGangTheFastPathCreatedMeanwhile(t *testing.T) {
	for _, cacheShowsIt := range []bool{true, false} {
		t.Run(map[bool]string{true: "the cache shows it", false: "the cache is behind"}[cacheShowsIt], func(t *testing.T) {
			now := time.Now()
			f := newGangFixture(1, now.Add(-time.Minute))
			f.addPod(0, "p-0-w-a", now, false)
			f.addPod(0, "p-0-w-b", now, false)
			informer := &laggingInformer{}
			var created []string
			c := f.client(t, interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					created = append(created, obj.GetName())
					err := c.Create(ctx, obj, opts...)
					obj.SetResourceVersion("10") // cluster-wide, as the apiserver's (see the fast path's test)
					return err
				},
				List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
					if _, gangs := list.(*schedv1alpha1.PodGangList); gangs {
						return nil // the pass's read: before the fast path's create
					}
					return c.List(ctx, list, opts...)
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if _, gang := obj.(*schedv1alpha1.PodGang); gang && !cacheShowsIt {
						return apierrors.NewNotFound(schedv1alpha1.Resource("podgangs"), key.Name)
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			r := &Reconciler{Client: c, Registry: &backend.Registry{},
				gangWrites: common.NewWritesFrom(c.Scheme(), c, map[client.Object]consistency.LastSyncRVGetter{&schedv1alpha1.PodGang{}: informer})}
			r.gangWrites.RememberCreates(&schedv1alpha1.PodGang{})
			r.initWrites(nil)
			ctx := context.Background()

			// The fast path creates the gang.
			_, err := (&gangCreator{r: r}).Reconcile(ctx, gangRequest("p-0"))
			require.NoError(t, err)
			require.Equal(t, []string{"p-0"}, created)
			informer.rv.Store(map[bool]string{true: "10", false: "9"}[cacheShowsIt])

			st := r.newState(f.pcs)
			require.NoError(t, (&podGangs{r}).Sync(ctx, st))
			assert.Equal(t, []string{"p-0"}, created, "the pass sends no second create")
		})
	}
}
