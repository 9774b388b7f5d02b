package controller_test

import (
	"context"
	"io"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/factories"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller"
)

func TestMain(m *testing.M) {
	w := io.Discard
	if os.Getenv("GROVE_TEST_OPERATOR_LOGS") != "" {
		w = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(w), zap.UseDevMode(true)))
	os.Exit(cluster.RunShared(m, cluster.Options{}))
}

const (
	waitFor = 60 * time.Second
	tick    = 100 * time.Millisecond
)

func scheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, corev1alpha1.AddToScheme(s))
	require.NoError(t, schedv1alpha1.AddToScheme(s))
	return s
}

// env is one test's namespace, a direct (uncached) admin client and a running operator.
type env struct {
	t   *testing.T
	ctx context.Context
	c   client.Client
	ns  string
	// cluster is the control plane the test runs on (cluster.Shared unless it needs its own).
	cluster *cluster.Cluster
	// writers wraps the client of a writer (by its name, e.g. podclique.ControllerName) before
	// startOperator hands it over; the others write through the manager's client.
	writers map[string]func(client.Client) client.Client
}

// operatorConfig is the defaulted configuration tests start from: topology-aware scheduling
// on, grove-scheduler (default) and default-scheduler enabled.
func operatorConfig() *configv1alpha1.OperatorConfiguration {
	cfg := &configv1alpha1.OperatorConfiguration{
		Scheduler: configv1alpha1.SchedulerConfiguration{
			Profiles:           []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameGrove}, {Name: configv1alpha1.SchedulerNameKube}},
			DefaultProfileName: configv1alpha1.SchedulerNameGrove,
		},
		TopologyAwareScheduling: configv1alpha1.TopologyAwareSchedulingConfiguration{Enabled: true},
	}
	configv1alpha1.SetDefaults_OperatorConfiguration(cfg)
	return cfg
}

// newNamespace makes a namespace and a direct client, without an operator.
func newNamespace(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	t.Parallel()
	return newNamespaceOn(t, cluster.Shared)
}

// newNamespaceOn is newNamespace on another control plane.
func newNamespaceOn(t *testing.T, cl *cluster.Cluster) *env {
	t.Helper()
	c, err := client.New(cl.Config, client.Options{Scheme: scheme(t)})
	require.NoError(t, err)
	return &env{t: t, ctx: context.Background(), c: c, ns: cl.TestNamespace(t), cluster: cl}
}

// envOption adjusts the operator a test runs.
type envOption func(cfg *configv1alpha1.OperatorConfiguration, backends map[configv1alpha1.SchedulerName]backend.Factory)

// withConfig changes the operator configuration.
func withConfig(mutate func(*configv1alpha1.OperatorConfiguration)) envOption {
	return func(cfg *configv1alpha1.OperatorConfiguration, _ map[configv1alpha1.SchedulerName]backend.Factory) {
		mutate(cfg)
	}
}

// withBackend replaces the factory of one scheduler backend.
func withBackend(name configv1alpha1.SchedulerName, f backend.Factory) envOption {
	return func(_ *configv1alpha1.OperatorConfiguration, backends map[configv1alpha1.SchedulerName]backend.Factory) {
		backends[name] = f
	}
}

// newEnv makes a namespace and runs the operator's controllers (the same setup as the binary)
// in-process, watching only that namespace, until the test ends.
func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := newNamespace(t)
	e.startOperator(opts...)
	return e
}

// newEnvOn is newEnv on another control plane (the caller decides about t.Parallel).
func newEnvOn(t *testing.T, cp *cluster.Cluster, opts ...envOption) *env {
	t.Helper()
	e := newNamespaceOn(t, cp)
	e.startOperator(opts...)
	return e
}

// startOperator runs the operator's controllers against the env's control plane until the test
// ends, or until the returned func stops them.
func (e *env) startOperator(opts ...envOption) (stop func()) {
	t := e.t
	t.Helper()
	s, ns := e.c.Scheme(), e.ns
	cfg, backends := operatorConfig(), factories.All()
	for _, o := range opts {
		o(cfg, backends)
	}
	mgr, err := ctrl.NewManager(e.cluster.Config, ctrl.Options{
		Scheme:                 s,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		WebhookServer:          webhook.NewServer(webhook.Options{Port: -1}),
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, ByObject: controller.CacheByObject()},
		Controller:             ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	registry, err := backend.NewRegistry(cfg.Scheduler, backends)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	setup := controller.Options{SkipNameValidation: true}
	if len(e.writers) > 0 {
		setup.ClientFor = func(name string) (client.Client, error) {
			if wrap, ok := e.writers[name]; ok {
				return wrap(mgr.GetClient()), nil
			}
			return mgr.GetClient(), nil
		}
	}
	require.NoError(t, controller.SetupWithManager(ctx, mgr, cfg, registry, setup))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				assert.NoError(t, err, "manager")
			case <-time.After(30 * time.Second):
				t.Error("manager did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Image: "registry.k8s.io/pause:3.10",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
	}}}
}

func cliqueTemplate(name string, replicas int32) *corev1alpha1.PodCliqueTemplateSpec {
	return &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: podSpec()}}
}

// disaggregated is the PodCliqueSet most tests use: a standalone router (1 pod) and a scaling
// group "workers" of prefill (2 pods) and decode (1 pod) with 2 replicas, minAvailable 1.
// Defaults the webhook would set are left out on purpose: the controllers apply them.
func disaggregated(ns, name string, replicas int32) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{
			Replicas: replicas,
			Template: corev1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("router", 1), cliqueTemplate("prefill", 2), cliqueTemplate("decode", 1)},
				PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{
					Name: "workers", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1),
				}},
			},
		},
	}
}

func (e *env) create(obj client.Object) {
	e.t.Helper()
	require.NoError(e.t, e.c.Create(e.ctx, obj))
}

// names lists the names of a kind in the test namespace (sorted), optionally filtered.
func (e *env) names(list client.ObjectList, opts ...client.ListOption) []string {
	e.t.Helper()
	require.NoError(e.t, e.c.List(e.ctx, list, append([]client.ListOption{client.InNamespace(e.ns)}, opts...)...))
	items, err := meta.ExtractList(list)
	require.NoError(e.t, err)
	out := []string{}
	for _, it := range items {
		out = append(out, it.(client.Object).GetName())
	}
	sort.Strings(out)
	return out
}

// pods lists the live (not terminating) pods of the namespace, optionally of one PodClique.
func (e *env) pods(pclq string) []corev1.Pod {
	e.t.Helper()
	list := &corev1.PodList{}
	opts := []client.ListOption{client.InNamespace(e.ns)}
	if pclq != "" {
		opts = append(opts, client.MatchingLabels{apicommon.LabelPodClique: pclq})
	}
	require.NoError(e.t, e.c.List(e.ctx, list, opts...))
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Spec.Hostname < out[j].Spec.Hostname })
	return out
}

// podGang reads a PodGang; t is the test or, inside eventually, its CollectT.
func (e *env) podGang(t require.TestingT, name string) *schedv1alpha1.PodGang {
	pg := &schedv1alpha1.PodGang{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pg))
	return pg
}

// update re-reads obj and applies mutate until the write does not conflict.
func (e *env) update(obj client.Object, mutate func()) {
	e.t.Helper()
	require.NoError(e.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return e.c.Update(e.ctx, obj)
	}))
}

// scale sets spec.replicas of a PodCliqueSet, PodCliqueScalingGroup or PodClique through its
// scale subresource, as kubectl scale and autoscalers do.
func (e *env) scale(obj client.Object, replicas int32) {
	e.t.Helper()
	obj.SetNamespace(e.ns)
	require.NoError(e.t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &autoscalingv1.Scale{}
		if err := e.c.SubResource("scale").Get(e.ctx, obj, s); err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		return e.c.SubResource("scale").Update(e.ctx, obj, client.WithSubResourceBody(s))
	}))
}

// node creates a Ready Node for binding pods (no kubelet: bound pods stay Pending).
func (e *env) node() string {
	e.t.Helper()
	name := "node-" + rand.String(8)
	n := cluster.FakeNode(name, nil, map[corev1.ResourceName]string{"cpu": "64", "memory": "256Gi"})
	n.Annotations = nil // not a kwok node: nothing runs the pods
	require.NoError(e.t, e.c.Create(e.ctx, n))
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), n) })
	return name
}

var kwokOnce = sync.OnceValue(func() error { return cluster.Shared.StartKwok(context.Background()) })

// kwokNode creates a Node that kwok runs pods on: bound pods become Running and Ready, deleted
// ones go away.
func (e *env) kwokNode() string {
	e.t.Helper()
	require.NoError(e.t, kwokOnce())
	name := "kwok-" + rand.String(8)
	require.NoError(e.t, e.c.Create(e.ctx, cluster.FakeNode(name, nil, map[corev1.ResourceName]string{"cpu": "64", "memory": "256Gi"})))
	e.t.Cleanup(func() { _ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}) })
	return name
}

// bind schedules a pod onto a node the way a scheduler does.
func (e *env) bind(pod *corev1.Pod, node string) {
	e.t.Helper()
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	require.NoError(e.t, e.c.SubResource("binding").Create(e.ctx, pod, b))
}

func gated(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == apicommon.SchedulingGatePodGangPendingCreation {
			return true
		}
	}
	return false
}

func condition(conds []metav1.Condition, t string) *metav1.Condition {
	return meta.FindStatusCondition(conds, t)
}

// eventually waits for check to pass on the real state, reporting its last failure.
func (e *env) eventually(check func(c *assert.CollectT), msgAndArgs ...any) {
	e.t.Helper()
	require.EventuallyWithT(e.t, check, waitFor, tick, msgAndArgs...)
}
