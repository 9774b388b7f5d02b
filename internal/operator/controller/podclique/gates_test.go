package podclique

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
)

// A pass that runs on a cache still showing the gate of a pod this lifter just ungated leaves
// the pod alone; once the cache shows a newer copy of the pod, a gate on it (put back by
// someone) is removed again.
func TestGateLifterDoesNotPatchAPodItJustUngated(t *testing.T) {
	scheme := backendtest.Scheme()
	gated := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: apicommon.SchedulingGatePodGangPendingCreation}}}}
	}
	gang := &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0"},
		Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: "p-0-w",
			PodReferences: []schedv1alpha1.NamespacedName{{Namespace: "ns", Name: "a"}, {Namespace: "ns", Name: "b"}}}}}}
	patched := map[string]int{}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(gang, gated("a"), gated("b")).
		WithInterceptorFuncs(interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				patched[obj.GetName()]++
				return c.Patch(ctx, obj, patch, opts...)
			},
		}).Build()
	r := &Reconciler{Client: c}
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-w",
		Labels: map[string]string{apicommon.LabelPodGang: "p-0"}}}
	lifted := common.NewOwnWrites(gateWriteTTL)
	ctx := context.Background()

	// The stale copies: what the cache shows until the PATCHes' events arrive.
	stale := func() []*corev1.Pod {
		var pods []*corev1.Pod
		for _, name := range []string{"a", "b"} {
			p := &corev1.Pod{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, p))
			pods = append(pods, p)
		}
		return pods
	}
	first, again := stale(), stale()
	require.NoError(t, r.removeGates(ctx, pclq, first, lifted))
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, patched)

	require.NoError(t, r.removeGates(ctx, pclq, again, lifted))
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, patched, "no second PATCH from a cache behind the first")

	// The cache shows a copy of b newer than the lifter's write, gated (the fake client lets
	// a gate be put back; the point is that the record is dropped once the cache caught up).
	b := &corev1.Pod{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "b"}, b))
	b.Spec.SchedulingGates = gated("b").Spec.SchedulingGates
	require.NoError(t, c.Update(ctx, b))
	require.NoError(t, r.removeGates(ctx, pclq, []*corev1.Pod{b}, lifted))
	assert.Equal(t, map[string]int{"a": 1, "b": 2}, patched)
}

// The gate removal names the gate's position and checks it is still Grove's: from a copy of
// the pod older than its gates, the PATCH is refused and no gate is lost; from a current copy
// only Grove's gate goes.
func TestGateRemovalFromAStaleCopyDropsNoOtherGate(t *testing.T) {
	scheme := backendtest.Scheme()
	grove := corev1.PodSchedulingGate{Name: apicommon.SchedulingGatePodGangPendingCreation}
	user := corev1.PodSchedulingGate{Name: "example.com/quota"}
	stored := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{user, grove}}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).Build()
	ctx := context.Background()

	stale := stored.DeepCopy()
	stale.Spec.SchedulingGates = []corev1.PodSchedulingGate{grove} // before the user's gate came first
	patch, err := gateRemovalPatch(stale)
	require.NoError(t, err)
	require.Error(t, c.Patch(ctx, stale, patch), "the gate at index 0 is no longer Grove's")
	got := &corev1.Pod{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(stored), got))
	assert.Equal(t, []corev1.PodSchedulingGate{user, grove}, got.Spec.SchedulingGates)

	patch, err = gateRemovalPatch(got)
	require.NoError(t, err)
	require.NoError(t, c.Patch(ctx, got, patch))
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(stored), got))
	assert.Equal(t, []corev1.PodSchedulingGate{user}, got.Spec.SchedulingGates)

	_, err = gateRemovalPatch(got)
	assert.Error(t, err, "a pod without the gate has nothing to remove")
}
