package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/pkg/controller/util/consistency"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

func TestUpdateProgress(t *testing.T) {
	started := metav1.NewTime(time.Now().Add(-time.Minute)).Rfc3339Copy()
	inProgress := func(replica int32) *corev1alpha1.PodCliqueSetUpdateProgress {
		return &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: started,
			CurrentlyUpdating: []corev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: replica, UpdateStartedAt: started}}}
	}
	ready := replicaUpdate{available: true, settled: true}
	done := replicaUpdate{updated: true, available: true, settled: true}
	cases := []struct {
		name         string
		strategy     corev1alpha1.UpdateStrategyType
		previousHash string
		previous     *corev1alpha1.PodCliqueSetUpdateProgress
		replicas     []replicaUpdate
		wantCurrent  *int32
		wantEnded    bool
		wantRestart  bool
	}{
		{name: "a new PodCliqueSet has no update", replicas: []replicaUpdate{{}, {}}},
		{name: "a hash change starts with the first replica", previousHash: "old",
			replicas: []replicaUpdate{ready, ready}, wantCurrent: ptr.To[int32](0), wantRestart: true},
		{name: "an unavailable replica goes first", previousHash: "old",
			replicas: []replicaUpdate{ready, {}}, wantCurrent: ptr.To[int32](1), wantRestart: true},
		{name: "the replica being updated stays until all its pods are ready", previousHash: "new", previous: inProgress(0),
			replicas: []replicaUpdate{{updated: true, available: true}, ready}, wantCurrent: ptr.To[int32](0)},
		{name: "then the next one", previousHash: "new", previous: inProgress(0),
			replicas: []replicaUpdate{done, ready}, wantCurrent: ptr.To[int32](1)},
		{name: "a second change carries on with the replica being updated", previousHash: "intermediate", previous: inProgress(1),
			replicas: []replicaUpdate{ready, {available: true}}, wantCurrent: ptr.To[int32](1), wantRestart: true},
		{name: "ends when every replica is updated", previousHash: "new", previous: inProgress(1),
			replicas: []replicaUpdate{done, done}, wantEnded: true},
		// As upstream: OnDelete replaces nothing itself, so its update ends as it starts.
		{name: "OnDelete picks no replica and ends at once", strategy: corev1alpha1.OnDeleteStrategy, previousHash: "old",
			replicas: []replicaUpdate{ready}, wantRestart: true, wantEnded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			strategy := tc.strategy
			if strategy == "" {
				strategy = corev1alpha1.RollingRecreateStrategy
			}
			pcs := &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Replicas: int32(len(tc.replicas)),
				UpdateStrategy: &corev1alpha1.PodCliqueSetUpdateStrategy{Type: strategy}}}
			stored := pcs.DeepCopy()
			if tc.previousHash != "" {
				stored.Status.CurrentGenerationHash = ptr.To(tc.previousHash)
			}
			stored.Status.UpdateProgress = tc.previous
			got := updateProgress(&state{pcs: pcs, stored: stored}, "new", func(i int) replicaUpdate { return tc.replicas[i] }, nil, nil)
			if tc.previousHash == "" {
				assert.Nil(t, got)
				return
			}
			if !assert.NotNil(t, got) {
				return
			}
			if tc.wantCurrent == nil {
				assert.Nil(t, got.CurrentlyUpdating)
			} else if assert.Len(t, got.CurrentlyUpdating, 1) {
				assert.Equal(t, *tc.wantCurrent, got.CurrentlyUpdating[0].ReplicaIndex)
			}
			assert.Equal(t, tc.wantEnded, got.UpdateEndedAt != nil)
			assert.Equal(t, tc.wantRestart, !got.UpdateStartedAt.Equal(&started), "a new update starts")
		})
	}
}

// TestUpdateEndsOnceScalingGroupsReportIt: every replica's PodCliques are updated, but a
// scaling group has not reported the new hash yet (its controller writes it one status write
// later): the update goes on until it does, since the lists of updated objects freeze when it
// ends. It failed before: the update ended listing one of the two scaling groups.
func TestUpdateEndsOnceScalingGroupsReportIt(t *testing.T) {
	started := metav1.NewTime(time.Now().Add(-time.Minute)).Rfc3339Copy()
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "pcs-uid"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 2, UpdateStrategy: &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.RollingRecreateStrategy},
			Template: corev1alpha1.PodCliqueSetTemplateSpec{
				Cliques:                      []*corev1alpha1.PodCliqueTemplateSpec{{Name: "w", Spec: corev1alpha1.PodCliqueSpec{Replicas: 1}}},
				PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"w"}}},
			}}}
	stored := pcs.DeepCopy()
	stored.Status.CurrentGenerationHash = ptr.To("new")
	stored.Status.UpdateProgress = &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: started,
		CurrentlyUpdating: []corev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 1, UpdateStartedAt: started}}}
	owned := metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "PodCliqueSet", Name: "p", UID: "pcs-uid", Controller: ptr.To(true)}}}
	group := func(name string, hash *string) corev1alpha1.PodCliqueScalingGroup {
		g := corev1alpha1.PodCliqueScalingGroup{ObjectMeta: *owned.DeepCopy()}
		g.Name, g.Status.CurrentPodCliqueSetGenerationHash = name, hash
		return g
	}
	done := func(int) replicaUpdate { return replicaUpdate{updated: true, available: true, settled: true} }

	got := updateProgress(&state{pcs: pcs, stored: stored}, "new", done, nil,
		[]corev1alpha1.PodCliqueScalingGroup{group("p-0-g", ptr.To("new")), group("p-1-g", ptr.To("old"))})
	assert.Nil(t, got.UpdateEndedAt, "p-1-g has not reported the new hash")
	assert.Equal(t, []string{"p-0-g"}, got.UpdatedPodCliqueScalingGroups)

	got = updateProgress(&state{pcs: pcs, stored: stored}, "new", done, nil,
		[]corev1alpha1.PodCliqueScalingGroup{group("p-0-g", ptr.To("new")), group("p-1-g", ptr.To("new"))})
	assert.NotNil(t, got.UpdateEndedAt)
	assert.Equal(t, []string{"p-0-g", "p-1-g"}, got.UpdatedPodCliqueScalingGroups)
}

// availableReplicas that changed and changed back before the cache showed the write of the
// change: the next write must not start from the cached copy, whose count equals the new one,
// or the status is left as it is and the server keeps the stale count.
func TestStatusWriteWaitsForTheCacheToShowTheLastOne(t *testing.T) {
	f := newGangFixture(1, time.Now())
	c := f.builder(t).WithStatusSubresource(&corev1alpha1.PodCliqueSet{}, &corev1alpha1.PodClique{}).Build()
	// The PodCliqueSets' informer.
	informer := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	r := &Reconciler{Client: c, writes: common.NewWritesFrom(c.Scheme(), c,
		map[client.Object]consistency.LastSyncRVGetter{&corev1alpha1.PodCliqueSet{}: informer})}
	r.initWrites(nil)
	ctx := r.writes.For(context.Background(), f.pcs)
	key := client.ObjectKeyFromObject(f.pcs)
	get := func() *corev1alpha1.PodCliqueSet {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(f.pcs), got))
		return got
	}
	setReady := func(n int32) {
		pclq := &corev1alpha1.PodClique{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: apicommon.StandalonePodCliqueName("p", 0, "w")}, pclq))
		pclq.Status.ReadyReplicas = n
		require.NoError(t, c.Status().Update(ctx, pclq))
	}
	// A reconcile writes only when the consistency check at its top passes.
	write := func(cached *corev1alpha1.PodCliqueSet) (behind bool) {
		if !r.writes.CaughtUp(ctx, cached, key) {
			return true
		}
		st := &state{pcs: cached.DeepCopy(), stored: cached, children: newChildren(c, cached)}
		corev1alpha1.SetDefaultsPodCliqueSet(st.pcs)
		require.NoError(t, r.updateStatus(ctx, st, nil))
		return false
	}

	// The replica is not available, then is, then is not again.
	setReady(0)
	informer.Bookmark(get().ResourceVersion)
	write(get())
	afterFirst := get()
	informer.Bookmark(afterFirst.ResourceVersion)
	setReady(2)
	write(get())
	written := get()
	require.EqualValues(t, 1, written.Status.AvailableReplicas)

	// The cache shows the first write but not the second: its availableReplicas 0 equals the
	// new count.
	setReady(0)
	assert.True(t, write(afterFirst), "the PodCliqueSet is looked at again once the cache shows the last write")
	assert.Equal(t, written.ResourceVersion, get().ResourceVersion, "nothing written from a copy older than the last write")

	// The cache caught up.
	informer.Bookmark(written.ResourceVersion)
	write(get())
	assert.EqualValues(t, 0, get().Status.AvailableReplicas)
}
