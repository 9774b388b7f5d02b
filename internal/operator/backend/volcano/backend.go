// Package volcano is the scheduler backend for the Volcano scheduler (schedulerName volcano).
//
// Each PodGang becomes a Volcano PodGroup (scheduling.volcano.sh/v1beta1) of the same name,
// owned by the PodGang. Its minMember is the sum of the gang's PodGroups' minReplicas and its
// minTaskMember holds each PodGroup's minReplicas under the PodGroup's name, which is also the
// Volcano task of the PodGroup's pods: PreparePod writes it into their volcano.sh/task-spec
// annotation, next to scheduling.k8s.io/group-name, which names the Volcano PodGroup.
//
// The queue: Volcano schedules every PodGroup in a queue. Users label or annotate the
// PodCliqueSet (or its cliques) with scheduling.grove.io/volcano-queue, the key upstream Grove
// and NVIDIA Dynamo write; without it the profile's defaultQueue (Volcano's own "default"
// queue unless configured) applies.
//
// Topology: Volcano packs a PodGroup into one HyperNode with spec.networkTopology. A required
// domain becomes mode hard with the HyperNode tier the profile maps its node label key to
// (topologyTiers); a preferred domain alone becomes mode soft. Volcano has one such constraint
// per PodGroup, so what it cannot express is rejected at admission (see ValidatePodCliqueSet).
// HyperNodes are Volcano's (built by its network-topology discovery or by hand): Grove never
// writes them.
package volcano

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Keys Volcano reads from pods, and the queue key Grove reads.
const (
	// AnnotationGroupName on a pod names its Volcano PodGroup (Volcano's
	// KubeGroupNameAnnotationKey; the scheduler reads only this one).
	AnnotationGroupName = "scheduling.k8s.io/group-name"
	// AnnotationVolcanoGroupName is Volcano's own spelling of the same key, which upstream
	// Grove also writes.
	AnnotationVolcanoGroupName = "scheduling.volcano.sh/group-name"
	// AnnotationTaskSpec on a pod names its Volcano task: the key of spec.minTaskMember that
	// counts it.
	AnnotationTaskSpec = "volcano.sh/task-spec"
	// KeyQueue names the Volcano queue, as a label or an annotation of a PodCliqueSet or its
	// clique templates (upstream Grove's and NVIDIA Dynamo's key). The operator puts the
	// resolved queue on each PodGang as an annotation (PodGangMetadata).
	KeyQueue = "scheduling.grove.io/volcano-queue"
	// DefaultQueue is Volcano's own default queue, which Volcano creates at installation.
	DefaultQueue = "default"
)

// GVKs of the Volcano objects Grove reads and writes.
var (
	PodGroupGVK = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}
	QueueGVK    = schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "Queue"}
)

// Backend hands PodGangs to Volcano.
type Backend struct {
	client client.Client
	reader client.Reader
	log    logr.Logger
	cfg    Config
}

var (
	_ backend.Backend                 = &Backend{}
	_ backend.PodGangMetadataProvider = &Backend{}
)

// New is the backend's factory.
func New() backend.Backend { return &Backend{} }

// Name is volcano.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameVolcano }

// Init decodes, defaults and validates the profile's config.
func (b *Backend) Init(_ context.Context, ic backend.InitContext) error {
	cfg, err := backend.LoadConfig(ic, string(b.Name()), (*Config).defaultAndValidate)
	if err != nil {
		return err
	}
	b.cfg, b.client, b.reader, b.log = cfg, ic.Client, ic.Reader(), ic.Logger
	if ic.Discovery != nil {
		served, err := podGroupServed(ic.Discovery)
		if err != nil {
			return fmt.Errorf("volcano: %w", err)
		}
		if !served {
			b.log.Info("The cluster serves no Volcano PodGroup API (" + PodGroupGVK.GroupVersion().String() + "): PodGangs on volcano fail to sync, and report it, until Volcano is installed")
		}
	}
	return nil
}

// podGroupServed tells whether the cluster serves Volcano's PodGroups.
func podGroupServed(d discovery.DiscoveryInterface) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(PodGroupGVK.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", PodGroupGVK.GroupVersion(), err)
	}
	for _, r := range list.APIResources {
		if r.Kind == PodGroupGVK.Kind {
			return true, nil
		}
	}
	return false, nil
}

// PreparePod points the pod at Volcano, its PodGang's Volcano PodGroup and its task.
func (b *Backend) PreparePod(pod *corev1.Pod, pg backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameVolcano)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationGroupName] = pg.Name
	pod.Annotations[AnnotationVolcanoGroupName] = pg.Name
	pod.Annotations[AnnotationTaskSpec] = pg.PodGroup
}

// ValidatePodCliqueSet rejects PodCliqueSets without one Volcano queue and topology
// constraints Volcano cannot honour; it warns when the queue is missing or closed.
func (b *Backend) ValidatePodCliqueSet(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	queue, errs := ResolveQueue(pcs, b.cfg.DefaultQueue)
	var warnings []string
	if len(errs) == 0 {
		warnings = b.checkQueue(ctx, queue)
	}
	if p, group := backend.ReplicaWideRequired(pcs); p != nil {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(ReplicaWideRequiredMessage, group)))
	}
	shapeWarnings, shapeErrs := backend.RefuseGroveSchedulerShapes(pcs, "volcano")
	errs = append(errs, shapeErrs...)
	return append(warnings, shapeWarnings...), append(errs, b.validateTopology(ctx, pcs)...)
}

// ReplicaWideRequiredMessage is why a PodCliqueSet-level required domain with scaled PodGangs
// is rejected; %s is the scaling group.
const ReplicaWideRequiredMessage = "volcano cannot keep a replica's PodGangs in one domain: scaling group %q has PodGangs " +
	"beyond its minAvailable, each a separate Volcano PodGroup whose networkTopology applies to it alone, so they could land " +
	"outside the HyperNode the base PodGang took; make the domain preferred, or use grove-scheduler"

// PodGangMetadata puts the resolved queue on each PodGang as an annotation (a queue name may be
// longer than a label value); SyncPodGang reads it from there.
func (b *Backend) PodGangMetadata(pcs *corev1alpha1.PodCliqueSet) (labels, annotations map[string]string) {
	if queue, errs := ResolveQueue(pcs, b.cfg.DefaultQueue); len(errs) == 0 {
		annotations = map[string]string{KeyQueue: queue}
	}
	return nil, annotations
}
