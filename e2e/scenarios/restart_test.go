//go:build e2e

package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
)

var fourCPUNode = map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi"}

// Killing grove-operator (SIGKILL) in the middle of a 100-pod scale-out and starting it again
// loses nothing and creates no duplicate: exactly 100 pods with distinct indices, all bound.
func TestOperatorKilledDuringScaleOut(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 26, fourCPUNode)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, pcs(ns, "big", 1, clique("w", 1, "1", minAvailable(1)))))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "big")) == 1 }, 2*time.Minute, 200*time.Millisecond)

	scaleTo(t, env, pclqRef(ns, common.StandalonePodCliqueName("big", 0, "w")), 100)
	// Kill as soon as the scale-out is under way.
	require.Eventually(t, func() bool { return len(podsOf(t, env, ns, "big")) > 1 }, time.Minute, 20*time.Millisecond)
	require.NoError(t, env.Operator.Kill())
	atKill := len(podsOf(t, env, ns, "big"))
	t.Logf("grove-operator killed with %d of 100 pods created", atKill)

	require.NoError(t, env.StartOperator(ctx))
	require.Eventually(t, func() bool {
		pods := podsOf(t, env, ns, "big")
		return len(pods) == 100 && countBound(pods) == 100
	}, 4*time.Minute, 500*time.Millisecond)
	// Give a duplicating operator the chance to show itself, then count again, by index.
	waitScheduled(t, env, ns, common.BasePodGangName("big", 0))
	pods := podsOf(t, env, ns, "big")
	require.Len(t, pods, 100, "pods were duplicated or lost")
	indices := map[string]bool{}
	for _, p := range pods {
		indices[p.Labels[common.LabelPodCliquePodIndex]] = true
	}
	assert.Len(t, indices, 100, "pod indices are not distinct")
	refs := 0
	for _, g := range podGang(env, ns, common.BasePodGangName("big", 0)).Spec.PodGroups {
		refs += len(g.PodReferences)
	}
	assert.Equal(t, 100, refs, "the PodGang does not list exactly the 100 pods")
	w.assertNoPartialGang()
}

// Killing grove-scheduler while a 40-pod gang is being placed (members assumed and waiting at
// the Permit barrier) binds no partial gang; after a restart the gang is placed whole.
func TestSchedulerKilledWhileGangWaitsInPermit(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 10, fourCPUNode)
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, pcs(ns, "gang", 1, clique("w", 40, "1"))))
	// Kill once every pod is ungated: the scheduler is then assuming members into the barrier.
	require.Eventually(t, func() bool {
		pods := podsOf(t, env, ns, "gang")
		if len(pods) != 40 {
			return false
		}
		for _, p := range pods {
			if len(p.Spec.SchedulingGates) > 0 {
				return false
			}
		}
		return true
	}, 2*time.Minute, 20*time.Millisecond)
	require.NoError(t, env.Scheduler.Kill())
	bound := countBound(podsOf(t, env, ns, "gang"))
	t.Logf("grove-scheduler killed with %d of 40 pods bound", bound)
	// A kill can land while a released barrier is binding; the watcher fails the test if the
	// gang then stays partly bound instead of being completed after the restart.

	require.NoError(t, env.StartScheduler(ctx))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "gang")) == 40 }, 3*time.Minute, 500*time.Millisecond)
	w.assertNoPartialGang()
}
