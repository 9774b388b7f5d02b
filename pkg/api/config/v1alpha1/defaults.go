package v1alpha1

import (
	"net"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/version"
)

// Defaults of the operator configuration.
const (
	DefaultWebhookPort       = 9443
	DefaultHealthProbePort   = 9444
	DefaultMetricsPort       = 9445
	DefaultServerCertDir     = "/etc/grove-operator/webhook-certs"
	DefaultWebhookSecretName = "grove-webhook-server-cert"
	DefaultWebhookService    = "grove-operator"
	DefaultNamespace         = "grove-system"
	DefaultLeaseName         = "grove-operator-leader-election"
	DefaultConcurrentSyncs   = 4
	DefaultPprofBindHost     = "127.0.0.1"
	DefaultPprofBindPort     = 2753
	// DefaultPartialBindingTimeout is how long a PodGang may stay partly bound by default: far
	// longer than binding a gang takes, short enough that held nodes come back.
	DefaultPartialBindingTimeout = 5 * time.Minute
	// UpstreamTopologyName is the ClusterTopology upstream Grove keeps from
	// topologyAwareScheduling.levels.
	UpstreamTopologyName = "grove-topology"
)

// DefaultStartupWaiterImg is this build's own grove-operator image (its wait-for-cliques
// command is the startup waiter): <registry>/grove-operator:<Grove version>, the registry
// being the one `make images IMAGE_REGISTRY=...` stamped into the binary.
var DefaultStartupWaiterImg = version.Image("grove-operator")

// SetDefaults_OperatorConfiguration fills unset fields with their defaults.
//
//nolint:revive,staticcheck // the underscore name is the apimachinery defaulter convention.
func SetDefaults_OperatorConfiguration(c *OperatorConfiguration) {
	if c.ClientConnection.QPS == 0 {
		c.ClientConnection.QPS = 100
	}
	if c.ClientConnection.Burst == 0 {
		c.ClientConnection.Burst = 150
	}
	le := &c.LeaderElection
	setDuration(&le.LeaseDuration, 15*time.Second)
	setDuration(&le.RenewDeadline, 10*time.Second)
	setDuration(&le.RetryPeriod, 2*time.Second)
	setString(&le.ResourceLock, "leases")
	setString(&le.ResourceName, DefaultLeaseName)
	setString(&le.ResourceNamespace, DefaultNamespace)

	wh := &c.Server.Webhooks
	if wh.Port == 0 {
		wh.Port = DefaultWebhookPort
	}
	setString(&wh.ServerCertDir, DefaultServerCertDir)
	if wh.CertProvisionMode == "" && wh.AutoProvision != nil && !*wh.AutoProvision {
		wh.CertProvisionMode = CertProvisionModeManual
	}
	if wh.CertProvisionMode == "" {
		wh.CertProvisionMode = CertProvisionModeAuto
	}
	setString(&wh.SecretName, DefaultWebhookSecretName)
	setString(&wh.ServiceName, DefaultWebhookService)
	setString(&wh.Namespace, DefaultNamespace)
	if c.Server.HealthProbes.Port == 0 {
		c.Server.HealthProbes.Port = DefaultHealthProbePort
	}
	if c.Server.Metrics.Port == 0 {
		c.Server.Metrics.Port = DefaultMetricsPort
	}

	for _, cc := range []*ConcurrencyConfiguration{&c.Controllers.PodCliqueSet, &c.Controllers.PodClique, &c.Controllers.PodCliqueScalingGroup, &c.Controllers.ClusterTopology} {
		if cc.ConcurrentSyncs == nil {
			cc.ConcurrentSyncs = ptr.To(DefaultConcurrentSyncs)
		}
	}
	if c.LogLevel == "" {
		c.LogLevel = LogLevelInfo
	}
	if c.LogFormat == "" {
		c.LogFormat = LogFormatJSON
	}
	// Without profiles, Grove's own backend is the default (upstream defaults to
	// default-scheduler: Grove ships its scheduler). With profiles listed but no default named,
	// pods without a schedulerName go to default-scheduler, as upstream decides.
	if len(c.Scheduler.Profiles) == 0 {
		c.Scheduler.Profiles = []SchedulerProfile{{Name: SchedulerNameGrove}}
		setString((*string)(&c.Scheduler.DefaultProfileName), string(SchedulerNameGrove))
	}
	setString((*string)(&c.Scheduler.DefaultProfileName), string(SchedulerNameKube))
	// default-scheduler is always enabled: pods that name it must not go unhandled.
	if !slices.ContainsFunc(c.Scheduler.Profiles, func(p SchedulerProfile) bool { return p.Name == SchedulerNameKube }) {
		c.Scheduler.Profiles = append(c.Scheduler.Profiles, SchedulerProfile{Name: SchedulerNameKube})
	}
	tas := &c.TopologyAwareScheduling
	if tas.Enabled && len(tas.Levels) > 0 && !slices.ContainsFunc(tas.Profiles, func(p TopologyProfile) bool { return p.Name == UpstreamTopologyName }) {
		tas.Profiles = append(tas.Profiles, TopologyProfile{Name: UpstreamTopologyName, Levels: slices.Clone(tas.Levels)})
	}
	if d := c.Debugging; d != nil && d.PprofBindAddress == nil {
		if d.PprofBindHost == nil {
			d.PprofBindHost = ptr.To(DefaultPprofBindHost)
		}
		if d.PprofBindPort == nil {
			d.PprofBindPort = ptr.To(DefaultPprofBindPort)
		}
	}
	setString(&c.StartupWaiter.Image, DefaultStartupWaiterImg)
	setDuration(&c.PodGang.PartialBindingTimeout, DefaultPartialBindingTimeout)
	SetDefaultsNodeFailure(&c.NodeFailure)
}

func setDuration(d *metav1.Duration, v time.Duration) {
	if d.Duration == 0 {
		d.Duration = v
	}
}

func setString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

// NotImplementedKeys lists the features of upstream Grove's configuration that c turns on and
// that this operator accepts but does not implement. A feature left off (upstream's chart
// renders autoMNNVLEnabled: false by default) asks for nothing, so it is not listed.
func NotImplementedKeys(c *OperatorConfiguration) []string {
	var keys []string
	if c.Authorizer != nil && c.Authorizer.Enabled {
		keys = append(keys, "authorizer.enabled")
	}
	if c.Network != nil && c.Network.AutoMNNVLEnabled {
		keys = append(keys, "network.autoMNNVLEnabled")
	}
	if c.MNNVL != nil && c.MNNVL.Enabled {
		keys = append(keys, "mnnvl.enabled")
	}
	return keys
}

// PprofAddress is host:port of the profiling server, or "" when profiling is off. d has its
// defaults applied.
func PprofAddress(d *DebuggingConfiguration) string {
	if d == nil || d.EnableProfiling == nil || !*d.EnableProfiling {
		return ""
	}
	if d.PprofBindAddress != nil {
		return *d.PprofBindAddress
	}
	return net.JoinHostPort(ptr.Deref(d.PprofBindHost, DefaultPprofBindHost), strconv.Itoa(ptr.Deref(d.PprofBindPort, DefaultPprofBindPort)))
}

// Defaults of nodeFailure.
const (
	// DefaultNodeFailureGrace is short against Kubernetes' 300s taint eviction, long against
	// a kubelet's missed heartbeats: the node controller reports Unknown only after 40-50s.
	DefaultNodeFailureGrace                 = 30 * time.Second
	DefaultNodeFailureInitialBackOff        = 10 * time.Second
	DefaultNodeFailureMaxBackOff            = 5 * time.Minute
	DefaultNodeFailureMaxReplacements int32 = 10
	DefaultNodeFailureResetAfter            = time.Hour
)

// SetDefaultsNodeFailure fills the unset keys of nodeFailure.
func SetDefaultsNodeFailure(n *NodeFailureConfiguration) {
	setDuration(&n.Grace, DefaultNodeFailureGrace)
	setDuration(&n.InitialBackOff, DefaultNodeFailureInitialBackOff)
	setDuration(&n.MaxBackOff, DefaultNodeFailureMaxBackOff)
	setDuration(&n.ResetAfter, DefaultNodeFailureResetAfter)
	if n.ForceDeletePods == nil {
		n.ForceDeletePods = ptr.To(true)
	}
	if n.MaxReplacements == nil {
		n.MaxReplacements = ptr.To(DefaultNodeFailureMaxReplacements)
	}
}
