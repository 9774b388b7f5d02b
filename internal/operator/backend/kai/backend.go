// Package kai is the scheduler backend for NVIDIA KAI Scheduler (kai-scheduler).
//
// Each PodGang becomes a KAI PodGroup (scheduling.run.ai/v2alpha2) of the same name, owned by
// the PodGang. Its subGroups mirror the gang: one leaf subGroup per Grove PodGroup (the pods
// join it through the kai.scheduler/subgroup-name label), nested under one subGroup per
// topologyConstraintGroupConfig. Each ClusterTopology gets a KAI Topology (kai.scheduler/v1alpha1)
// whose levels are the ClusterTopology's node label keys.
//
// The queue: KAI schedules every PodGroup in a queue. Users label the PodCliqueSet with
// kai.scheduler/queue (cliques may repeat the label but not change it); the operator copies
// the label onto each PodGang, and SyncPodGang puts it into spec.queue. A profile may name a
// defaultQueue for PodCliqueSets without the label.
package kai

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Keys KAI reads from pods.
const (
	// AnnotationPodGroupName on a pod names its KAI PodGroup.
	AnnotationPodGroupName = "pod-group-name"
	// LabelSubGroupName on a pod names its (leaf) subGroup of the KAI PodGroup.
	LabelSubGroupName = "kai.scheduler/subgroup-name"
	// AnnotationSkipPodGrouper on a pod or PodGang keeps KAI's pod-grouper from building a
	// PodGroup of its own for it (which would regroup Grove's pods by their top owner).
	AnnotationSkipPodGrouper = "kai.scheduler/skip-podgrouper"
	// LabelQueue is KAI's queue label. Users put it (as a label or an annotation) on a
	// PodCliqueSet scheduled by kai-scheduler or on its clique templates; this backend puts the
	// resolved queue onto each PodGang (PodGangMetadata) and reads it into the KAI PodGroup's
	// spec.queue. Only this backend reads it.
	LabelQueue = "kai.scheduler/queue"
)

// GVKs and resources of the KAI objects Grove writes.
var (
	PodGroupGVK = schema.GroupVersionKind{Group: "scheduling.run.ai", Version: "v2alpha2", Kind: "PodGroup"}
	TopologyGVK = schema.GroupVersionKind{Group: "kai.scheduler", Version: "v1alpha1", Kind: "Topology"}
	TopologyGVR = schema.GroupVersionResource{Group: "kai.scheduler", Version: "v1alpha1", Resource: "topologies"}
)

// Config is the kai-scheduler profile's config.
type Config struct {
	// DefaultQueue is the KAI queue of PodCliqueSets without a kai.scheduler/queue label.
	// Without it such PodCliqueSets are rejected at admission.
	// +optional
	DefaultQueue string `json:"defaultQueue,omitempty"`
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.DefaultQueue == "" {
		return nil
	}
	if errs := validateQueueName(c.DefaultQueue, field.NewPath("defaultQueue")); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return nil
}

// Backend hands PodGangs to KAI Scheduler.
type Backend struct {
	client client.Client
	reader client.Reader
	log    logr.Logger
	cfg    Config
	// disableStaleEviction: the PodGroup API has spec.stalenessGracePeriod (see neverStale).
	disableStaleEviction bool
	// nestedSubGroups: the PodGroup API has minSubGroup, so a subGroup can require its
	// children, and a PodCliqueSet replica can be one KAI PodGroup (see replica.go).
	nestedSubGroups bool
}

var (
	_ backend.Backend                 = &Backend{}
	_ backend.TopologyAwareBackend    = &Backend{}
	_ backend.PodGangMetadataProvider = &Backend{}
)

// New is the backend's factory.
func New() backend.Backend { return &Backend{} }

// Name is kai-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKAI }

// Init decodes and validates the profile's config.
func (b *Backend) Init(_ context.Context, ic backend.InitContext) error {
	cfg, err := backend.LoadConfig(ic, string(b.Name()), (*Config).Validate)
	if err != nil {
		return err
	}
	b.cfg, b.client, b.reader, b.log = cfg, ic.Client, ic.Reader(), ic.Logger
	if ic.Discovery != nil {
		has, err := podGroupHasStalenessGracePeriod(ic.Discovery)
		if err != nil {
			return fmt.Errorf("kai-scheduler: %w", err)
		}
		b.disableStaleEviction = has
		if !has {
			b.log.Info("The KAI PodGroup API has no spec.stalenessGracePeriod (KAI before v0.17): KAI's stale-gang eviction (its globalDefaultStalenessGracePeriod) may evict a gang below its minMember before the PodCliqueSet's terminationDelay ends")
		}
		if b.nestedSubGroups, err = podGroupHasMinSubGroup(ic.Discovery); err != nil {
			return fmt.Errorf("kai-scheduler: %w", err)
		}
		if !b.nestedSubGroups {
			b.log.Info("The KAI PodGroup API has no spec.minSubGroup: PodCliqueSets whose required domain spans a replica's PodGangs are refused, since each PodGang must be a KAI PodGroup of its own")
		}
	}
	return nil
}

// PreparePod points the pod at kai-scheduler, its PodGang's KAI PodGroup and its subGroup.
func (b *Backend) PreparePod(pod *corev1.Pod, pg backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameKAI)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationPodGroupName] = pg.Name
	if pg.SharedGroup != "" && b.nestedSubGroups {
		pod.Annotations[AnnotationPodGroupName] = pg.SharedGroup // the replica's KAI PodGroup
	}
	pod.Annotations[AnnotationSkipPodGrouper] = "true"
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelSubGroupName] = SubGroupName(pg.PodGroup)
}

// SubGroupName is the KAI subGroup of a Grove PodGroup: its name, shortened to fit the
// pod label that names it.
func SubGroupName(podGroup string) string { return common.ShortenLabelValue(podGroup) }

// ValidatePodCliqueSet rejects PodCliqueSets without one KAI queue, and, where the KAI
// PodGroup API has no minSubGroup, a PodCliqueSet-level required domain that must hold across
// PodGangs: there each PodGang is its own KAI PodGroup, and KAI packs a PodGroup on its own, so
// scaled PodGangs could land outside the domain the base PodGang took.
func (b *Backend) ValidatePodCliqueSet(_ context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	_, errs := ResolveQueue(pcs, b.cfg.DefaultQueue)
	if p, group := backend.ReplicaWideRequired(pcs); p != nil && !b.nestedSubGroups {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(ReplicaWideRequiredMessage, group)))
	}
	warnings, shapeErrs := backend.RefuseGroveSchedulerShapes(pcs, "kai-scheduler")
	return warnings, append(errs, shapeErrs...)
}

// ReplicaWideRequiredMessage is why a PodCliqueSet-level required domain with scaled PodGangs
// is rejected; %s is the scaling group.
const ReplicaWideRequiredMessage = "kai-scheduler cannot keep a replica's PodGangs in one domain: scaling group %q has PodGangs " +
	"beyond its minAvailable, and this cluster's KAI PodGroup API has no minSubGroup, so each is a separate KAI PodGroup packed on " +
	"its own and could land outside the domain the base PodGang took; upgrade KAI to a release whose PodGroup has spec.minSubGroup, " +
	"set the required domain on the scaling group and cliques instead, make it preferred, or use grove-scheduler"

// PodGangMetadata puts the resolved queue on each PodGang (SyncPodGang reads it from there)
// and tells KAI's pod-grouper to leave the PodGang alone: Grove writes its KAI PodGroup.
func (b *Backend) PodGangMetadata(pcs *corev1alpha1.PodCliqueSet) (labels, annotations map[string]string) {
	annotations = map[string]string{AnnotationSkipPodGrouper: "true"}
	if b.replicaPodGroup(pcs) {
		annotations[AnnotationReplicaPodGroup] = "true"
	}
	if queue, errs := ResolveQueue(pcs, b.cfg.DefaultQueue); len(errs) == 0 {
		labels = map[string]string{LabelQueue: queue}
	}
	return labels, annotations
}
