package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ai-dynamo/grove/internal/operator/backend"
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
