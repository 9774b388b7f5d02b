package controller_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/grove"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// metadataBackend is grove-scheduler's backend that also asks for PodGang metadata of its own,
// as the KAI backend does for its queue and pod-grouper opt-out, and records the env label of
// each PodGang it is handed.
type metadataBackend struct {
	backend.Backend
	synced *sync.Map // PodGang name -> env label at the last SyncPodGang
}

func (b metadataBackend) SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	b.synced.Store(pg.Name, pg.Labels["env"])
	return b.Backend.SyncPodGang(ctx, pg)
}

func (metadataBackend) PodGangMetadata(pcs *corev1alpha1.PodCliqueSet) (map[string]string, map[string]string) {
	return map[string]string{"example.com/queue": pcs.Spec.Template.Cliques[0].Labels["example.com/queue"], "team": "from-backend"},
		map[string]string{"example.com/skip": "true"}
}

// TestPodGangsMirrorThePodCliqueSetsMetadata: every PodGang carries the PodCliqueSet's labels
// and annotations outside grove.io/ (so e.g. kai.scheduler/node-pool reaches KAI), then what
// the backend adds, then Grove's own keys; a changed PodCliqueSet label reaches the PodGangs.
func TestPodGangsMirrorThePodCliqueSetsMetadata(t *testing.T) {
	synced := &sync.Map{}
	e := newEnv(t, withBackend(configv1alpha1.SchedulerNameGrove, func() backend.Backend { return metadataBackend{grove.New(), synced} }))
	pcs := disaggregated(e.ns, "meta", 1)
	pcs.Labels = map[string]string{"kai.scheduler/node-pool": "pool-a", "team": "from-pcs", "env": "prod",
		"grove.io/podgang": "not-mirrored", "app.kubernetes.io/managed-by": "someone"}
	pcs.Annotations = map[string]string{"example.com/owner": "alice", "grove.io/topology-name": "not-mirrored",
		corev1.LastAppliedConfigAnnotation: `{"kind":"PodCliqueSet"}`}
	pcs.Spec.Template.Cliques[0].Labels = map[string]string{"example.com/queue": "q1"}
	e.create(pcs)

	e.eventually(func(c *assert.CollectT) {
		for _, name := range []string{"meta-0", "meta-0-workers-0"} {
			pg := e.podGang(c, name)
			assert.Equal(c, "pool-a", pg.Labels["kai.scheduler/node-pool"], name)
			assert.Equal(c, "prod", pg.Labels["env"], name)
			assert.Equal(c, "from-backend", pg.Labels["team"], "%s: the backend's keys win over the PodCliqueSet's", name)
			assert.Equal(c, "q1", pg.Labels["example.com/queue"], name)
			assert.NotContains(c, pg.Labels, "grove.io/podgang", "%s: grove.io/ keys are never taken from the PodCliqueSet", name)
			assert.Equal(c, "0", pg.Labels["grove.io/podcliqueset-replica-index"], name)
			assert.Equal(c, "grove-operator", pg.Labels["app.kubernetes.io/managed-by"], name)
			assert.Equal(c, map[string]string{"example.com/owner": "alice", "example.com/skip": "true"}, pg.Annotations,
				"%s: no grove.io/ annotation of the PodCliqueSet, no last-applied configuration", name)
		}
	})

	e.update(pcs, func() {
		pcs.Labels["env"] = "staging"
		pcs.Annotations["example.com/owner"] = "bob"
	})
	e.eventually(func(c *assert.CollectT) {
		for _, name := range []string{"meta-0", "meta-0-workers-0"} {
			pg := e.podGang(c, name)
			assert.Equal(c, "staging", pg.Labels["env"], name)
			assert.Equal(c, "bob", pg.Annotations["example.com/owner"], name)
			got, _ := synced.Load(name)
			assert.Equal(c, "staging", got, "%s: a metadata change is handed to the backend (its objects carry the labels)", name)
		}
	})
}
