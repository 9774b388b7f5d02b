package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ai-dynamo/grove/internal/operator/backend/factories"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/expectations"
	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
)

// staleCache reads through to the apiserver except for pods, which it serves from a snapshot
// the test controls: an informer cache that has not caught up.
type staleCache struct {
	client.Client
	mu   sync.Mutex
	pods corev1.PodList
}

func (s *staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if pl, ok := list.(*corev1.PodList); ok {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.pods.DeepCopyInto(pl)
		return nil
	}
	return s.Client.List(ctx, list, opts...)
}

func (s *staleCache) freeze(pods []corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = corev1.PodList{Items: pods}
}

// TestExpectationsSurviveAStaleCache drives the PodClique reconciler against the real
// apiserver while its pod cache lags behind: repeated reconciles neither create duplicate pods
// nor lose count of pods they deleted.
func TestExpectationsSurviveAStaleCache(t *testing.T) {
	e := newNamespace(t)
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stale"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 3)}}}}
	e.create(pcs)
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stale-0-w", Labels: map[string]string{
		apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "stale",
		apicommon.LabelPodCliqueSetReplicaIndex: "0", apicommon.LabelPodGang: "stale-0",
	}}, Spec: corev1alpha1.PodCliqueSpec{RoleName: "w", Replicas: 3, PodSpec: podSpec()}}
	e.create(pclq)

	registry, err := factories.NewRegistry(operatorConfig().Scheduler)
	require.NoError(t, err)
	cache := &staleCache{Client: e.c}
	r := &podclique.Reconciler{Client: cache, Registry: registry, Expectations: expectations.New(time.Minute), Recorder: &events.FakeRecorder{}}
	reconcileOnce := func() {
		t.Helper()
		_, err := r.Reconcile(e.ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.ns, Name: "stale-0-w"}})
		require.NoError(t, err)
	}
	setReplicas := func(n int32) { e.update(pclq, func() { pclq.Spec.Replicas = n }) }

	// The cache has not seen any pod yet: the second reconcile must count the first one's.
	reconcileOnce()
	reconcileOnce()
	reconcileOnce()
	live := e.pods("stale-0-w")
	require.Equal(t, 3, len(live), "no duplicates")
	var hostnames []string
	for _, p := range live {
		hostnames = append(hostnames, p.Spec.Hostname)
	}
	assert.Equal(t, []string{"stale-0-w-0", "stale-0-w-1", "stale-0-w-2"}, hostnames, "in-flight pods keep their indices")

	// The cache catches up, then freezes: it keeps showing all three pods live.
	cache.freeze(live)
	setReplicas(1)
	reconcileOnce()
	require.Equal(t, 1, len(e.pods("stale-0-w")), "two pods deleted")
	setReplicas(2)
	reconcileOnce()
	reconcileOnce()
	assert.Equal(t, 2, len(e.pods("stale-0-w")), "the deletions still in flight are counted, so exactly one pod is added")
}

// TestScaleOutOfAHundredPods scales a PodClique from 1 to 100 pods and times it until every
// pod exists and the PodGang references all of them; a watch proves no pod was created twice.
func TestScaleOutOfAHundredPods(t *testing.T) {
	e := newEnv(t)
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "big"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 1)}}}}
	e.create(pcs)
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, refNames(e.podGang(c, "big-0").Spec.PodGroups[0]), 1)
	})

	events, _ := e.watchAll(&corev1.PodList{})
	created := map[types.UID]bool{}
	var mu sync.Mutex
	go func() {
		for ev := range events {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type == watch.Added {
				mu.Lock()
				created[p.UID] = true
				mu.Unlock()
			}
		}
	}()

	start := time.Now()
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "big-0-w"}}, 100)
	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "big-0")
		assert.Len(c, refNames(pg.Spec.PodGroups[0]), 100)
		ungated := 0
		for _, p := range e.pods("big-0-w") {
			if !gated(&p) {
				ungated++
			}
		}
		assert.Equal(c, 100, ungated, "every pod listed and ungated")
	})
	elapsed := time.Since(start)
	// Reported, not asserted: speed is measured by make bench-operator.
	t.Logf("scale-out 1 -> 100 pods (created, listed in the PodGang, ungated) took %v", elapsed.Round(10*time.Millisecond))
	// The watch replays the existing pod as ADDED, then every pod created after it: every pod
	// ever created is one of the final 100, so none was created twice.
	final := map[types.UID]bool{}
	for _, p := range e.pods("big-0-w") {
		final[p.UID] = true
	}
	require.Len(t, final, 100)
	e.eventually(func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(c, final, created)
	})
}
