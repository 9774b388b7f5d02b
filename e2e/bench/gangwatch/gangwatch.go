// Package gangwatch measures what throughput does not show when schedulers place gangs: whether
// a gang was ever left partly bound, how long gangs took to run when they compete for a full
// cluster, and how tightly they were packed into racks. It watches the benchmark's pods through
// the API, so it measures every scheduler the same way, and depends only on client-go so that
// benchmarks built against different Kubernetes versions can share it.
package gangwatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Options tune a Watcher; zero values take the defaults.
type Options struct {
	// Name labels the report, typically the scheduler_perf test and workload name.
	Name string
	// RackLabel is the node label whose values are racks. Default DefaultRackLabel.
	RackLabel string
	// PartialGrace is how long a partly bound gang may go without another of its members being
	// bound before it counts as partially bound: binding a gang is one write per member, not
	// one atomic write. Default 5s.
	PartialGrace time.Duration
	// Deadline bounds run-to-completion workloads: when it passes before every gang ran, the
	// watcher deletes the remaining pods so the benchmark can end, and reports Finished false.
	// Default 10m.
	Deadline time.Duration
}

// DeadlineEnv names the environment variable that sets Options.Deadline for every benchmark
// module (make bench-compare passes BENCH_COMPARE_DEADLINE through).
const DeadlineEnv = "BENCH_COMPARE_DEADLINE"

// DeadlineFromEnv returns the deadline DeadlineEnv sets, or 0 (Start's default) when it is unset.
func DeadlineFromEnv() (time.Duration, error) {
	s := os.Getenv(DeadlineEnv)
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", DeadlineEnv, err)
	}
	return d, nil
}

// Percentiles of a duration distribution, in seconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Report is what a Watcher measured.
type Report struct {
	Name            string `json:"name"`
	ExpectedGangs   int    `json:"expectedGangs"`
	Gangs           int    `json:"gangs"`
	WholeGangs      int    `json:"wholeGangs"`
	DeleteWhenBound bool   `json:"deleteWhenBound"`
	// Finished: every expected gang was whole at some point before the deadline.
	Finished bool `json:"finished"`
	// PartiallyBoundGangs counts gangs that were partly bound, with no further member bound,
	// for longer than the grace period; LongestPartialSeconds is the longest such stall.
	PartiallyBoundGangs   int     `json:"partiallyBoundGangs"`
	LongestPartialSeconds float64 `json:"longestPartialSeconds"`
	// AllGangsBoundSeconds runs from the first pod seen to the last gang becoming whole.
	AllGangsBoundSeconds float64 `json:"allGangsBoundSeconds"`
	// GangCompletionSeconds: from a gang's first pod seen to the gang becoming whole.
	GangCompletionSeconds Percentiles `json:"gangCompletionSeconds"`
	GangsInOneRack        int         `json:"gangsInOneRack"`
	RacksTotal            int         `json:"racksTotal"`
	RacksUsed             int         `json:"racksUsed"`
	// RacksPartlyUsed: racks holding pods with room left for another of the smallest pods,
	// measured when the last gang became whole (or at Stop).
	RacksPartlyUsed int `json:"racksPartlyUsed"`
	// SlowestGangs are the timelines of the gangs that took longest from first pod seen to
	// whole: where a slow gang lost its time (members arriving late, waiting to be attempted,
	// or between its first and last binding).
	SlowestGangs []GangTimeline `json:"slowestGangs,omitempty"`
}

// GangTimeline is one gang's way to whole, in seconds from the run's first pod seen.
type GangTimeline struct {
	Gang string `json:"gang"`
	// FirstSeen and LastSeen: when its first and its last member appeared.
	FirstSeen float64 `json:"firstSeen"`
	LastSeen  float64 `json:"lastSeen"`
	// FirstBound: its first binding; Whole: all members bound.
	FirstBound float64 `json:"firstBound"`
	Whole      float64 `json:"whole"`
}

// Watcher follows the benchmark's pods and nodes until Stop.
type Watcher struct {
	ctx     context.Context
	opts    Options
	client  kubernetes.Interface
	cancel  context.CancelFunc
	done    sync.WaitGroup
	mu      sync.Mutex
	tracker *tracker
	hitDL   bool
	deletes chan deletion
	// seen holds the resourceVersion of each pod as last handled (deletedVersion once deleted),
	// so Stop can wait for the handlers to reach the state the API holds.
	seen map[types.UID]string
}

// deletedVersion marks a pod whose deletion the watcher handled: no later version exists.
const deletedVersion = "deleted"

// catchUpTimeout bounds how long Stop waits for the informer to deliver the last events.
const catchUpTimeout = 30 * time.Second

type deletion struct {
	namespace string
	pods      []string
}

// Start watches pods labelled GangLabel in every namespace, and all nodes.
func Start(ctx context.Context, client kubernetes.Interface, opts Options) (*Watcher, error) {
	if opts.RackLabel == "" {
		opts.RackLabel = DefaultRackLabel
	}
	if opts.PartialGrace == 0 {
		opts.PartialGrace = 5 * time.Second
	}
	if opts.Deadline == 0 {
		opts.Deadline = 10 * time.Minute
	}
	ctx, cancel := context.WithCancel(ctx)
	w := &Watcher{
		ctx:     ctx,
		opts:    opts,
		client:  client,
		cancel:  cancel,
		tracker: newTracker(opts.RackLabel, opts.PartialGrace),
		deletes: make(chan deletion, 1024),
		seen:    map[types.UID]string{},
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			if o.LabelSelector == "" {
				o.LabelSelector = GangLabel
			}
		}))
	pods := factory.Core().V1().Pods().Informer()
	nodes := informers.NewSharedInformerFactory(client, 0).Core().V1().Nodes().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.onPod(obj) },
		UpdateFunc: func(_, obj any) { w.onPod(obj) },
		DeleteFunc: w.onPodDelete,
	}); err != nil {
		cancel()
		return nil, err
	}
	if _, err := nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.onNode,
		UpdateFunc: func(_, obj any) { w.onNode(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	for _, inf := range []cache.SharedIndexInformer{pods, nodes} {
		w.done.Add(1)
		go func() { defer w.done.Done(); inf.Run(ctx.Done()) }()
	}
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced, nodes.HasSynced) {
		cancel()
		w.done.Wait()
		return nil, fmt.Errorf("gangwatch: informers did not sync: %w", ctx.Err())
	}
	w.done.Add(2)
	go func() { defer w.done.Done(); w.deleteCompletedGangs(ctx) }()
	go func() { defer w.done.Done(); w.watchTime(ctx) }()
	return w, nil
}

// Stop ends the watch and returns the report. It first waits until the watcher has handled every
// bench pod in the state the API holds now: a benchmark ends as soon as its own informer saw the
// last binding, and the watcher's informer may still be behind it - with a 1000-pod gang bound in
// the last second, the report would otherwise miss the gang becoming whole.
func (w *Watcher) Stop() Report {
	if err := w.catchUp(); err != nil {
		fmt.Fprintf(os.Stderr, "gangwatch %s: %v; reporting what was seen\n", w.opts.Name, err)
	}
	w.cancel()
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tracker.report(w.opts.Name, time.Now(), w.hitDL)
}

func (w *Watcher) catchUp() error {
	ctx, cancel := context.WithTimeout(w.ctx, catchUpTimeout)
	defer cancel()
	list, err := w.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: GangLabel})
	if err != nil {
		return fmt.Errorf("listing pods to catch up: %w", err)
	}
	err = wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		for i := range list.Items {
			p := &list.Items[i]
			if !handled(w.seen[p.UID], p.ResourceVersion) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("the watch did not catch up with the API within %s: %w", catchUpTimeout, err)
	}
	return nil
}

// handled reports whether a pod last handled at version seen is at least at version listed.
// Resource versions are compared as numbers when both are (etcd's are); otherwise only equal
// versions count.
func handled(seen, listed string) bool {
	if seen == listed || seen == deletedVersion {
		return true
	}
	s, errS := strconv.ParseUint(seen, 10, 64)
	l, errL := strconv.ParseUint(listed, 10, 64)
	return errS == nil && errL == nil && s >= l
}

func (w *Watcher) onNode(obj any) {
	if n, ok := obj.(*corev1.Node); ok {
		w.mu.Lock()
		w.tracker.setNode(n)
		w.mu.Unlock()
	}
}

func (w *Watcher) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	w.seen[p.UID] = p.ResourceVersion
	complete := w.tracker.observePod(p, time.Now())
	var d deletion
	if complete != nil {
		d = deletion{namespace: complete.namespace, pods: w.tracker.podNames(*complete)}
	}
	w.mu.Unlock()
	if complete != nil {
		select {
		case w.deletes <- d:
		case <-w.ctx.Done():
		}
	}
}

func (w *Watcher) onPodDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if p, ok := obj.(*corev1.Pod); ok {
		w.mu.Lock()
		w.seen[p.UID] = deletedVersion
		w.tracker.removePod(p, time.Now())
		w.mu.Unlock()
	}
}

// deleteCompletedGangs deletes the pods of gangs that ran to completion, as a job controller
// would once a job finished.
func (w *Watcher) deleteCompletedGangs(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case d := <-w.deletes:
			w.deletePods(ctx, d.namespace, d.pods)
		}
	}
}

func (w *Watcher) deletePods(ctx context.Context, namespace string, names []string) {
	for _, name := range names {
		err := w.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "gangwatch: deleting pod %s/%s: %v\n", namespace, name, err)
		}
	}
}

// watchTime closes long partial intervals every second, and enforces the deadline of
// run-to-completion workloads.
func (w *Watcher) watchTime(ctx context.Context) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	deadline := time.NewTimer(w.opts.Deadline)
	defer deadline.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-ticker.C:
			w.mu.Lock()
			w.tracker.tick(now)
			w.mu.Unlock()
		case <-deadline.C:
			w.mu.Lock()
			giveUp := w.tracker.deleteWhenBnd && !w.tracker.finished()
			var left map[string][]string
			if giveUp {
				w.hitDL = true
				left = w.tracker.livePodNames()
			}
			w.mu.Unlock()
			for ns, names := range left {
				w.deletePods(ctx, ns, names)
			}
		}
	}
}

func (t *tracker) podNames(key gangKey) []string {
	var names []string
	for uid := range t.gangs[key].members {
		if p, ok := t.pods[uid]; ok {
			names = append(names, p.name)
		}
	}
	return names
}

func (t *tracker) livePodNames() map[string][]string {
	out := map[string][]string{}
	for _, p := range t.pods {
		out[p.gang.namespace] = append(out[p.gang.namespace], p.name)
	}
	return out
}

var unsafeFileChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Write stores the report as dir/gangwatch_<name>.json, or gangwatch_<name>_<n>.json from the
// second report of the same name on: a benchmark run in rounds keeps every round's report.
func (r Report) Write(dir string) error {
	if dir == "" {
		return nil
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	base := filepath.Join(dir, "gangwatch_"+unsafeFileChars.ReplaceAllString(r.Name, "_"))
	for n := 1; ; n++ {
		file := base + ".json"
		if n > 1 {
			file = fmt.Sprintf("%s_%d.json", base, n)
		}
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		_, err = f.Write(append(data, '\n'))
		return errors.Join(err, f.Close())
	}
}
