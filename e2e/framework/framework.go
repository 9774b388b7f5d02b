package framework

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/internal/operator/app"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/internal/testenv/webhooktest"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// Namespace where grove-operator keeps its lease and certificate.
const Namespace = "grove-system"

// The ServiceAccounts the shipped RBAC (config/rbac, config/scheduler/rbac.yaml) grants, in
// Namespace: each program runs with a token of its own, so a missing permission fails the
// scenarios as it would fail an installation.
const (
	OperatorServiceAccount  = "grove-operator"
	SchedulerServiceAccount = "grove-scheduler"
)

// RBACManifests are the shipped RBAC of both programs, relative to the module root.
var RBACManifests = []string{filepath.Join("config", "rbac"), filepath.Join("config", "scheduler", "rbac.yaml")}

// InstallRBAC creates Namespace and applies RBACManifests as shipped.
func InstallRBAC(ctx context.Context, c *cluster.Cluster) error {
	root, err := cluster.ModuleRoot()
	if err != nil {
		return err
	}
	if err := c.CreateNamespace(ctx, Namespace); err != nil {
		return err
	}
	paths := make([]string, len(RBACManifests))
	for i, m := range RBACManifests {
		paths[i] = filepath.Join(root, m)
	}
	return c.Apply(ctx, paths...)
}

// installBackendRBAC applies config/rbac/backends/<profile>.yaml of each optional scheduler
// backend the configuration enables, as an admin following the install docs would: the rights
// of a backend that is off are never granted.
func installBackendRBAC(ctx context.Context, c *cluster.Cluster, cfg *configv1alpha1.OperatorConfiguration) error {
	root, err := cluster.ModuleRoot()
	if err != nil {
		return err
	}
	for _, p := range cfg.Scheduler.Profiles {
		path := filepath.Join(root, "config", "rbac", "backends", string(p.Name)+".yaml")
		if _, err := os.Stat(path); err != nil {
			continue // a backend without rights of its own (grove-scheduler, default-scheduler)
		}
		if err := c.Apply(ctx, path); err != nil {
			return err
		}
	}
	return nil
}

// Options configures an environment.
type Options struct {
	// Cluster configures the control plane (Dir, feature gates, third-party CRDs, ...).
	Cluster cluster.Options
	// WithoutOperator and WithoutScheduler leave a program out.
	WithoutOperator, WithoutScheduler bool
	// OperatorConfig adjusts the OperatorConfiguration (config/operator/operator-config.yaml).
	OperatorConfig func(*configv1alpha1.OperatorConfiguration)
	// SchedulerConfigFile is the KubeSchedulerConfiguration; config/scheduler/scheduler-config.yaml when empty.
	SchedulerConfigFile string
}

// Env is a running local Grove.
type Env struct {
	Cluster   *cluster.Cluster
	Client    client.Client
	Clientset kubernetes.Interface
	Operator  *cluster.Process
	Scheduler *cluster.Process

	opts                Options
	root, binDir        string
	operatorConfigPath  string
	schedulerConfigPath string
	operatorHealthAddr  string
	webhookPort         int
	webhookCA           []byte
	schedulerSecurePort int
	operatorMetricsAddr string

	// metricsToken is MetricsReaderToken's, once made.
	metricsMu    sync.Mutex
	metricsToken string

	// Kubeconfigs of the programs' ServiceAccounts.
	operatorKubeconfig, schedulerKubeconfig string
}

// Start brings up the control plane, kwok, grove-operator and grove-scheduler. On error
// everything started is stopped.
func Start(ctx context.Context, opts Options) (e *Env, err error) {
	e = &Env{opts: opts}
	if e.root, err = cluster.ModuleRoot(); err != nil {
		return nil, err
	}
	if e.binDir, err = cluster.BinDir(); err != nil {
		return nil, err
	}
	for _, b := range []string{"grove-operator", "grove-scheduler"} {
		if _, serr := os.Stat(filepath.Join(e.binDir, b)); serr != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make build` first", b, e.binDir)
		}
	}
	if e.Cluster, err = cluster.Start(ctx, opts.Cluster); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, e.Cluster.LogTail(30))
			_ = e.Stop()
		}
	}()
	scheme, err := app.Scheme()
	if err != nil {
		return e, err
	}
	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return e, err
	}
	if e.Clientset, err = kubernetes.NewForConfig(e.Cluster.Config); err != nil {
		return e, err
	}
	if err = e.Cluster.StartKwok(ctx); err != nil {
		return e, err
	}
	if err = InstallRBAC(ctx, e.Cluster); err != nil {
		return e, err
	}
	if !opts.WithoutOperator {
		if err = e.StartOperator(ctx); err != nil {
			return e, err
		}
	}
	if !opts.WithoutScheduler {
		if err = e.StartScheduler(ctx); err != nil {
			return e, err
		}
	}
	return e, nil
}

// Stop stops the programs and the control plane.
func (e *Env) Stop() error {
	if e.Cluster == nil {
		return nil
	}
	return e.Cluster.Stop()
}

// StartOperator (re)starts grove-operator as its ServiceAccount with the shipped configuration
// adapted to loopback: certificates in manual mode from a local CA, webhooks registered with
// loopback URLs.
func (e *Env) StartOperator(ctx context.Context) error {
	if e.operatorConfigPath == "" {
		if err := e.prepareOperator(ctx); err != nil {
			return err
		}
	}
	if e.operatorKubeconfig == "" {
		var err error
		if e.operatorKubeconfig, err = e.Cluster.ServiceAccountKubeconfig(ctx, Namespace, OperatorServiceAccount); err != nil {
			return err
		}
	}
	p, err := e.Cluster.StartProcess("grove-operator", filepath.Join(e.binDir, "grove-operator"),
		[]string{"--config=" + e.operatorConfigPath}, []string{"KUBECONFIG=" + e.operatorKubeconfig})
	if err != nil {
		return err
	}
	e.Operator = p
	return waitHTTP(ctx, p, "http://"+e.operatorHealthAddr+"/readyz", 90*time.Second)
}

func (e *Env) prepareOperator(ctx context.Context) error {
	data, err := os.ReadFile(filepath.Join(e.root, "config", "operator", "operator-config.yaml"))
	if err != nil {
		return err
	}
	cfg, err := configv1alpha1.Decode(data)
	if err != nil {
		return err
	}
	if e.webhookPort, err = cluster.FreePort(); err != nil {
		return err
	}
	healthPort, err := cluster.FreePort()
	if err != nil {
		return err
	}
	// A port of its own: the configuration defaults port 0 to 9445, which concurrent
	// environments on one machine would fight over.
	metricsPort, err := cluster.FreePort()
	if err != nil {
		return err
	}
	certDir := filepath.Join(e.Cluster.Dir, "webhook-certs")
	ca, err := webhooktest.NewCA()
	if err != nil {
		return err
	}
	if _, err := ca.WriteServingCert(certDir, net.IPv4(127, 0, 0, 1)); err != nil {
		return err
	}
	e.webhookCA = ca.PEM
	cfg.Server.Webhooks.BindAddress = "127.0.0.1"
	cfg.Server.Webhooks.Port = e.webhookPort
	cfg.Server.Webhooks.ServerCertDir = certDir
	cfg.Server.Webhooks.CertProvisionMode = configv1alpha1.CertProvisionModeManual
	cfg.Server.HealthProbes = configv1alpha1.Server{BindAddress: "127.0.0.1", Port: healthPort}
	cfg.Server.Metrics = configv1alpha1.Server{BindAddress: "127.0.0.1", Port: metricsPort}
	cfg.LeaderElection.ResourceNamespace = Namespace
	cfg.LeaderElection.LeaseDuration, cfg.LeaderElection.RenewDeadline, cfg.LeaderElection.RetryPeriod = shortLease()
	cfg.LogFormat = configv1alpha1.LogFormatText
	if e.opts.OperatorConfig != nil {
		e.opts.OperatorConfig(cfg)
	}
	if err := installBackendRBAC(ctx, e.Cluster, cfg); err != nil {
		return err
	}
	e.operatorHealthAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(healthPort))
	e.operatorMetricsAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.Server.Metrics.Port))
	cfg.APIVersion, cfg.Kind = configv1alpha1.SchemeGroupVersion.String(), "OperatorConfiguration"
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	e.operatorConfigPath = filepath.Join(e.Cluster.Dir, "operator-config.yaml")
	if err := os.WriteFile(e.operatorConfigPath, out, 0o644); err != nil {
		return err
	}
	return e.registerWebhooks(ctx)
}

// registerWebhooks installs config/webhook's configurations with the service references
// rewritten to the operator's loopback address.
func (e *Env) registerWebhooks(ctx context.Context) error {
	dir := filepath.Join(e.root, "config", "webhook")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("%s: %w", f, err)
			}
			kind := u.GetKind()
			if kind != "MutatingWebhookConfiguration" && kind != "ValidatingWebhookConfiguration" {
				continue
			}
			hooks, _, _ := unstructured.NestedSlice(u.Object, "webhooks")
			for i := range hooks {
				h := hooks[i].(map[string]any)
				path, _, _ := unstructured.NestedString(h, "clientConfig", "service", "path")
				h["clientConfig"] = map[string]any{
					"url":      fmt.Sprintf("https://127.0.0.1:%d%s", e.webhookPort, path),
					"caBundle": base64.StdEncoding.EncodeToString(e.webhookCA),
				}
				hooks[i] = h
			}
			if err := unstructured.SetNestedSlice(u.Object, hooks, "webhooks"); err != nil {
				return err
			}
			if err := e.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("registering %s %s: %w", kind, u.GetName(), err)
			}
		}
	}
	return nil
}

// shortLease is the leader-election lease of both programs: a program restarted after a kill
// waits for the dead leader's lease to expire, which the shipped 15s would make longer than the
// scenarios tolerate a gang partly bound.
func shortLease() (lease, renew, retry metav1.Duration) {
	return metav1.Duration{Duration: 4 * time.Second}, metav1.Duration{Duration: 3 * time.Second}, metav1.Duration{Duration: 500 * time.Millisecond}
}

// StartScheduler (re)starts grove-scheduler as its ServiceAccount with the shipped
// KubeSchedulerConfiguration, logging at verbosity $GROVE_E2E_SCHEDULER_V (default 2). Its
// secure port authenticates and authorizes through the apiserver with the same identity, as
// in a pod (where the in-cluster configuration is used for both).
func (e *Env) StartScheduler(ctx context.Context) error {
	if e.schedulerKubeconfig == "" {
		var err error
		if e.schedulerKubeconfig, err = e.Cluster.ServiceAccountKubeconfig(ctx, Namespace, SchedulerServiceAccount); err != nil {
			return err
		}
	}
	if e.schedulerConfigPath == "" {
		src := e.opts.SchedulerConfigFile
		if src == "" {
			src = filepath.Join(e.root, "config", "scheduler", "scheduler-config.yaml")
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		cfg := map[string]any{}
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			return err
		}
		_ = unstructured.SetNestedField(cfg, e.schedulerKubeconfig, "clientConnection", "kubeconfig")
		_ = unstructured.SetNestedField(cfg, Namespace, "leaderElection", "resourceNamespace")
		lease, renew, retry := shortLease()
		_ = unstructured.SetNestedField(cfg, lease.Duration.String(), "leaderElection", "leaseDuration")
		_ = unstructured.SetNestedField(cfg, renew.Duration.String(), "leaderElection", "renewDeadline")
		_ = unstructured.SetNestedField(cfg, retry.Duration.String(), "leaderElection", "retryPeriod")
		out, err := yaml.Marshal(cfg)
		if err != nil {
			return err
		}
		e.schedulerConfigPath = filepath.Join(e.Cluster.Dir, "scheduler-config.yaml")
		if err := os.WriteFile(e.schedulerConfigPath, out, 0o644); err != nil {
			return err
		}
		if e.schedulerSecurePort, err = cluster.FreePort(); err != nil {
			return err
		}
	}
	p, err := e.Cluster.StartProcess("grove-scheduler", filepath.Join(e.binDir, "grove-scheduler"), []string{
		"--config=" + e.schedulerConfigPath, "--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(e.schedulerSecurePort),
		"--authentication-kubeconfig=" + e.schedulerKubeconfig, "--authorization-kubeconfig=" + e.schedulerKubeconfig, "--v=" + cmp.Or(os.Getenv("GROVE_E2E_SCHEDULER_V"), "2"),
		// Health without credentials, as kube-scheduler's defaults; /metrics as shipped: only
		// callers the apiserver authorises (SchedulerMetric brings a metrics reader's token).
		"--authorization-always-allow-paths=/healthz,/readyz,/livez",
	}, nil)
	if err != nil {
		return err
	}
	e.Scheduler = p
	return waitHTTP(ctx, p, fmt.Sprintf("https://127.0.0.1:%d/healthz", e.schedulerSecurePort), 90*time.Second)
}

// forbiddenMarker starts the apiserver's message for a request RBAC denied.
const forbiddenMarker = "is forbidden: User"

// ForbiddenRequests returns the lines of grove-operator's and grove-scheduler's logs that
// report a request the apiserver refused for lack of permission: a scenario that passes with
// such lines only passed because a retry or another path hid a gap in the shipped RBAC.
func (e *Env) ForbiddenRequests() ([]string, error) {
	var found []string
	for _, p := range []*cluster.Process{e.Operator, e.Scheduler} {
		if p == nil {
			continue
		}
		data, err := os.ReadFile(p.LogPath())
		if err != nil {
			return nil, err
		}
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, forbiddenMarker) {
				found = append(found, filepath.Base(p.LogPath())+": "+strings.TrimSpace(line))
			}
		}
	}
	return found, nil
}

func waitHTTP(ctx context.Context, p *cluster.Process, url string, timeout time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback health probe of a self-signed server
	defer c.CloseIdleConnections()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if done, perr := p.Exited(); done {
			return false, fmt.Errorf("exited: %v", perr)
		}
		resp, err := c.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		log, _ := os.ReadFile(p.LogPath())
		lines := strings.Split(string(log), "\n")
		if len(lines) > 30 {
			lines = lines[len(lines)-30:]
		}
		return fmt.Errorf("waiting for %s: %w\n%s", url, err, strings.Join(lines, "\n"))
	}
	return nil
}

// NodeShape is the capacity of one simulated GPU node.
var NodeShape = map[corev1.ResourceName]string{
	corev1.ResourceCPU: "64", corev1.ResourceMemory: "512Gi", "nvidia.com/gpu": "8", corev1.ResourcePods: "110",
}

// Topology label keys of the simulated fabric (the keys of config/samples/clustertopology.yaml).
const (
	ZoneKey  = "topology.kubernetes.io/zone"
	BlockKey = "network.grove.io/block"
	RackKey  = "network.grove.io/rack"
	HostKey  = corev1.LabelHostname
)

// Fabric is a simulated zones × blocks × racks × hosts cluster.
type Fabric struct {
	Zones, BlocksPerZone, RacksPerBlock, HostsPerRack int
	// Prefix, when set, starts every node name and domain value ("a" makes node a-z0-b0-r0-h0
	// in rack a-z0-b0-r0), so that several fabrics can share a cluster.
	Prefix string
	// Keys are the node label keys of zone, block and rack; ZoneKey, BlockKey and RackKey when
	// empty. Hosts are always told apart by HostKey.
	Keys FabricKeys
}

// FabricKeys are the node label keys a fabric puts its domains in.
type FabricKeys struct{ Zone, Block, Rack string }

func (k FabricKeys) orDefault() FabricKeys {
	if k == (FabricKeys{}) {
		return FabricKeys{Zone: ZoneKey, Block: BlockKey, Rack: RackKey}
	}
	return k
}

// CreateNodes creates kwok nodes with topology labels: node z0-b1-r2-h3 sits in zone z0,
// block z0-b1 and rack z0-b1-r2.
func (e *Env) CreateNodes(ctx context.Context, f Fabric, shape map[corev1.ResourceName]string) ([]string, error) {
	keys := f.Keys.orDefault()
	var names []string
	for z := 0; z < f.Zones; z++ {
		for b := 0; b < f.BlocksPerZone; b++ {
			for r := 0; r < f.RacksPerBlock; r++ {
				for h := 0; h < f.HostsPerRack; h++ {
					zone := fmt.Sprintf("z%d", z)
					if f.Prefix != "" {
						zone = f.Prefix + "-" + zone
					}
					block := fmt.Sprintf("%s-b%d", zone, b)
					rack := fmt.Sprintf("%s-r%d", block, r)
					name := fmt.Sprintf("%s-h%d", rack, h)
					node := cluster.FakeNode(name, map[string]string{keys.Zone: zone, keys.Block: block, keys.Rack: rack}, shape)
					if _, err := e.Clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
						return nil, err
					}
					names = append(names, name)
				}
			}
		}
	}
	return names, nil
}

// OperatorMetricsAddr is host:port of grove-operator's HTTPS /metrics (authenticated and
// authorised: it needs a bearer token allowed GET /metrics).
func (e *Env) OperatorMetricsAddr() string { return e.operatorMetricsAddr }

// SchedulerMetricsAddr is host:port of grove-scheduler's HTTPS /metrics.
func (e *Env) SchedulerMetricsAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.schedulerSecurePort))
}
