package podclique

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

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

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
)

// A clique whose pod is created gated and ungated before the status write that counted it
// gated shows in the cache: the next write must not start from the cached copy, whose count
// equals the new one, or the patch leaves scheduleGatedReplicas out and the server keeps 1.
func TestStatusWriteWaitsForTheCacheToShowTheLastOne(t *testing.T) {
	scheme := backendtest.Scheme()
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-w", UID: "u",
		Labels: map[string]string{apicommon.LabelPartOfKey: "p", apicommon.LabelManagedByKey: apicommon.LabelManagedByValue}},
		Spec: corev1alpha1.PodCliqueSpec{Replicas: 1}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-w-abcde",
		Labels:          common.WithLabels(common.PodCliqueSelector("p", "p-0-w"), map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue}),
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(pclq, corev1alpha1.SchemeGroupVersion.WithKind("PodClique"))}},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: apicommon.SchedulingGatePodGangPendingCreation}}}}

	// The cache: pods as stored, the PodClique as it was before the first status write while
	// stale is set.
	var stale atomic.Pointer[corev1alpha1.PodClique]
	server := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pclq, pod).
		WithStatusSubresource(&corev1alpha1.PodClique{}).
		WithIndex(&corev1.Pod{}, common.LabelIndex(apicommon.LabelPodClique), common.IndexManagedLabel(apicommon.LabelPodClique)).Build()
	cache := interceptor.NewClient(server, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if old := stale.Load(); old != nil && key.Name == pclq.Name {
				old.DeepCopyInto(obj.(*corev1alpha1.PodClique))
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	// The PodCliques' informer: it shows the clique as created until told otherwise.
	informer := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	r := &Reconciler{Client: cache, StatusClient: server,
		statusWrites: common.NewWritesFrom(scheme, cache, map[client.Object]consistency.LastSyncRVGetter{&corev1alpha1.PodClique{}: informer})}
	r.initWrites(nil)
	w := newStatusWriter(r)
	key := client.ObjectKeyFromObject(pclq)
	ctx := context.Background()
	stored := func() corev1alpha1.PodCliqueStatus {
		got := &corev1alpha1.PodClique{}
		require.NoError(t, server.Get(ctx, key, got))
		return got.Status
	}

	before := &corev1alpha1.PodClique{}
	require.NoError(t, server.Get(ctx, key, before))
	informer.Bookmark(before.ResourceVersion)
	require.NoError(t, w.write(ctx, key))
	require.EqualValues(t, 1, stored().ScheduleGatedReplicas)

	// The gate goes; the cache still shows the clique without the write above.
	require.NoError(t, server.Get(ctx, client.ObjectKeyFromObject(pod), pod))
	pod.Spec.SchedulingGates = nil
	require.NoError(t, server.Update(ctx, pod))
	stale.Store(before)
	require.NoError(t, w.write(ctx, key))
	assert.EqualValues(t, 1, stored().ScheduleGatedReplicas, "nothing written from a copy older than the last write")
	require.Eventually(t, func() bool { return w.queue.Len() == 1 }, 5*time.Second, 10*time.Millisecond,
		"the clique is queued again")

	// The cache catches up.
	stale.Store(nil)
	latest := &corev1alpha1.PodClique{}
	require.NoError(t, server.Get(ctx, key, latest))
	informer.Bookmark(latest.ResourceVersion)
	require.NoError(t, w.write(ctx, key))
	assert.EqualValues(t, 0, stored().ScheduleGatedReplicas)
	assert.EqualValues(t, 1, stored().Replicas)
}
