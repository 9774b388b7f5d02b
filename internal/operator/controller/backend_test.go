package controller_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/grove"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// recordingBackend is grove-scheduler's backend that records the framework calls it gets
// and fails the first SyncPodGang of every PodGang.
type recordingBackend struct {
	backend.Backend
	mu     sync.Mutex
	synced map[string][]int64 // PodGang name -> generations synced, in order
	failed map[string]bool
}

const refAnnotation = "test.grove.io/podgang-ref"

func (b *recordingBackend) SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.failed[pg.Name] {
		b.failed[pg.Name] = true
		return errors.New("backend unavailable")
	}
	b.synced[pg.Name] = append(b.synced[pg.Name], pg.Generation)
	return b.Backend.SyncPodGang(ctx, pg)
}

func (b *recordingBackend) PreparePod(pod *corev1.Pod, ref backend.PodGangRef) {
	b.Backend.PreparePod(pod, ref)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[refAnnotation] = ref.Name + "/" + ref.PodGroup
}

func (b *recordingBackend) generations(name string) []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.synced[name]...)
}

// TestBackendHooks: pods go through the backend's PreparePod with their PodGang and group,
// and every PodGang is handed to SyncPodGang once per spec generation (created, then changed
// by a scale-out), with a failed sync retried.
func TestBackendHooks(t *testing.T) {
	rec := &recordingBackend{Backend: grove.New(), synced: map[string][]int64{}, failed: map[string]bool{}}
	e := newEnv(t, withBackend(configv1alpha1.SchedulerNameGrove, func() backend.Backend { return rec }))
	e.create(disaggregated(e.ns, "hooks", 1))

	onceEachGeneration := func(c *assert.CollectT) {
		for _, name := range []string{"hooks-0", "hooks-0-workers-0"} {
			pg := e.podGang(c, name)
			gens := rec.generations(name)
			if assert.NotEmpty(c, gens, name) {
				assert.Equal(c, pg.Generation, gens[len(gens)-1], "%s synced at its current generation", name)
				assert.IsIncreasing(c, gens, "%s synced once per generation", name)
			}
		}
	}
	e.eventually(func(c *assert.CollectT) {
		onceEachGeneration(c)
		assert.Len(c, e.pods(""), 7)
	})
	for _, p := range e.pods("") {
		assert.Equal(t, p.Labels[apicommon.LabelPodGang]+"/"+p.Labels[apicommon.LabelPodClique], p.Annotations[refAnnotation], p.Name)
		assert.Equal(t, "grove-scheduler", p.Spec.SchedulerName)
	}

	before := len(rec.generations("hooks-0"))
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "hooks-0-router"}}, 2)
	e.eventually(func(c *assert.CollectT) {
		pg := &schedv1alpha1.PodGang{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "hooks-0"}, pg))
		assert.Len(c, pg.Spec.PodGroups[0].PodReferences, 2)
		assert.Greater(c, len(rec.generations("hooks-0")), before, "the spec change was synced")
		onceEachGeneration(c)
	})
}
