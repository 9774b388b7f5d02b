//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// sampler lists a PodCliqueSet's pods every 100ms until stopped and hands each live (not
// terminating) list to observe: what a rollout does between two samples can be missed, what it
// does for longer cannot.
type sampler struct {
	stopOnce sync.Once
	stopped  chan struct{}
	done     chan struct{}
	samples  int
}

func sample(t *testing.T, env *framework.Env, ns, pcsName string, observe func([]corev1.Pod)) *sampler {
	s := &sampler{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stopped:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var list corev1.PodList
			if env.Client.List(context.Background(), &list, client.InNamespace(ns),
				client.MatchingLabels{common.LabelPartOfKey: pcsName}) == nil {
				observe(livePods(list.Items))
				s.samples++
			}
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *sampler) stop() {
	s.stopOnce.Do(func() { close(s.stopped) })
	<-s.done
}

func v2(p *corev1alpha1.PodCliqueSet) {
	for _, c := range p.Spec.Template.Cliques {
		c.Labels = map[string]string{"version": "v2"}
	}
}

// Rollout budgets on a disaggregated PodCliqueSet: a router of 4 pods (maxUnavailable 25%, so
// 1) and a scaling group of 8 prefill+decode replicas. Sampled throughout the update, the
// router never has more than 1 pod short of ready, and the group never more replicas short
// than its budget: 1 at the default, 2 at 25%. Some are short at some point (the samples see
// the rollout), and every pod ends on the new template.
func TestRolloutBudgetsAreNeverExceeded(t *testing.T) {
	for _, tc := range []struct {
		name     string
		budget   *intstr.IntOrString
		maxGroup int
	}{
		{name: "default budget of 1", maxGroup: 1},
		{name: "budget of 25 percent", budget: ptr.To(intstr.FromString("25%")), maxGroup: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, w, ns := nodesEnv(t, framework.Options{}, 4, twoCPUNode)
			ctx := context.Background()
			p := pcs(ns, "disagg", 1, clique("router", 4, "100m"), clique("prefill", 1, "100m"), clique("decode", 1, "100m"))
			p.Spec.Template.Cliques[0].RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To(intstr.FromString("25%"))}
			p = withGroup(p, "workers", 8, 1, "prefill", "decode")
			if tc.budget != nil {
				group(p, "workers").RollingUpdate = &corev1alpha1.RollingUpdateConfiguration{MaxUnavailable: tc.budget}
			}
			require.NoError(t, env.Client.Create(ctx, p))
			waitPods(t, env, ns, "disagg", 20, isReadyPod)

			var mu sync.Mutex
			maxRouter, maxGroup := 0, 0
			s := sample(t, env, ns, "disagg", func(pods []corev1.Pod) {
				router, replicas := 0, map[string]int{}
				for _, p := range pods {
					if !isReady(&p) {
						continue
					}
					if j, ok := p.Labels[common.LabelPodCliqueScalingGroupReplicaIndex]; ok {
						replicas[j]++
					} else {
						router++
					}
				}
				short := 0
				for j := range 8 {
					if replicas[fmt.Sprint(j)] < 2 {
						short++
					}
				}
				mu.Lock()
				maxRouter, maxGroup = max(maxRouter, 4-router), max(maxGroup, short)
				mu.Unlock()
			})
			updatePCS(t, env, ns, "disagg", v2)
			waitUpdateEnded(t, env, ns, "disagg", 1)
			waitPods(t, env, ns, "disagg", 20, func(p corev1.Pod) bool { return p.Labels["version"] == "v2" && isReady(&p) })
			s.stop()
			t.Logf("%d samples; most router pods short %d, most group replicas short %d", s.samples, maxRouter, maxGroup)
			assert.LessOrEqual(t, maxRouter, 1, "router budget (25%% of 4)")
			assert.LessOrEqual(t, maxGroup, tc.maxGroup, "scaling group budget")
			assert.Positive(t, maxRouter+maxGroup, "the samples saw the rollout")
			w.assertNoPartialGang()
		})
	}
}

// A Coherent rollout of two replicas (router and prefill/decode group): sampled throughout,
// no replica ever has ready pods of both templates at once.
func TestCoherentRolloutNeverServesMixedVersions(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 4, twoCPUNode)
	ctx := context.Background()
	p := pcs(ns, "coh", 2, clique("router", 2, "100m"), clique("prefill", 2, "100m"), clique("decode", 1, "100m"))
	p = withGroup(p, "workers", 2, 1, "prefill", "decode")
	p.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.CoherentStrategy}
	require.NoError(t, env.Client.Create(ctx, p))
	waitPods(t, env, ns, "coh", 16, isReadyPod)

	var mu sync.Mutex
	var mixed []string
	sawNew := false
	s := sample(t, env, ns, "coh", func(pods []corev1.Pod) {
		versions := map[string]map[string]bool{}
		for _, p := range pods {
			if !isReady(&p) {
				continue
			}
			r := p.Labels[common.LabelPodCliqueSetReplicaIndex]
			if versions[r] == nil {
				versions[r] = map[string]bool{}
			}
			versions[r][p.Labels["version"]] = true
		}
		mu.Lock()
		defer mu.Unlock()
		for r, v := range versions {
			sawNew = sawNew || v["v2"]
			if v["v2"] && v[""] {
				mixed = append(mixed, fmt.Sprintf("replica %s at %s", r, time.Now().Format("15:04:05.000")))
			}
		}
	})
	updatePCS(t, env, ns, "coh", v2)
	waitUpdateEnded(t, env, ns, "coh", 2)
	waitPods(t, env, ns, "coh", 16, func(p corev1.Pod) bool { return p.Labels["version"] == "v2" && isReady(&p) })
	s.stop()
	t.Logf("%d samples", s.samples)
	assert.True(t, sawNew, "the samples saw new pods ready")
	assert.Empty(t, mixed, "replicas serving both templates")
	w.assertNoPartialGang()
}

// OnDelete, as upstream: the update ends at once (updateEndedAt set, no pod deleted); a pod
// deleted by hand comes back on the new template, the others keep the old one.
func TestOnDeleteEndsTheUpdateAtOnce(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 2, twoCPUNode)
	ctx := context.Background()
	p := pcs(ns, "ondel", 1, clique("w", 3, "100m"))
	p.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{Type: corev1alpha1.OnDeleteStrategy}
	require.NoError(t, env.Client.Create(ctx, p))
	pods := waitPods(t, env, ns, "ondel", 3, isReadyPod)
	mark := len(w.deletionsIn(ns))
	changed := time.Now().Add(-time.Second) // the API keeps times to the second
	updatePCS(t, env, ns, "ondel", v2)
	cur := &corev1alpha1.PodCliqueSet{}
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ondel"}, cur))
		up := cur.Status.UpdateProgress
		return up != nil && up.UpdateEndedAt != nil && !up.UpdateStartedAt.Time.Before(changed)
	}, time.Minute, 250*time.Millisecond, "updateEndedAt of the new update")
	assert.False(t, cur.Status.UpdateProgress.UpdateEndedAt.Before(&cur.Status.UpdateProgress.UpdateStartedAt))
	assert.Empty(t, w.deletionsIn(ns)[mark:], "OnDelete deletes nothing itself")

	require.NoError(t, env.Client.Delete(ctx, &pods[0]))
	after := waitPods(t, env, ns, "ondel", 3, func(p corev1.Pod) bool { return p.Name != pods[0].Name && isReady(&p) })
	versions := map[string]int{}
	for _, p := range after {
		versions[p.Labels["version"]]++
	}
	assert.Equal(t, map[string]int{"": 2, "v2": 1}, versions, "only the deleted pod came back on the new template")
}
