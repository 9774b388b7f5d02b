//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// startEnv runs a fresh local Grove for one scenario and a partial-gang watcher on it.
func startEnv(t *testing.T, mutate func(*configv1alpha1.OperatorConfiguration)) (*framework.Env, *gangWatcher) {
	t.Helper()
	// Generous: on a loaded 2-core machine the control plane alone can take minutes to start.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env, err := framework.Start(ctx, framework.Options{OperatorConfig: mutate})
	require.NoError(t, err)
	w := watchGangs(t, env)
	t.Cleanup(func() {
		w.stop()
		if t.Failed() {
			t.Log(env.Cluster.LogTail(60))
		}
		require.NoError(t, env.Stop())
	})
	return env, w
}

// gangWatcher watches every pod binding and fails the test if a PodGang stays partly bound:
// some but fewer than its quorum (sum of minReplicas) of its pods bound for longer than the
// release of one Permit barrier takes.
type gangWatcher struct {
	t      *testing.T
	env    *framework.Env
	cancel context.CancelFunc
	done   chan struct{}

	mu          sync.Mutex
	bound       map[string]map[string]bool // gang -> bound pod names
	partlySince map[string]time.Time
	violations  []string
}

// partialGrace is how long a gang may be seen between 1 and quorum-1 bound pods: the binding
// goroutines of one released barrier finish well within it.
const partialGrace = 10 * time.Second

func watchGangs(t *testing.T, env *framework.Env) *gangWatcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &gangWatcher{t: t, env: env, cancel: cancel, done: make(chan struct{}),
		bound: map[string]map[string]bool{}, partlySince: map[string]time.Time{}}
	wi, err := env.Clientset.CoreV1().Pods("").Watch(ctx, metav1.ListOptions{LabelSelector: common.LabelPodGang})
	require.NoError(t, err)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				wi.Stop()
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				pod, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				w.observe(ev.Type, pod)
			case <-tick.C:
				w.check(ctx)
			}
		}
	}()
	return w
}

func (w *gangWatcher) observe(typ watch.EventType, pod *corev1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := pod.Namespace + "/" + pod.Labels[common.LabelPodGang]
	if w.bound[key] == nil {
		w.bound[key] = map[string]bool{}
	}
	if typ == watch.Deleted || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		delete(w.bound[key], pod.Name)
		return
	}
	w.bound[key][pod.Name] = true
}

// check compares bound counts with each PodGang's quorum.
func (w *gangWatcher) check(ctx context.Context) {
	var gangs schedv1alpha1.PodGangList
	if err := w.env.Client.List(ctx, &gangs); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for _, g := range gangs.Items {
		key := g.Namespace + "/" + g.Name
		quorum := 0
		for _, pg := range g.Spec.PodGroups {
			quorum += int(pg.MinReplicas)
		}
		n := len(w.bound[key])
		if n > 0 && n < quorum {
			since, seen := w.partlySince[key]
			if !seen {
				w.partlySince[key] = now
			} else if now.Sub(since) > partialGrace {
				w.violations = append(w.violations, fmt.Sprintf("PodGang %s partly bound: %d of quorum %d for %s", key, n, quorum, now.Sub(since).Round(time.Second)))
				w.partlySince[key] = now.Add(time.Hour) // report once
			}
		} else {
			delete(w.partlySince, key)
		}
	}
}

// assertNoPartialGang fails the test if any violation was seen so far.
func (w *gangWatcher) assertNoPartialGang() {
	w.t.Helper()
	w.check(context.Background())
	w.mu.Lock()
	defer w.mu.Unlock()
	require.Empty(w.t, w.violations, "partly bound gangs")
}

func (w *gangWatcher) stop() {
	w.cancel()
	<-w.done
}

// podsOf lists the pods of a PodCliqueSet.
func podsOf(t *testing.T, env *framework.Env, ns, pcs string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	require.NoError(t, env.Client.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{common.LabelPartOfKey: pcs}))
	return pods.Items
}

func countBound(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

var _ = corev1alpha1.PodCliqueSet{}
