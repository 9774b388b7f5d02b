package controller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestRollingUpdateKeepsMembersWhoseReplacementIsRefused: an update whose new pods the
// apiserver refuses (here: priority set in the pod spec, which this harness admits as it has no
// webhooks; in a cluster a ServiceAccount deleted after admission does the same) deletes no
// healthy pod, of the standalone clique or the scaling group; the PodCliques say why
// (PodCreateFailed). Fixing the template lets the update proceed.
func TestRollingUpdateKeepsMembersWhoseReplacementIsRefused(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "refused", 1)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 2
	pcs.Spec.Template.Clique("router").Spec.MinAvailable = ptr.To[int32](1)
	e.create(pcs)
	e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		got := e.pcs(c, "refused")
		assert.EqualValues(c, 1, got.Status.AvailableReplicas)
		assert.Len(c, e.podsOf(c), 8)
	})
	before := map[types.UID]bool{}
	for _, p := range e.podsOf(t) {
		before[p.UID] = true
	}

	got := e.pcs(t, "refused")
	e.update(got, func() {
		for _, c := range got.Spec.Template.Cliques {
			c.Spec.PodSpec.Priority = ptr.To[int32](5)
		}
	})
	// Give the update time to do harm; nothing may be deleted.
	time.Sleep(5 * time.Second)
	pods := e.podsOf(t)
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	assert.Len(t, names, 8, "no member may be missing")
	for _, p := range pods {
		assert.True(t, before[p.UID], "pod %s was replaced although its replacement is refused", p.Name)
		assert.Nil(t, p.DeletionTimestamp, "pod %s is being deleted", p.Name)
	}

	e.eventually(func(c *assert.CollectT) {
		for _, name := range []string{"refused-0-router", "refused-0-workers-0-prefill"} {
			pclq := &corev1alpha1.PodClique{}
			if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pclq)) && name == "refused-0-router" {
				cond := condition(pclq.Status.Conditions, apicommon.ConditionPodCreateFailed)
				if assert.NotNil(c, cond, name) {
					assert.Equal(c, metav1.ConditionTrue, cond.Status)
					assert.Contains(c, cond.Message, "priority")
				}
			}
		}
	})

	got = e.pcs(t, "refused")
	e.update(got, func() {
		for _, c := range got.Spec.Template.Cliques {
			c.Spec.PodSpec.Priority = nil
			c.Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
		}
	})
	e.eventually(func(c *assert.CollectT) {
		replaced := 0
		for _, p := range e.podsOf(c) {
			if !before[p.UID] {
				replaced++
			}
		}
		assert.Equal(c, 8, replaced, "the fixed update goes through")
	})
}
