//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// startEnv runs a fresh local Grove for one scenario and a partial-gang watcher on it.
func startEnv(t *testing.T, opts framework.Options) (*framework.Env, *gangWatcher) {
	t.Helper()
	// Generous: on a loaded 2-core machine the control plane alone can take minutes to start.
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	env, err := framework.Start(ctx, opts)
	require.NoError(t, err)
	w := watchGangs(t, env)
	t.Cleanup(func() {
		w.stop()
		// The programs run as their ServiceAccounts: a refused request is a gap in the shipped
		// RBAC even when the scenario recovered from it.
		forbidden, err := env.ForbiddenRequests()
		assert.NoError(t, err)
		assert.Emptyf(t, forbidden[:min(len(forbidden), 5)], "%d requests refused by the shipped RBAC (config/rbac, config/scheduler/rbac.yaml), the first shown", len(forbidden))
		if t.Failed() {
			t.Log(env.Cluster.LogTail(60))
			keepLogs(t, env)
		}
		require.NoError(t, env.Stop())
	})
	return env, w
}

// keepLogs copies the processes' logs of a failed test to $GROVE_E2E_LOGS/<test>, if set.
func keepLogs(t *testing.T, env *framework.Env) {
	dir := os.Getenv("GROVE_E2E_LOGS")
	if dir == "" {
		return
	}
	dst := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_"))
	logs, _ := filepath.Glob(filepath.Join(env.Cluster.Dir, "*.log"))
	for _, f := range logs {
		if data, err := os.ReadFile(f); err == nil && os.MkdirAll(dst, 0o755) == nil {
			_ = os.WriteFile(filepath.Join(dst, filepath.Base(f)), data, 0o644)
		}
	}
	t.Logf("logs kept in %s", dst)
}

// nodesEnv starts Grove with n kwok nodes n-0 ... n-<n-1> of one shape and a test namespace.
func nodesEnv(t *testing.T, opts framework.Options, n int, shape map[corev1.ResourceName]string) (*framework.Env, *gangWatcher, string) {
	t.Helper()
	env, w := startEnv(t, opts)
	createNodes(t, env, "n", n, shape, nil)
	return env, w, env.Cluster.TestNamespace(t)
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
	// live is the last seen state of every pod not yet deleted, by namespace/name; deletions
	// lists, in watch order, the pods whose deletion began.
	live      map[string]*corev1.Pod
	deletions []deletion
	// bindOrder lists "namespace/PodGang" once per pod binding, in watch (etcd revision) order.
	bindOrder []string
	// ended says the pod watch stopped before stop was called: later bindings went unseen.
	ended bool
}

// deletion is a pod whose deletion the watcher saw begin.
type deletion struct {
	pod *corev1.Pod // its last state before the deletion
	at  time.Time
	// readyPeers counts, per PodClique of the namespace, the other pods that were ready and not
	// being deleted at that moment.
	readyPeers map[string]int
}

// partialGrace is how long a gang may be seen between 1 and quorum-1 bound pods: the binding
// goroutines of one released barrier finish well within it.
const partialGrace = 10 * time.Second

func watchGangs(t *testing.T, env *framework.Env) *gangWatcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &gangWatcher{t: t, env: env, cancel: cancel, done: make(chan struct{}),
		bound: map[string]map[string]bool{}, partlySince: map[string]time.Time{}, live: map[string]*corev1.Pod{}}
	events := watchPods(ctx, t, env, "", common.LabelPodGang)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					w.mu.Lock()
					w.ended = ctx.Err() == nil
					w.mu.Unlock()
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
	w.recordDeletion(typ, pod)
	key := pod.Namespace + "/" + pod.Labels[common.LabelPodGang]
	if w.bound[key] == nil {
		w.bound[key] = map[string]bool{}
	}
	if typ == watch.Deleted || pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		delete(w.bound[key], pod.Name)
		return
	}
	if !w.bound[key][pod.Name] {
		w.bindOrder = append(w.bindOrder, key)
	}
	w.bound[key][pod.Name] = true
}

// bindingsIn returns the PodGang of every pod binding in a namespace, in the order the API
// recorded them.
func (w *gangWatcher) bindingsIn(ns string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, key := range w.bindOrder {
		if gangNS, gang, _ := strings.Cut(key, "/"); gangNS == ns {
			out = append(out, gang)
		}
	}
	return out
}

// recordDeletion keeps the last state of live pods and records each deletion once, when it
// begins (a deletionTimestamp, or the Deleted event of a pod removed at once).
func (w *gangWatcher) recordDeletion(typ watch.EventType, pod *corev1.Pod) {
	name := pod.Namespace + "/" + pod.Name
	prev, known := w.live[name]
	if typ != watch.Deleted && pod.DeletionTimestamp == nil {
		w.live[name] = pod
		return
	}
	delete(w.live, name)
	if !known {
		return // its deletion was recorded already
	}
	d := deletion{pod: prev, at: time.Now(), readyPeers: map[string]int{}}
	for _, p := range w.live {
		if p.Namespace == pod.Namespace && p.DeletionTimestamp == nil && isReady(p) {
			d.readyPeers[p.Labels[common.LabelPodClique]]++
		}
	}
	w.deletions = append(w.deletions, d)
}

// deletionsIn returns the deletions recorded so far in a namespace, in order.
func (w *gangWatcher) deletionsIn(ns string) []deletion {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []deletion
	for _, d := range w.deletions {
		if d.pod.Namespace == ns {
			out = append(out, d)
		}
	}
	return out
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
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
	require.False(w.t, w.ended, "the pod watch ended early: bindings after that went unseen")
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

// waitPods waits until the PodCliqueSet has exactly want pods (not counting pods being
// deleted), all bound and ready and each satisfying every one of also, and returns them.
func waitPods(t *testing.T, env *framework.Env, ns, pcsName string, want int, also ...func(corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	if !assert.Eventually(t, func() bool {
		pods = livePods(podsOf(t, env, ns, pcsName))
		return len(pods) == want && !slices.ContainsFunc(pods, func(p corev1.Pod) bool {
			return p.Spec.NodeName == "" || !isReady(&p) || slices.ContainsFunc(also, func(ok func(corev1.Pod) bool) bool { return !ok(p) })
		})
	}, 2*time.Minute, 250*time.Millisecond, "want %d bound, ready pods of %s", want, pcsName) {
		t.Fatal(dumpState(t, env, ns, pcsName))
	}
	// The pods of a PodClique have distinct indices.
	indices := map[string]string{}
	for _, p := range pods {
		k := p.Labels[common.LabelPodClique] + "/" + p.Labels[common.LabelPodCliquePodIndex]
		assert.Empty(t, indices[k], "pods %s and %s have the same index in their PodClique", indices[k], p.Name)
		indices[k] = p.Name
	}
	return pods
}

// livePods drops pods being deleted.
func livePods(pods []corev1.Pod) []corev1.Pod {
	return slices.DeleteFunc(pods, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
}

// placement maps the value of a pod label (a PodGang, a PodClique, ...) to the nodes its bound
// pods run on, with how many on each: the exact placement of every pod.
func placement(pods []corev1.Pod, by string) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, p := range pods {
		if p.Spec.NodeName == "" {
			continue
		}
		k := p.Labels[by]
		if out[k] == nil {
			out[k] = map[string]int{}
		}
		out[k][p.Spec.NodeName]++
	}
	return out
}

// perHost spreads n pods evenly over the given hosts: perHost(2, "a", "b") is {a: 2, b: 2}.
func perHost(n int, hosts ...string) map[string]int {
	out := map[string]int{}
	for _, h := range hosts {
		out[h] = n
	}
	return out
}

// scaleTo sets replicas through the scale subresource of a PodCliqueSet, PodCliqueScalingGroup
// or PodClique, as kubectl scale and HPAs do.
func scaleTo(t *testing.T, env *framework.Env, obj client.Object, n int32) {
	t.Helper()
	// The controllers write the object's status all along: read and write until no write came
	// between the two.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc := &autoscalingv1.Scale{}
		if err := env.Client.SubResource("scale").Get(context.Background(), obj, sc); err != nil {
			return err
		}
		sc.Spec.Replicas = n
		return env.Client.SubResource("scale").Update(context.Background(), obj, client.WithSubResourceBody(sc))
	}))
}

// updatePCS changes a PodCliqueSet, again on the latest version when a controller wrote it meanwhile.
func updatePCS(t *testing.T, env *framework.Env, ns, name string, change func(*corev1alpha1.PodCliqueSet)) *corev1alpha1.PodCliqueSet {
	t.Helper()
	cur := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cur); err != nil {
			return err
		}
		change(cur)
		return env.Client.Update(context.Background(), cur)
	}))
	return cur
}

func pcsRef(ns, name string) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func pcsgRef(ns, name string) *corev1alpha1.PodCliqueScalingGroup {
	return &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func pclqRef(ns, name string) *corev1alpha1.PodClique {
	return &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// dumpState describes a PodCliqueSet for a failure message: its status, its PodCliques'
// template hashes and statuses, its pods and its PodGangs.
func dumpState(t *testing.T, env *framework.Env, ns, name string) string {
	ctx := context.Background()
	out := ""
	p := &corev1alpha1.PodCliqueSet{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err == nil {
		out += fmt.Sprintf("PodCliqueSet status: updated=%d progress=%+v hash=%v\n", p.Status.UpdatedReplicas, p.Status.UpdateProgress, p.Status.CurrentGenerationHash)
	}
	var pclqs corev1alpha1.PodCliqueList
	_ = env.Client.List(ctx, &pclqs, client.InNamespace(ns))
	for _, c := range pclqs.Items {
		out += fmt.Sprintf("PodClique %s hash=%s status=%+v\n", c.Name, c.Labels[common.LabelPodTemplateHash], c.Status)
	}
	for _, pod := range podsOf(t, env, ns, name) {
		out += fmt.Sprintf("pod %s uid=%s hash=%s node=%s ready=%v deleting=%v gates=%v created=%s\n", pod.Name, pod.UID, pod.Labels[common.LabelPodTemplateHash],
			pod.Spec.NodeName, isReady(&pod), pod.DeletionTimestamp != nil, pod.Spec.SchedulingGates, pod.CreationTimestamp.Format(time.RFC3339))
	}
	var gangs schedv1alpha1.PodGangList
	_ = env.Client.List(ctx, &gangs, client.InNamespace(ns))
	for _, g := range gangs.Items {
		for _, pg := range g.Spec.PodGroups {
			out += fmt.Sprintf("PodGang %s group %s min=%d refs=%v\n", g.Name, pg.Name, pg.MinReplicas, pg.PodReferences)
		}
	}
	return out
}

// podCreations records, through a watch, every pod matching a label selector that is ever
// created in a namespace (the ones existing when it starts included), once per UID: a pod
// created and deleted again between two lists is still counted.
type podCreations struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan struct{}

	mu    sync.Mutex
	names map[types.UID]string
	ended bool // the watch ended before stop
}

func watchPodCreations(t *testing.T, env *framework.Env, ns, selector string) *podCreations {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	c := &podCreations{t: t, cancel: cancel, done: make(chan struct{}), names: map[types.UID]string{}}
	events := watchPods(ctx, t, env, ns, selector)
	go func() {
		defer close(c.done)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				c.mu.Lock()
				if !ok {
					c.ended = ctx.Err() == nil
					c.mu.Unlock()
					return
				}
				if pod, isPod := ev.Object.(*corev1.Pod); isPod && ev.Type == watch.Added {
					c.names[pod.UID] = pod.Name
				}
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(c.halt)
	return c
}

// count is how many distinct pods were seen created so far.
func (c *podCreations) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.names)
}

func (c *podCreations) halt() {
	c.cancel()
	<-c.done
}

// stop ends the watch and returns every pod seen created, by UID. It fails the test if the
// watch ended early: creations after that would have been missed.
func (c *podCreations) stop() map[types.UID]string {
	c.t.Helper()
	c.halt()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.False(c.t, c.ended, "the pod watch ended early")
	return maps.Clone(c.names)
}
