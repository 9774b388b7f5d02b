package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// +kubebuilder:object:root=true

// OperatorConfiguration configures grove-operator.
type OperatorConfiguration struct {
	metav1.TypeMeta `json:",inline"`
	// ClientConnection configures the operator's API client.
	ClientConnection ClientConnectionConfiguration `json:"runtimeClientConnection"`
	// LeaderElection configures leader election between operator replicas.
	LeaderElection LeaderElectionConfiguration `json:"leaderElection"`
	// Server configures the webhook, health and metrics servers.
	Server ServerConfiguration `json:"server"`
	// Controllers configures the controllers.
	Controllers ControllerConfiguration `json:"controllers"`
	// LogLevel is debug, info or error.
	LogLevel LogLevel `json:"logLevel"`
	// LogFormat is json or text.
	LogFormat LogFormat `json:"logFormat"`
	// Scheduler lists the scheduler backends the operator can hand PodGangs to.
	Scheduler SchedulerConfiguration `json:"scheduler"`
	// TopologyAwareScheduling configures topology-aware scheduling.
	TopologyAwareScheduling TopologyAwareSchedulingConfiguration `json:"topologyAwareScheduling"`
	// StartupWaiter configures the init container that enforces clique startup order.
	StartupWaiter StartupWaiterConfiguration `json:"startupWaiter"`
	// PodGang configures how the operator heals PodGangs.
	// +optional
	PodGang PodGangConfiguration `json:"podGang,omitempty"`
	// NodeFailure configures how the operator replaces the members of a gang on a failed node.
	// +optional
	NodeFailure NodeFailureConfiguration `json:"nodeFailure,omitempty"`
	// Debugging configures the profiling endpoint.
	// +optional
	Debugging *DebuggingConfiguration `json:"debugging,omitempty"`

	// Upstream Grove's keys that this operator accepts, so that a configuration rendered by
	// upstream's chart starts it, but does not implement: a present key is logged as a warning
	// at start-up (see NotImplementedKeys).

	// Authorizer is upstream's authorizer webhook configuration. Not implemented.
	// +optional
	Authorizer *AuthorizerConfiguration `json:"authorizer,omitempty"`
	// Network is upstream's network acceleration configuration. Not implemented.
	// +optional
	Network *NetworkConfiguration `json:"network,omitempty"`
	// MNNVL is older upstream releases' spelling of network. Not implemented.
	// +optional
	MNNVL *MNNVLConfiguration `json:"mnnvl,omitempty"`
}

// DebuggingConfiguration configures debugging endpoints.
type DebuggingConfiguration struct {
	// EnableProfiling serves net/http/pprof under /debug/pprof/ on PprofBindHost:PprofBindPort.
	// +optional
	EnableProfiling *bool `json:"enableProfiling,omitempty"`
	// PprofBindHost is the host or IP the profiling server binds to (upstream Grove's key);
	// 127.0.0.1 when unset.
	// +optional
	PprofBindHost *string `json:"pprofBindHost,omitempty"`
	// PprofBindPort is the port the profiling server binds to (upstream Grove's key); 2753
	// when unset.
	// +optional
	PprofBindPort *int `json:"pprofBindPort,omitempty"`
	// PprofBindAddress is host:port of the profiling server, the spelling earlier Grove
	// releases of this project accepted. Deprecated: use pprofBindHost and pprofBindPort; it
	// may not be set together with them.
	// +optional
	PprofBindAddress *string `json:"pprofBindAddress,omitempty"`
}

// AuthorizerConfiguration is upstream Grove's authorizer webhook configuration, accepted for
// compatibility and not implemented.
type AuthorizerConfiguration struct {
	Enabled                          bool     `json:"enabled"`
	ReconcilerServiceAccountUserName string   `json:"reconcilerServiceAccountUserName,omitempty"`
	ExemptServiceAccountUserNames    []string `json:"exemptServiceAccountUserNames,omitempty"`
}

// NetworkConfiguration is upstream Grove's network acceleration configuration, accepted for
// compatibility and not implemented.
type NetworkConfiguration struct {
	AutoMNNVLEnabled bool `json:"autoMNNVLEnabled"`
}

// MNNVLConfiguration is older upstream releases' MNNVL configuration, accepted for
// compatibility and not implemented.
type MNNVLConfiguration struct {
	Enabled bool `json:"enabled"`
}

// LogLevel is the verbosity of the operator's logs.
type LogLevel string

// LogFormat is the encoding of the operator's logs.
type LogFormat string

// Log levels and formats.
const (
	LogLevelDebug LogLevel  = "debug"
	LogLevelInfo  LogLevel  = "info"
	LogLevelError LogLevel  = "error"
	LogFormatJSON LogFormat = "json"
	LogFormatText LogFormat = "text"
)

// ClientConnectionConfiguration configures the API client. Not component-base's
// config/v1alpha1 type: that one also has `kubeconfig`, which upstream Grove's configuration
// does not, and strict decoding would accept it without the operator honouring it.
type ClientConnectionConfiguration struct {
	// QPS is the sustained request rate to the apiserver.
	QPS float32 `json:"qps"`
	// Burst is the request burst to the apiserver.
	Burst int `json:"burst"`
	// ContentType is the encoding of requests (e.g. application/vnd.kubernetes.protobuf).
	// +optional
	ContentType string `json:"contentType,omitempty"`
	// AcceptContentTypes is the Accept header of requests.
	// +optional
	AcceptContentTypes string `json:"acceptContentTypes,omitempty"`
}

// LeaderElectionConfiguration configures leader election. Not component-base's
// config/v1alpha1 type: upstream Grove's key is `enabled`, component-base's `leaderElect`.
type LeaderElectionConfiguration struct {
	// Enabled turns leader election on; required with more than one replica.
	Enabled bool `json:"enabled"`
	// LeaseDuration is how long a lease is valid.
	LeaseDuration metav1.Duration `json:"leaseDuration"`
	// RenewDeadline is how long the leader keeps trying to renew.
	RenewDeadline metav1.Duration `json:"renewDeadline"`
	// RetryPeriod is the wait between attempts.
	RetryPeriod metav1.Duration `json:"retryPeriod"`
	// ResourceLock is the lock kind; only "leases" is supported.
	ResourceLock string `json:"resourceLock"`
	// ResourceName is the name of the lease.
	ResourceName string `json:"resourceName"`
	// ResourceNamespace is the namespace of the lease.
	ResourceNamespace string `json:"resourceNamespace"`
}

// ServerConfiguration configures the operator's servers.
type ServerConfiguration struct {
	// Webhooks configures the admission webhook server.
	Webhooks WebhookServer `json:"webhooks"`
	// HealthProbes configures /healthz and /readyz.
	HealthProbes Server `json:"healthProbes"`
	// Metrics configures /metrics.
	Metrics Server `json:"metrics"`
}

// Server is an address to listen on.
type Server struct {
	// BindAddress is the IP to listen on.
	BindAddress string `json:"bindAddress"`
	// Port to listen on; unset (0) means the server's default port (webhooks 9443, health probes
	// 9444, metrics 9445).
	Port int `json:"port"`
}

// CertProvisionMode decides where the webhook serving certificate comes from.
type CertProvisionMode string

const (
	// CertProvisionModeAuto: the operator creates a CA and serving certificate, stores them in
	// a Secret, injects the CA into its webhook configurations and rotates them.
	CertProvisionModeAuto CertProvisionMode = "auto"
	// CertProvisionModeManual: the certificate is mounted into serverCertDir (e.g. by cert-manager).
	CertProvisionModeManual CertProvisionMode = "manual"
)

// WebhookServer configures the webhook server.
type WebhookServer struct {
	Server `json:",inline"`
	// ServerCertDir holds tls.crt and tls.key.
	ServerCertDir string `json:"serverCertDir"`
	// CertProvisionMode is auto or manual.
	CertProvisionMode CertProvisionMode `json:"certProvisionMode"`
	// SecretName is the Secret holding the certificate in auto mode.
	SecretName string `json:"secretName"`
	// ServiceName is the Service that fronts the webhook server (the certificate's DNS name).
	ServiceName string `json:"serviceName"`
	// Namespace is the namespace of the Secret and Service.
	Namespace string `json:"namespace"`
	// AutoProvision is upstream Grove's older spelling of certProvisionMode: false means
	// manual, true auto. Used only when certProvisionMode is unset.
	// +optional
	AutoProvision *bool `json:"autoProvision,omitempty"`
}

// ControllerConfiguration configures the controllers.
type ControllerConfiguration struct {
	PodCliqueSet          ConcurrencyConfiguration `json:"podCliqueSet"`
	PodClique             ConcurrencyConfiguration `json:"podClique"`
	PodCliqueScalingGroup ConcurrencyConfiguration `json:"podCliqueScalingGroup"`
	ClusterTopology       ConcurrencyConfiguration `json:"clusterTopology"`
}

// ConcurrencyConfiguration configures one controller.
type ConcurrencyConfiguration struct {
	// ConcurrentSyncs is the number of parallel reconciles.
	// +optional
	ConcurrentSyncs *int `json:"concurrentSyncs,omitempty"`
}

// SchedulerName names a scheduler backend; it is also the pods' spec.schedulerName.
type SchedulerName string

// Scheduler backends.
const (
	SchedulerNameGrove       SchedulerName = "grove-scheduler"
	SchedulerNameKube        SchedulerName = "default-scheduler"
	SchedulerNameKAI         SchedulerName = "kai-scheduler"
	SchedulerNameKoordinator SchedulerName = "koord-scheduler"
	SchedulerNameVolcano     SchedulerName = "volcano"
)

// SupportedSchedulerNames are the backends the operator knows.
var SupportedSchedulerNames = []SchedulerName{SchedulerNameGrove, SchedulerNameKube, SchedulerNameKAI, SchedulerNameKoordinator, SchedulerNameVolcano}

// UnsupportedSchedulerNames are schedulers that workloads written for upstream Grove or NVIDIA
// Dynamo may name and that Grove has no backend for, with the reason; admission and the
// configuration name them in their refusal.
var UnsupportedSchedulerNames = map[SchedulerName]string{
	"lpx-scheduler": "a proprietary scheduler whose API is not public; Grove has no backend for it",
}

// SchedulerConfiguration lists the enabled scheduler backends.
type SchedulerConfiguration struct {
	// Profiles are the enabled backends.
	Profiles []SchedulerProfile `json:"profiles"`
	// DefaultProfileName is the backend for pods without a schedulerName.
	DefaultProfileName SchedulerName `json:"defaultProfileName"`
}

// SchedulerProfile enables one backend with its backend-specific config.
type SchedulerProfile struct {
	// Name of the backend.
	Name SchedulerName `json:"name"`
	// Config is the backend-specific configuration.
	// +optional
	Config *runtime.RawExtension `json:"config,omitempty"`
}

// TopologyAwareSchedulingConfiguration configures topology-aware scheduling.
type TopologyAwareSchedulingConfiguration struct {
	// Enabled allows PodCliqueSets to carry topology constraints.
	Enabled bool `json:"enabled"`
	// Profiles are ClusterTopologies the operator creates and keeps equal to this config.
	// +optional
	Profiles []TopologyProfile `json:"profiles,omitempty"`
	// Levels is upstream Grove's single topology: with enabled, defaulting turns it into the
	// profile grove-topology (upstream's ClusterTopology name) unless a profile has that name.
	// +optional
	Levels []corev1alpha1.TopologyLevel `json:"levels,omitempty"`
}

// TopologyProfile is a ClusterTopology managed from the configuration.
type TopologyProfile struct {
	// Name of the ClusterTopology.
	Name string `json:"name"`
	// Levels, broadest first.
	Levels []corev1alpha1.TopologyLevel `json:"levels"`
	// SchedulerReferences name externally managed backend topology objects.
	// +optional
	SchedulerReferences []corev1alpha1.SchedulerReference `json:"schedulerReferences,omitempty"`
}

// StartupWaiterConfiguration configures the startup-ordering init container.
type StartupWaiterConfiguration struct {
	// Image runs `grove-operator wait-for-cliques`.
	Image string `json:"image"`
}

// PodGangConfiguration configures how the operator heals PodGangs.
type PodGangConfiguration struct {
	// PartialBindingTimeout bounds how long a PodGang may stay partly bound: some members on a
	// node while a PodGroup has fewer than minReplicas bound (a scheduler that crashed between
	// two bindings, a node lost mid-binding, capacity taken meanwhile). After it, the bound
	// members are deleted and recreated gated, so the gang is placed again as a whole.
	// Unset or 0 means DefaultPartialBindingTimeout.
	// +optional
	PartialBindingTimeout metav1.Duration `json:"partialBindingTimeout,omitempty"`
}

// NodeFailureConfiguration configures how grove-operator replaces the pods of a gang whose
// node failed, per PodCliqueSet replica (the PodCliqueSet's nodeFailurePolicy chooses between
// replacing the lost pods and recreating the replica).
type NodeFailureConfiguration struct {
	// Grace is how long a node must be NotReady or Unknown (or carry the unreachable taint)
	// before its Grove pods are replaced; a deleted node counts once its pods have been bound
	// for as long. It must stay below the pods' tolerationSeconds for the not-ready and
	// unreachable taints (300s by default), so the replacement comes before Kubernetes' own
	// eviction. Unset or 0 means DefaultNodeFailureGrace.
	// +optional
	Grace metav1.Duration `json:"grace,omitempty"`
	// ForceDeletePods force-deletes (grace period 0) the Grove pods of a node that is gone or
	// unreachable (Ready Unknown, or the unreachable taint) past Grace, so a pod a dead kubelet
	// will never confirm does not stay Terminating and hold what its replacement needs. Pods of
	// a node whose kubelet still reports (Ready False) are deleted gracefully. Default true.
	// +optional
	ForceDeletePods *bool `json:"forceDeletePods,omitempty"`
	// InitialBackOff is the least time between two replacements in one replica; it doubles
	// with each further replacement up to MaxBackOff. Unset or 0 means DefaultNodeFailureInitialBackOff.
	// +optional
	InitialBackOff metav1.Duration `json:"initialBackOff,omitempty"`
	// MaxBackOff caps the back-off. Unset or 0 means DefaultNodeFailureMaxBackOff.
	// +optional
	MaxBackOff metav1.Duration `json:"maxBackOff,omitempty"`
	// MaxReplacements is the budget of replacements of one replica: past it, the replica's
	// pods on failed nodes are no longer replaced (the PodCliqueSet's MemberReplacing condition
	// turns False, reason ReplacementBudgetExhausted) and gang termination applies. Unset
	// means DefaultNodeFailureMaxReplacements.
	// +optional
	MaxReplacements *int32 `json:"maxReplacements,omitempty"`
	// ResetAfter is how long a replica must go without a replacement for its count (and an
	// exhausted budget) to start afresh. Unset or 0 means DefaultNodeFailureResetAfter.
	// +optional
	ResetAfter metav1.Duration `json:"resetAfter,omitempty"`
}
