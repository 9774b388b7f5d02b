// Package kube is the backend of the Kubernetes default scheduler (default-scheduler).
//
// When the apiserver serves the Workload API's PodGroups (scheduling.k8s.io/v1beta1, feature
// gate GenericWorkload), every PodGroup of a PodGang becomes one scheduling.k8s.io PodGroup
// named PodGroupName, owned by the PodGang, with a gang policy of minReplicas
// pods and the PodGroup's required topology key; pods join it through
// spec.schedulingGroup.podGroupName. When CompositePodGroups are served as well
// (scheduling.k8s.io/v1alpha3, feature gate CompositePodGroup), the PodGang becomes a
// CompositePodGroup whose gang needs every one of its children, so the PodGang is placed
// all-or-nothing; a topologyConstraintGroupConfig becomes a nested CompositePodGroup. Without
// CompositePodGroups each PodGroup is a gang of its own.
//
// When the PodGroup API is not served, default-scheduler places pods one by one: the backend
// only sets schedulerName, logs at start-up and reports on every PodCliqueSet that gang
// scheduling is unavailable, and rejects topology constraints. Preferred domains are never
// expressible in the Workload API and are always rejected.
package kube

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
)

// Resources of the Workload API the backend looks for.
var (
	PodGroupResource          = schedulingv1beta1.SchemeGroupVersion.WithResource("podgroups")
	CompositePodGroupResource = schedulingv1alpha3.SchemeGroupVersion.WithResource("compositepodgroups")
)

// Config is the default-scheduler profile's config. It has no options; decoding it strictly
// makes any option a start-up error instead of a silently ignored one.
type Config struct{}

// WorkloadAPI is what the apiserver serves of the Workload API.
type WorkloadAPI struct {
	// PodGroups: scheduling.k8s.io/v1beta1 PodGroups (feature gate GenericWorkload).
	PodGroups bool
	// TopologyConstraints: PodGroups keep spec.schedulingConstraints (feature gate
	// TopologyAwareWorkloadScheduling; the apiserver silently drops the field without it).
	TopologyConstraints bool
	// CompositePodGroups: scheduling.k8s.io/v1alpha3 CompositePodGroups (feature gate
	// CompositePodGroup, which needs TopologyAwareWorkloadScheduling).
	CompositePodGroups bool
	// TopologyProbeError says why TopologyConstraints could not be determined, if it could not.
	TopologyProbeError string
}

// Backend is the default-scheduler backend.
type Backend struct {
	client client.Client
	reader client.Reader
	log    logr.Logger
	api    WorkloadAPI
}

var (
	_ backend.Backend                = &Backend{}
	_ backend.GangCapabilityReporter = &Backend{}
)

// New is the backend.Factory of default-scheduler.
func New() backend.Backend { return &Backend{} }

// Name is default-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKube }

// Init decodes the (empty) profile config and discovers what the apiserver serves of the
// Workload API; it logs whether gangs are scheduled.
func (b *Backend) Init(ctx context.Context, ic backend.InitContext) error {
	if _, err := backend.LoadConfig[Config](ic, string(b.Name()), nil); err != nil {
		return err
	}
	b.client, b.reader, b.log = ic.Client, ic.Reader(), ic.Logger
	if ic.Discovery == nil {
		// Only backends built without a cluster (admission unit tests) get here; grove-operator
		// always passes a discovery client.
		b.log.Info("no discovery client: treating the Workload API as not served")
	} else {
		api, err := DiscoverWorkloadAPI(ctx, ic.Discovery, ic.Client)
		if err != nil {
			return err
		}
		b.api = api
	}
	api := b.api
	available, message := b.GangSchedulingAvailable()
	b.log.Info(message, "gangSchedulingAvailable", available, "podGroups", api.PodGroups,
		"topologyConstraints", api.TopologyConstraints, "compositePodGroups", api.CompositePodGroups)
	if api.TopologyProbeError != "" {
		b.log.Info("topology constraints are rejected for default-scheduler: " + api.TopologyProbeError)
	}
	return nil
}

// DiscoverWorkloadAPI asks the apiserver which Workload API resources it serves. Whether
// PodGroups keep topology constraints (a feature gate discovery does not show) is probed with
// a dry-run create in the default namespace, unless CompositePodGroups are served, whose gate
// requires it.
func DiscoverWorkloadAPI(ctx context.Context, dc discovery.DiscoveryInterface, c client.Client) (WorkloadAPI, error) {
	var api WorkloadAPI
	var err error
	if api.PodGroups, err = serves(dc, PodGroupResource.GroupVersion().String(), PodGroupResource.Resource); err != nil || !api.PodGroups {
		return api, err
	}
	if api.CompositePodGroups, err = serves(dc, CompositePodGroupResource.GroupVersion().String(), CompositePodGroupResource.Resource); err != nil {
		return api, err
	}
	if api.CompositePodGroups {
		api.TopologyConstraints = true
		return api, nil
	}
	api.TopologyConstraints, err = probeTopologyConstraints(ctx, c)
	if err != nil {
		api.TopologyProbeError = fmt.Sprintf("could not tell whether the apiserver keeps PodGroup topology constraints: %v", err)
	}
	return api, nil
}

// serves reports whether a group version has a resource; a group version that is not served
// at all is false, not an error.
func serves(dc discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	list, err := dc.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// topologyProbeKey is the key of the dry-run PodGroup that finds out whether the apiserver
// keeps topology constraints.
const topologyProbeKey = "kubernetes.io/hostname"

// probeTopologyConstraints dry-run creates a PodGroup with a topology constraint: without the
// TopologyAwareWorkloadScheduling gate the apiserver drops the constraint instead of failing.
func probeTopologyConstraints(ctx context.Context, c client.Client) (bool, error) {
	probe := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, GenerateName: "grove-topology-probe-"},
		Spec: schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 1}},
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: topologyProbeKey}}},
		},
	}
	if err := c.Create(ctx, probe, client.DryRunAll); err != nil {
		return false, err
	}
	sc := probe.Spec.SchedulingConstraints
	return sc != nil && len(sc.Topology) == 1 && sc.Topology[0].Key == topologyProbeKey, nil
}

// WorkloadAPI is what Init discovered.
func (b *Backend) WorkloadAPI() WorkloadAPI { return b.api }

// Messages of GangSchedulingAvailable.
const (
	GangUnavailableMessage = "default-scheduler places pods one by one: the apiserver does not serve the Workload API's " +
		"PodGroups (scheduling.k8s.io/v1beta1; feature gate GenericWorkload), so minAvailable is not enforced at scheduling time"
	GangPerPodGroupMessage = "default-scheduler gang-schedules each PodClique of a PodGang on its own (one scheduling.k8s.io PodGroup " +
		"with minCount = minAvailable each); the PodCliques of a PodGang are not placed all-or-nothing together, which needs " +
		"CompositePodGroups (scheduling.k8s.io/v1alpha3; feature gate CompositePodGroup)"
	GangCompositeMessage = "default-scheduler gang-schedules every PodGang all-or-nothing: a scheduling.k8s.io CompositePodGroup " +
		"per PodGang over one PodGroup per PodClique"
)

// GangSchedulingAvailable tells whether default-scheduler places PodGangs as gangs here.
func (b *Backend) GangSchedulingAvailable() (bool, string) {
	switch {
	case !b.api.PodGroups:
		return false, GangUnavailableMessage
	case !b.api.CompositePodGroups:
		return true, GangPerPodGroupMessage
	default:
		return true, GangCompositeMessage
	}
}

// PreparePod hands the pod to default-scheduler and, with the Workload API, joins it to the
// PodGroup of its PodClique in its PodGang (immutable, hence set at creation; the PodGroup
// may be created after the pod, which waits for it).
func (b *Backend) PreparePod(pod *corev1.Pod, pg backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameKube)
	if b.api.PodGroups && pg.Name != "" && pg.PodGroup != "" {
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(PodGroupName(pg.Name, pg.PodGroup))}
	}
}
