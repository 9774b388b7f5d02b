package podcliquescalinggroup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
)

// A count that changed and changed back before the cache showed the write of the change: the
// next write must not start from the cached copy, whose count equals the new one, or the
// status is left as it is and the server keeps the stale value. The group's next reconcile
// waits (its consistency check) until the cache shows the last status write.
func TestStatusWriteWaitsForTheCacheToShowTheLastOne(t *testing.T) {
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	pcsg := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p-0-g",
		Labels: map[string]string{apicommon.LabelPartOfKey: "p"}},
		Spec: corev1alpha1.PodCliqueScalingGroupSpec{Replicas: 1, MinAvailable: ptr.To[int32](1), CliqueNames: []string{"a", "b"}}}
	server := fake.NewClientBuilder().WithScheme(backendtest.Scheme()).WithObjects(pcsg).
		WithStatusSubresource(&corev1alpha1.PodCliqueScalingGroup{}).Build()
	// The scaling groups' informer.
	informer := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	r := &Reconciler{Client: server, writes: common.NewWritesFrom(backendtest.Scheme(), server,
		map[client.Object]consistency.LastSyncRVGetter{&corev1alpha1.PodCliqueScalingGroup{}: informer})}
	r.initWrites(nil)
	ctx := r.writes.For(context.Background(), pcsg)
	key := client.ObjectKeyFromObject(pcsg)
	get := func() *corev1alpha1.PodCliqueScalingGroup {
		got := &corev1alpha1.PodCliqueScalingGroup{}
		require.NoError(t, server.Get(ctx, key, got))
		return got
	}
	ready := []*corev1alpha1.PodClique{member(0, "a", 2, 2, ""), member(0, "b", 2, 2, "")}
	notReady := []*corev1alpha1.PodClique{member(0, "a", 2, 0, ""), member(0, "b", 2, 2, "")}

	// The group's only replica is not available, then is, then is not again. A reconcile
	// writes only when the consistency check passes.
	write := func(cached *corev1alpha1.PodCliqueScalingGroup, members []*corev1alpha1.PodClique) bool {
		if !r.writes.CaughtUp(ctx, pcsg, key) {
			return true
		}
		_, err := r.updateStatus(ctx, pcs, cached, members, &groupPods{reader: r.Client, pcsg: cached}, hash.NewTemplates(&pcs.Spec.Template), true)
		require.NoError(t, err)
		return false
	}
	informer.Bookmark(get().ResourceVersion)
	require.False(t, write(get(), notReady))
	afterFirst := get()
	informer.Bookmark(afterFirst.ResourceVersion)
	require.False(t, write(get(), ready))
	written := get()
	require.EqualValues(t, 1, written.Status.AvailableReplicas)

	// The cache shows the first write but not the second: its availableReplicas 0 equals the
	// new count.
	assert.True(t, write(afterFirst, notReady), "the group is looked at again once the cache shows the last write")
	assert.Equal(t, written.ResourceVersion, get().ResourceVersion, "nothing written from a copy older than the last write")

	// The cache caught up.
	informer.Bookmark(written.ResourceVersion)
	require.False(t, write(get(), notReady))
	assert.EqualValues(t, 0, get().Status.AvailableReplicas)
}
