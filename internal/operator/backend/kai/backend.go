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
}

var (
	_ backend.Backend              = &Backend{}
	_ backend.TopologyAwareBackend = &Backend{}
)

// New is the backend's factory.
func New() backend.Backend { return &Backend{} }

// Name is kai-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKAI }

// Init decodes and validates the profile's config.
func (b *Backend) Init(_ context.Context, ic backend.InitContext) error {
	var cfg Config
	if err := backend.DecodeConfig(ic.Config, &cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid kai-scheduler config: %w", err)
	}
	b.cfg, b.client, b.reader, b.log = cfg, ic.Client, ic.Reader(), ic.Logger
	return nil
}

// PreparePod points the pod at kai-scheduler, its PodGang's KAI PodGroup and its subGroup.
func (b *Backend) PreparePod(pod *corev1.Pod, pg backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameKAI)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationPodGroupName] = pg.Name
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelSubGroupName] = SubGroupName(pg.PodGroup)
}

// SubGroupName is the KAI subGroup of a Grove PodGroup: its name, shortened to fit the
// pod label that names it.
func SubGroupName(podGroup string) string { return common.ShortenLabelValue(podGroup) }

// ValidatePodCliqueSet rejects PodCliqueSets without one KAI queue.
func (b *Backend) ValidatePodCliqueSet(_ context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	return nil, validateQueue(pcs, b.cfg.DefaultQueue)
}

// validateQueue: the PodCliqueSet's kai.scheduler/queue label (or the default queue) is the
// queue of all its PodGangs; a clique that sets the label must agree with it.
func validateQueue(pcs *corev1alpha1.PodCliqueSet, defaultQueue string) field.ErrorList {
	var errs field.ErrorList
	pcsPath := field.NewPath("metadata", "labels").Key(common.LabelKAIQueue)
	queue, labelled := pcs.Labels[common.LabelKAIQueue]
	switch {
	case labelled:
		errs = append(errs, validateQueueName(queue, pcsPath)...)
	case defaultQueue != "":
		queue = defaultQueue
	default:
		errs = append(errs, field.Required(pcsPath, fmt.Sprintf(
			"kai-scheduler schedules every PodGang in a KAI queue: label the PodCliqueSet with %s=<queue> (or set defaultQueue in the kai-scheduler profile)",
			common.LabelKAIQueue)))
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		v, ok := c.Labels[common.LabelKAIQueue]
		if !ok || queue == "" || v == queue {
			continue
		}
		errs = append(errs, field.Invalid(field.NewPath("spec", "template", "cliques").Index(i).Child("labels").Key(common.LabelKAIQueue), v,
			fmt.Sprintf("must equal the PodCliqueSet's queue %q: kai-scheduler schedules all pods of a PodGang in one queue", queue)))
	}
	return errs
}

func validateQueueName(q string, p *field.Path) field.ErrorList {
	if q == "" {
		return field.ErrorList{field.Invalid(p, q, "a KAI queue name must not be empty")}
	}
	return nil
}
