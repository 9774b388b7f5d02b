package schedulere2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/profile"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/pluginargs"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/plugins"
)

const (
	nodeTestLabel = "grove.io/e2e-namespace"
	// A released barrier binds members one API call each: a partial gang may wait bindingGrace
	// for its next binding and maxPartialBinding for its last (generous for -race runs).
	bindingGrace      = 3 * time.Second
	maxPartialBinding = 30 * time.Second
	waitTimeout       = 60 * time.Second
)

type envOptions struct {
	// permitTimeout and maxBackoff set GangArgs (short defaults keep tests fast).
	permitTimeout, maxBackoff time.Duration
	// reservationDelay sets GangArgs.ReservationDelay; 0 keeps the shipped value.
	reservationDelay time.Duration
	// withoutGrovePlugins runs kube-scheduler's default profile: a control that proves the
	// binding checker catches what the gang plugin prevents.
	withoutGrovePlugins bool
	// deferStart leaves starting the scheduler to the test (startScheduler).
	deferStart bool
	// reservedForLimit sets DRAArgs.ReservedForLimit when not 0.
	reservedForLimit int32
}

// env is one test's world: a namespace, its nodes, a scheduler with its own schedulerName and a
// binding checker over the namespace's pods.
type env struct {
	t             *testing.T
	ctx           context.Context
	opts          envOptions
	ns            string
	schedulerName string
	admin         kubernetes.Interface
	podGangs      client.Client
	checker       *bindingChecker
	sched         *scheduler.Scheduler
}

var (
	rbacOnce sync.Once
	rbacErr  error
)

func newEnv(t *testing.T, opts envOptions) *env {
	t.Helper()
	if cluster.Shared == nil {
		t.Skip("needs the shared control plane (not available with -short)")
	}
	if opts.permitTimeout == 0 {
		opts.permitTimeout = 10 * time.Second
	}
	if opts.maxBackoff == 0 {
		opts.maxBackoff = time.Second
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	admin, err := kubernetes.NewForConfig(cluster.Shared.Config)
	require.NoError(t, err)
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	podGangs, err := client.New(cluster.Shared.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	rbacOnce.Do(func() { rbacErr = framework.InstallRBAC(ctx, cluster.Shared) })
	require.NoError(t, rbacErr)

	ns := cluster.Shared.TestNamespace(t)
	e := &env{t: t, ctx: ctx, opts: opts, ns: ns, schedulerName: "grove-" + ns, admin: admin, podGangs: podGangs,
		checker: newBindingChecker(time.Now, bindingGrace, maxPartialBinding)}
	t.Cleanup(e.deleteNodes)
	e.watchBindings()
	if !opts.deferStart {
		e.startScheduler()
	}
	return e
}

func repoPath(parts ...string) string {
	root, err := cluster.ModuleRoot()
	if err != nil {
		panic(err)
	}
	return filepath.Join(append([]string{root}, parts...)...)
}

// schedulerConfig is the shipped configuration with this test's schedulerName and timings.
func (e *env) schedulerConfig() *schedconfig.KubeSchedulerConfiguration {
	data, err := os.ReadFile(repoPath("config", "scheduler", "scheduler-config.yaml"))
	require.NoError(e.t, err)
	if e.opts.withoutGrovePlugins {
		data = []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{schedulerName: x}]\n")
	}
	obj, _, err := kubeschedulerscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	require.NoError(e.t, err)
	cfg := obj.(*schedconfig.KubeSchedulerConfiguration)
	require.Len(e.t, cfg.Profiles, 1)
	cfg.Profiles[0].SchedulerName = e.schedulerName
	for _, pc := range cfg.Profiles[0].PluginConfig {
		if args, ok := pc.Args.(*pluginargs.GangArgs); ok {
			args.PermitWaitTimeout.Duration = e.opts.permitTimeout
			args.MaxBackoff.Duration = e.opts.maxBackoff
			if e.opts.reservationDelay != 0 {
				args.ReservationDelay.Duration = e.opts.reservationDelay
			}
		}
		if args, ok := pc.Args.(*pluginargs.DRAArgs); ok && e.opts.reservedForLimit > 0 {
			args.ReservedForLimit = e.opts.reservedForLimit
		}
	}
	return cfg
}

// startScheduler runs kube-scheduler with Grove's plugins in-process, as the scheduler's
// ServiceAccount, until the test ends.
func (e *env) startScheduler() {
	t := e.t
	cfg := e.schedulerConfig()
	// As the ServiceAccount config/scheduler/rbac.yaml grants: a missing permission fails the tests.
	restCfg, err := cluster.Shared.ServiceAccountConfig(e.ctx, framework.Namespace, framework.SchedulerServiceAccount)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(restCfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(e.ctx)
	informerFactory := scheduler.NewInformerFactory(cs, 0, nil)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: cs.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	sched, err := scheduler.New(ctx, cs, informerFactory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithKubeConfig(restCfg),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPodInitialBackoffSeconds(1),
		scheduler.WithPodMaxBackoffSeconds(1),
		scheduler.WithFrameworkOutOfTreeRegistry(plugins.Registry()),
	)
	require.NoError(t, err)
	informerFactory.Start(ctx.Done())
	informerFactory.WaitForCacheSync(ctx.Done())
	require.NoError(t, sched.WaitForHandlersSync(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		sched.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		broadcaster.Shutdown()
		informerFactory.Shutdown()
	})
	e.sched = sched
}

// watchBindings feeds every pod change of the namespace to the binding checker and fails the
// test if a gang was ever partly bound.
func (e *env) watchBindings() {
	ctx, cancel := context.WithCancel(e.ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(e.admin, 0, informers.WithNamespace(e.ns))
	inf := factory.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.checker.observe(obj.(*v1.Pod), false) },
		UpdateFunc: func(_, obj any) { e.checker.observe(obj.(*v1.Pod), false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			e.checker.observe(obj.(*v1.Pod), true)
		},
	})
	require.NoError(e.t, err)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	ticker := time.NewTicker(100 * time.Millisecond)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				e.checker.check()
			}
		}
	}()
	e.t.Cleanup(func() {
		// A gang released just before the test ended may still be binding: let its bindings
		// arrive (a stalled one is reported by check within the binding grace).
		_ = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, maxPartialBinding, true,
			func(context.Context) (bool, error) { return e.checker.settled(), nil })
		violations := e.checker.final()
		cancel()
		ticker.Stop()
		<-stopped
		factory.Shutdown()
		for _, v := range violations {
			e.t.Errorf("no PodGang may ever be partly bound: %s", v)
		}
	})
}

// node is a fake node: capacity, topology labels and a Ready condition. No kubelet runs; bound
// pods stay Pending, which is all a scheduler test needs.
type node struct {
	name   string
	cpu    string
	labels map[string]string
	taints []v1.Taint
}

// addNodes creates the nodes (names get the namespace as prefix) and returns their names.
func (e *env) addNodes(nodes ...node) []string {
	var names []string
	for _, n := range nodes {
		name := e.ns + "-" + n.name
		labels := map[string]string{nodeTestLabel: e.ns, v1.LabelHostname: name}
		for k, v := range n.labels {
			labels[k] = v
		}
		capacity := v1.ResourceList{
			v1.ResourceCPU:    resource.MustParse(n.cpu),
			v1.ResourceMemory: resource.MustParse("64Gi"),
			v1.ResourcePods:   resource.MustParse("110"),
		}
		_, err := e.admin.CoreV1().Nodes().Create(e.ctx, &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       v1.NodeSpec{Taints: n.taints},
			Status: v1.NodeStatus{
				Capacity: capacity, Allocatable: capacity, Phase: v1.NodeRunning,
				Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}},
			},
		}, metav1.CreateOptions{})
		require.NoError(e.t, err)
		names = append(names, name)
	}
	return names
}

func (e *env) nodeName(short string) string { return e.ns + "-" + short }

func (e *env) deleteNodes() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.admin.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{},
		metav1.ListOptions{LabelSelector: nodeTestLabel + "=" + e.ns})
	if err != nil {
		e.t.Errorf("deleting the test's nodes: %v", err)
	}
}

type group struct {
	name          string
	min, replicas int32
	cpu           string
	constraint    *v1alpha1.TopologyConstraint
	// pod tweaks one member before it is created.
	pod func(*v1.Pod)
}

type gang struct {
	name        string
	groups      []group
	constraint  *v1alpha1.TopologyConstraint
	configs     []v1alpha1.TopologyConstraintGroupConfig
	shared      *v1alpha1.SharedTopologyConstraint
	annotations map[string]string
	labels      map[string]string
}

func (e *env) memberPod(g gang, gr group, i int32) *v1.Pod {
	requests := v1.ResourceList{v1.ResourceCPU: resource.MustParse(gr.cpu), v1.ResourceMemory: resource.MustParse("64Mi")}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%s-%d", g.name, gr.name, i), Namespace: e.ns,
			Labels: map[string]string{common.LabelPodGang: g.name, common.LabelPodClique: gr.name},
		},
		Spec: v1.PodSpec{
			SchedulerName:                 e.schedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{Requests: requests}}},
		},
	}
	if gr.pod != nil {
		gr.pod(pod)
	}
	return pod
}

// createGang creates the PodGang, then its pods, and tells the binding checker the quorum.
func (e *env) createGang(g gang) {
	e.t.Helper()
	pg := &v1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: e.ns, Annotations: g.annotations, Labels: g.labels},
		Spec:       v1alpha1.PodGangSpec{TopologyConstraint: g.constraint, TopologyConstraintGroupConfigs: g.configs, SharedTopologyConstraint: g.shared},
	}
	mins := map[string]int32{}
	var pods []*v1.Pod
	for _, gr := range g.groups {
		mins[gr.name] = gr.min
		pgGroup := v1alpha1.PodGroup{Name: gr.name, MinReplicas: gr.min, TopologyConstraint: gr.constraint}
		for i := range gr.replicas {
			pod := e.memberPod(g, gr, i)
			pods = append(pods, pod)
			pgGroup.PodReferences = append(pgGroup.PodReferences, v1alpha1.NamespacedName{Namespace: e.ns, Name: pod.Name})
		}
		pg.Spec.PodGroups = append(pg.Spec.PodGroups, pgGroup)
	}
	e.checker.expect(g.name, mins)
	require.NoError(e.t, e.podGangs.Create(e.ctx, pg))
	e.createPods(pods)
}

// createPods creates pods concurrently (a gang's pods arrive at about the same time).
func (e *env) createPods(pods []*v1.Pod) {
	e.t.Helper()
	work := make(chan *v1.Pod)
	errs := make(chan error, len(pods))
	var wg sync.WaitGroup
	for range min(16, len(pods)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for pod := range work {
				if _, err := e.admin.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating pod %s: %w", pod.Name, err)
				}
			}
		}()
	}
	for _, pod := range pods {
		work <- pod
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(e.t, err)
	}
}

// pods lists the gang's pods by PodGroup, sorted by name.
func (e *env) pods(gangName string) []v1.Pod {
	list, err := e.admin.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{LabelSelector: common.LabelPodGang + "=" + gangName})
	require.NoError(e.t, err)
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// placement is where a gang's pods are: bound per PodGroup, the nodes used, and pending pods.
type placement struct {
	bound   map[string]int
	nodes   map[string]int
	pending int
}

func (p placement) total() int {
	n := 0
	for _, b := range p.bound {
		n += b
	}
	return n
}

func (e *env) placement(gangName string) placement {
	p := placement{bound: map[string]int{}, nodes: map[string]int{}}
	for _, pod := range e.pods(gangName) {
		if pod.Spec.NodeName == "" {
			p.pending++
			continue
		}
		p.bound[pod.Labels[common.LabelPodClique]]++
		p.nodes[pod.Spec.NodeName]++
	}
	return p
}

// eventually polls cond until it holds; on timeout it fails with cond's last explanation.
func (e *env) eventually(what string, cond func() (bool, string)) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		ok, state := cond()
		last = state
		return ok, nil
	})
	if err != nil {
		e.t.Fatalf("timed out waiting for %s; last state: %s", what, last)
	}
}

// holds checks cond every 100ms for d and fails on the first time it does not hold: a count
// that was reached must not change while the scheduler has time to act.
func (e *env) holds(what string, d time.Duration, cond func() (bool, string)) {
	e.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		if ok, state := cond(); !ok {
			e.t.Fatalf("%s did not hold: %s", what, state)
		}
		select {
		case <-e.ctx.Done():
			e.t.Fatal(e.ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitBound waits until exactly n of the gang's pods are bound.
func (e *env) waitBound(gangName string, n int) placement {
	e.t.Helper()
	var p placement
	e.eventually(fmt.Sprintf("%d bound pods of gang %s", n, gangName), func() (bool, string) {
		p = e.placement(gangName)
		return p.total() == n, fmt.Sprintf("%d bound %v, %d pending", p.total(), p.bound, p.pending)
	})
	return p
}

func (e *env) podGang(name string) *v1alpha1.PodGang {
	e.t.Helper()
	pg := &v1alpha1.PodGang{}
	require.NoError(e.t, e.podGangs.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pg))
	return pg
}

// waitScheduledCondition waits until the PodGang's Scheduled condition has status and a
// message containing text.
func (e *env) waitScheduledCondition(name string, status metav1.ConditionStatus, text string) *metav1.Condition {
	e.t.Helper()
	return e.waitScheduledMessage(name, status, fmt.Sprintf("%q", text), func(msg string) bool { return strings.Contains(msg, text) })
}

// waitScheduledMessage waits until the PodGang's Scheduled condition has status and a message
// that matches.
func (e *env) waitScheduledMessage(name string, status metav1.ConditionStatus, what string, matches func(string) bool) *metav1.Condition {
	e.t.Helper()
	var cond *metav1.Condition
	e.eventually(fmt.Sprintf("PodGang %s Scheduled=%s %s", name, status, what), func() (bool, string) {
		cond = apimeta.FindStatusCondition(e.podGang(name).Status.Conditions, v1alpha1.PodGangConditionScheduled)
		if cond == nil {
			return false, "no Scheduled condition"
		}
		return cond.Status == status && matches(cond.Message), fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
	})
	return cond
}

// scheduledMessage is the PodGang's Scheduled condition, for failure messages.
func (e *env) scheduledMessage(name string) string {
	cond := apimeta.FindStatusCondition(e.podGang(name).Status.Conditions, v1alpha1.PodGangConditionScheduled)
	if cond == nil {
		return "no Scheduled condition"
	}
	return fmt.Sprintf("%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// failedAttempts reads the attempt count of a "attempt N failed: ..." message (0 if none).
func failedAttempts(msg string) int {
	var n int
	if _, err := fmt.Sscanf(msg, "attempt %d failed:", &n); err != nil {
		return 0
	}
	return n
}

// gangEvents lists the events about a PodGang with the given reason.
func (e *env) gangEvents(name, reason string) []eventsv1.Event {
	e.t.Helper()
	list, err := e.admin.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	require.NoError(e.t, err)
	var out []eventsv1.Event
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "PodGang" && ev.Regarding.Name == name && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// deleteGangPods deletes a gang's pods at once (no kubelet: grace period 0) and waits until they
// are gone. The binding checker stops judging the gang first.
func (e *env) deleteGangPods(gangName string) {
	e.t.Helper()
	e.checker.retire(gangName)
	require.NoError(e.t, e.admin.CoreV1().Pods(e.ns).DeleteCollection(e.ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: common.LabelPodGang + "=" + gangName}))
	e.eventually("pods of gang "+gangName+" to be deleted", func() (bool, string) {
		n := len(e.pods(gangName))
		return n == 0, fmt.Sprintf("%d left", n)
	})
}

// nodesWithLabel returns the names of the test's nodes carrying label=value.
func (e *env) nodesWithLabel(key, value string) map[string]bool {
	list, err := e.admin.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{LabelSelector: fmt.Sprintf("%s=%s,%s=%s", nodeTestLabel, e.ns, key, value)})
	require.NoError(e.t, err)
	out := map[string]bool{}
	for _, n := range list.Items {
		out[n.Name] = true
	}
	return out
}

func required(key string) *v1alpha1.TopologyConstraint {
	return &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Required: ptr.To(key)}}
}

func preferred(key string) *v1alpha1.TopologyConstraint {
	return &v1alpha1.TopologyConstraint{PackConstraint: &v1alpha1.TopologyPackConstraint{Preferred: ptr.To(key)}}
}
