// Package validation checks an OperatorConfiguration and reports every problem with its field path.
package validation

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corevalidation "github.com/ai-dynamo/grove/pkg/api/core/validation"
)

// ValidateOperatorConfiguration returns every problem of a (defaulted) configuration.
func ValidateOperatorConfiguration(c *configv1alpha1.OperatorConfiguration) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateClient(c.ClientConnection, field.NewPath("runtimeClientConnection"))...)
	errs = append(errs, validateLeaderElection(c.LeaderElection, field.NewPath("leaderElection"))...)
	errs = append(errs, validateServer(c.Server, field.NewPath("server"))...)
	errs = append(errs, validateDebugging(c.Debugging, field.NewPath("debugging"))...)
	errs = append(errs, validateControllers(c.Controllers, field.NewPath("controllers"))...)
	errs = append(errs, validateLogging(c, field.NewPath("logLevel"), field.NewPath("logFormat"))...)
	errs = append(errs, validateScheduler(c.Scheduler, field.NewPath("scheduler"))...)
	errs = append(errs, validateTopology(c.TopologyAwareScheduling, field.NewPath("topologyAwareScheduling"))...)
	if d := c.PodGang.PartialBindingTimeout; d.Duration <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("podGang", "partialBindingTimeout"), d.String(), "must be positive"))
	}
	errs = append(errs, validateNodeFailure(c.NodeFailure, field.NewPath("nodeFailure"))...)
	if c.StartupWaiter.Image == "" {
		errs = append(errs, field.Required(field.NewPath("startupWaiter", "image"), "the startup waiter image is needed for clique startup ordering"))
	}
	return errs
}

func validateClient(c configv1alpha1.ClientConnectionConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.QPS < 0 {
		errs = append(errs, field.Invalid(p.Child("qps"), c.QPS, "must not be negative"))
	}
	if c.Burst < 0 {
		errs = append(errs, field.Invalid(p.Child("burst"), c.Burst, "must not be negative"))
	}
	return errs
}

func validateLeaderElection(le configv1alpha1.LeaderElectionConfiguration, p *field.Path) field.ErrorList {
	if !le.Enabled {
		return nil
	}
	var errs field.ErrorList
	if le.LeaseDuration.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("leaseDuration"), le.LeaseDuration.String(), "must be positive"))
	}
	if le.RenewDeadline.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("renewDeadline"), le.RenewDeadline.String(), "must be positive"))
	}
	if le.RetryPeriod.Duration <= 0 {
		errs = append(errs, field.Invalid(p.Child("retryPeriod"), le.RetryPeriod.String(), "must be positive"))
	}
	if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
		errs = append(errs, field.Invalid(p.Child("leaseDuration"), le.LeaseDuration.String(), "must be greater than renewDeadline"))
	}
	if le.ResourceLock != "leases" {
		errs = append(errs, field.NotSupported(p.Child("resourceLock"), le.ResourceLock, []string{"leases"}))
	}
	if le.ResourceName == "" {
		errs = append(errs, field.Required(p.Child("resourceName"), "needed when leader election is enabled"))
	}
	if le.ResourceNamespace == "" {
		errs = append(errs, field.Required(p.Child("resourceNamespace"), "needed when leader election is enabled"))
	}
	return errs
}

func validatePort(port int, p *field.Path, allowZero bool) field.ErrorList {
	if port == 0 && allowZero {
		return nil
	}
	if port < 1 || port > 65535 {
		return field.ErrorList{field.Invalid(p, port, "must be a port between 1 and 65535")}
	}
	return nil
}

func validateServer(s configv1alpha1.ServerConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	wp := p.Child("webhooks")
	errs = append(errs, validatePort(s.Webhooks.Port, wp.Child("port"), false)...)
	errs = append(errs, validatePort(s.HealthProbes.Port, p.Child("healthProbes", "port"), true)...)
	errs = append(errs, validatePort(s.Metrics.Port, p.Child("metrics", "port"), true)...)
	if s.Webhooks.ServerCertDir == "" {
		errs = append(errs, field.Required(wp.Child("serverCertDir"), ""))
	}
	switch s.Webhooks.CertProvisionMode {
	case configv1alpha1.CertProvisionModeAuto:
		if s.Webhooks.SecretName == "" {
			errs = append(errs, field.Required(wp.Child("secretName"), "needed with certProvisionMode auto"))
		}
		if s.Webhooks.ServiceName == "" {
			errs = append(errs, field.Required(wp.Child("serviceName"), "needed with certProvisionMode auto"))
		}
		if s.Webhooks.Namespace == "" {
			errs = append(errs, field.Required(wp.Child("namespace"), "needed with certProvisionMode auto"))
		}
	case configv1alpha1.CertProvisionModeManual:
	default:
		errs = append(errs, field.NotSupported(wp.Child("certProvisionMode"), s.Webhooks.CertProvisionMode,
			[]configv1alpha1.CertProvisionMode{configv1alpha1.CertProvisionModeAuto, configv1alpha1.CertProvisionModeManual}))
	}
	if s.HealthProbes.Port != 0 && s.HealthProbes.Port == s.Webhooks.Port {
		errs = append(errs, field.Duplicate(p.Child("healthProbes", "port"), s.HealthProbes.Port))
	}
	if s.Metrics.Port != 0 && (s.Metrics.Port == s.Webhooks.Port || s.Metrics.Port == s.HealthProbes.Port) {
		errs = append(errs, field.Duplicate(p.Child("metrics", "port"), s.Metrics.Port))
	}
	return errs
}

func validateControllers(c configv1alpha1.ControllerConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, cc := range map[string]configv1alpha1.ConcurrencyConfiguration{
		"podCliqueSet": c.PodCliqueSet, "podClique": c.PodClique,
		"podCliqueScalingGroup": c.PodCliqueScalingGroup, "clusterTopology": c.ClusterTopology,
	} {
		if cc.ConcurrentSyncs != nil && *cc.ConcurrentSyncs < 1 {
			errs = append(errs, field.Invalid(p.Child(name, "concurrentSyncs"), *cc.ConcurrentSyncs, "must be at least 1"))
		}
	}
	return errs
}

func validateLogging(c *configv1alpha1.OperatorConfiguration, levelPath, formatPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	levels := []configv1alpha1.LogLevel{configv1alpha1.LogLevelDebug, configv1alpha1.LogLevelInfo, configv1alpha1.LogLevelError}
	if !slices.Contains(levels, c.LogLevel) {
		errs = append(errs, field.NotSupported(levelPath, c.LogLevel, levels))
	}
	formats := []configv1alpha1.LogFormat{configv1alpha1.LogFormatJSON, configv1alpha1.LogFormatText}
	if !slices.Contains(formats, c.LogFormat) {
		errs = append(errs, field.NotSupported(formatPath, c.LogFormat, formats))
	}
	return errs
}

func validateDebugging(d *configv1alpha1.DebuggingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d == nil {
		return nil
	}
	if d.PprofBindAddress != nil {
		if d.PprofBindHost != nil || d.PprofBindPort != nil {
			errs = append(errs, field.Forbidden(p.Child("pprofBindAddress"), "set pprofBindHost and pprofBindPort (upstream Grove's keys) or pprofBindAddress, not both"))
		}
		if _, _, err := net.SplitHostPort(*d.PprofBindAddress); err != nil {
			errs = append(errs, field.Invalid(p.Child("pprofBindAddress"), *d.PprofBindAddress, "must be host:port"))
		}
	}
	if h := d.PprofBindHost; h != nil && net.ParseIP(*h) == nil && len(validation.IsDNS1123Subdomain(*h)) > 0 {
		errs = append(errs, field.Invalid(p.Child("pprofBindHost"), *h, "must be an IP address or a host name"))
	}
	if d.PprofBindPort != nil {
		for _, msg := range validation.IsValidPortNum(*d.PprofBindPort) {
			errs = append(errs, field.Invalid(p.Child("pprofBindPort"), *d.PprofBindPort, msg))
		}
	}
	return errs
}

func validateScheduler(s configv1alpha1.SchedulerConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	pp := p.Child("profiles")
	if len(s.Profiles) == 0 {
		errs = append(errs, field.Required(pp, "at least one scheduler profile is needed"))
	}
	seen := map[configv1alpha1.SchedulerName]bool{}
	for i, prof := range s.Profiles {
		if why, known := configv1alpha1.UnsupportedSchedulerNames[prof.Name]; known {
			errs = append(errs, field.Invalid(pp.Index(i).Child("name"), prof.Name, fmt.Sprintf("%s; supported values: %q", why, configv1alpha1.SupportedSchedulerNames)))
		} else if !slices.Contains(configv1alpha1.SupportedSchedulerNames, prof.Name) {
			errs = append(errs, field.NotSupported(pp.Index(i).Child("name"), prof.Name, configv1alpha1.SupportedSchedulerNames))
		}
		if seen[prof.Name] {
			errs = append(errs, field.Duplicate(pp.Index(i).Child("name"), prof.Name))
		}
		seen[prof.Name] = true
	}
	if s.DefaultProfileName != "" && !seen[s.DefaultProfileName] {
		errs = append(errs, field.Invalid(p.Child("defaultProfileName"), s.DefaultProfileName, "must name one of scheduler.profiles"))
	}
	return errs
}

func validateTopology(t configv1alpha1.TopologyAwareSchedulingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if i := slices.IndexFunc(t.Profiles, func(prof configv1alpha1.TopologyProfile) bool {
		return prof.Name == configv1alpha1.UpstreamTopologyName
	}); t.Enabled && len(t.Levels) > 0 && i >= 0 &&
		!equality.Semantic.DeepEqual(t.Levels, t.Profiles[i].Levels) {
		errs = append(errs, field.Invalid(p.Child("levels"), t.Levels, fmt.Sprintf(
			"levels define the ClusterTopology %q, and profiles[%d] defines it differently: keep one of them", configv1alpha1.UpstreamTopologyName, i)))
	}
	pp := p.Child("profiles")
	if len(t.Profiles) > 0 && !t.Enabled {
		errs = append(errs, field.Forbidden(pp, "topology profiles need topologyAwareScheduling.enabled"))
	}
	names := map[string]bool{}
	for i, prof := range t.Profiles {
		ip := pp.Index(i)
		for _, msg := range validation.IsDNS1123Subdomain(prof.Name) {
			errs = append(errs, field.Invalid(ip.Child("name"), prof.Name, msg))
		}
		if names[prof.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), prof.Name))
		}
		names[prof.Name] = true
		errs = append(errs, corevalidation.ValidateTopologyLevels(prof.Levels, ip.Child("levels"))...)
		errs = append(errs, corevalidation.ValidateSchedulerReferences(prof.SchedulerReferences, ip.Child("schedulerReferences"))...)
	}
	return errs
}

// Error formats a non-empty error list as one error.
func Error(errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid operator configuration: %w", errs.ToAggregate())
}

func validateNodeFailure(n configv1alpha1.NodeFailureConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for name, d := range map[string]metav1.Duration{"grace": n.Grace, "initialBackOff": n.InitialBackOff, "maxBackOff": n.MaxBackOff, "resetAfter": n.ResetAfter} {
		if d.Duration <= 0 {
			errs = append(errs, field.Invalid(p.Child(name), d.String(), "must be positive"))
		}
	}
	if n.InitialBackOff.Duration > 0 && n.MaxBackOff.Duration > 0 && n.MaxBackOff.Duration < n.InitialBackOff.Duration {
		errs = append(errs, field.Invalid(p.Child("maxBackOff"), n.MaxBackOff.String(), "must not be shorter than initialBackOff"))
	}
	if n.MaxReplacements != nil && *n.MaxReplacements < 0 {
		errs = append(errs, field.Invalid(p.Child("maxReplacements"), *n.MaxReplacements, "must not be negative"))
	}
	slices.SortFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Field, b.Field) })
	return errs
}
