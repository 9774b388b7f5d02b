package podclique

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
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
	// The pods' informer: it has processed the pods as created, not the gate removals.
	informer := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	r := &Reconciler{Client: c, gateWrites: common.NewWritesFrom(scheme, c, map[client.Object]consistency.LastSyncRVGetter{&corev1.Pod{}: informer})}
	r.initWrites(nil)
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-w",
		Labels: map[string]string{apicommon.LabelPodGang: "p-0"}}}
	ctx := r.gateWrites.For(context.Background(), pclq)
	// A pass of the lifter runs only once the cache shows its last gate removals for the clique.
	pass := func(pods []*corev1.Pod) {
		t.Helper()
		if r.gateWrites.CaughtUp(ctx, pclq, client.ObjectKeyFromObject(pclq)) {
			require.NoError(t, r.removeGates(ctx, pclq, pods))
		}
	}

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
	informer.Bookmark(first[1].ResourceVersion)
	pass(first)
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, patched)

	pass(again)
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, patched, "no second PATCH from a cache behind the first")

	// The cache shows a copy of b newer than the lifter's write, gated (the fake client lets
	// a gate be put back; the point is that the record is dropped once the cache caught up).
	b := &corev1.Pod{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "b"}, b))
	b.Spec.SchedulingGates = gated("b").Spec.SchedulingGates
	require.NoError(t, c.Update(context.Background(), b))
	informer.Bookmark(b.ResourceVersion)
	pass([]*corev1.Pod{b})
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
