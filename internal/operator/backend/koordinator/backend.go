// Package koordinator is the scheduler backend for Koordinator (koord-scheduler).
//
// Each PodGroup of a PodGang becomes one Koordinator PodGroup (scheduling.sigs.k8s.io/v1alpha1)
// named PodGroupName(podgang, podgroup), owned by the PodGang; the PodGroups
// of one PodGang are linked into one GangGroup by the gang.scheduling.koordinator.sh/groups
// annotation, so Koordinator binds all of them or none. Topology constraints become gather
// rules of the gang.scheduling.koordinator.sh/network-topology-spec annotation on the layers
// the profile configures (host, rack, block). What Koordinator cannot express is rejected at
// admission: MNNVL, scaling-group topology constraints (one GangGroup cannot pack a subset of
// its PodGroups) and keys without a configured layer.
//
// Koordinator keeps one ClusterNetworkTopology that its operator manages: Grove never writes
// it and only compares a referenced one with the ClusterTopology.
package koordinator

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Keys Koordinator reads.
const (
	// LabelPodGroup on a pod names its Koordinator PodGroup.
	LabelPodGroup = "pod-group.scheduling.sigs.k8s.io"
	// LabelQoSClass on a pod is its Koordinator QoS class.
	LabelQoSClass = "koordinator.sh/qosClass"
	// AnnotationGangGroups on a PodGroup lists the "namespace/name" of every PodGroup of its GangGroup.
	AnnotationGangGroups = "gang.scheduling.koordinator.sh/groups"
	// AnnotationGangMode is Strict or NonStrict.
	AnnotationGangMode = "gang.scheduling.koordinator.sh/mode"
	// AnnotationGangMatchPolicy decides which members count towards minMember.
	AnnotationGangMatchPolicy = "gang.scheduling.koordinator.sh/match-policy"
	// AnnotationGangTotalNumber is the number of pods of one gang (PodGroup).
	AnnotationGangTotalNumber = "gang.scheduling.koordinator.sh/total-number"
	// AnnotationNetworkTopologySpec holds the gang's gather rules as JSON.
	AnnotationNetworkTopologySpec = "gang.scheduling.koordinator.sh/network-topology-spec"
)

// GVKs and resources of the Koordinator objects Grove reads and writes.
var (
	PodGroupGVK               = schema.GroupVersionKind{Group: "scheduling.sigs.k8s.io", Version: "v1alpha1", Kind: "PodGroup"}
	ClusterNetworkTopologyGVK = schema.GroupVersionKind{Group: "scheduling.koordinator.sh", Version: "v1alpha1", Kind: "ClusterNetworkTopology"}
	ClusterNetworkTopologyGVR = schema.GroupVersionResource{Group: "scheduling.koordinator.sh", Version: "v1alpha1", Resource: "clusternetworktopologies"}
)

// Backend hands PodGangs to Koordinator.
type Backend struct {
	client client.Client
	reader client.Reader
	log    logr.Logger
	cfg    Config
}

var _ backend.ReferenceOnlyTopologyBackend = &Backend{}

// New is the backend's factory.
func New() backend.Backend { return &Backend{} }

// Name is koord-scheduler.
func (b *Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKoordinator }

// Init decodes, defaults and validates the profile's config.
func (b *Backend) Init(_ context.Context, ic backend.InitContext) error {
	cfg, err := backend.LoadConfig(ic, string(b.Name()), (*Config).defaultAndValidate)
	if err != nil {
		return err
	}
	b.cfg, b.client, b.reader, b.log = cfg, ic.Client, ic.Reader(), ic.Logger
	return nil
}

// PreparePod points the pod at koord-scheduler and its Koordinator PodGroup.
func (b *Backend) PreparePod(pod *corev1.Pod, pg backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameKoordinator)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[LabelPodGroup] = PodGroupName(pg.Name, pg.PodGroup)
	if b.cfg.QoSClass != "" {
		pod.Labels[LabelQoSClass] = b.cfg.QoSClass
	}
}

// ValidatePodCliqueSet rejects what Koordinator cannot honour.
func (b *Backend) ValidatePodCliqueSet(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	errs := rejectMNNVL(pcs)
	tmpl := field.NewPath("spec", "template")
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.TopologyConstraint != nil {
			errs = append(errs, field.Forbidden(tmpl.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"),
				"koord-scheduler cannot pack a scaling group's replicas separately: a PodGang becomes one Koordinator GangGroup "+
					"whose topology applies to all of its PodGroups; set the constraint on the PodCliqueSet or its cliques, or use another scheduler"))
		}
	}
	if p, group := backend.ReplicaWideRequired(pcs); p != nil {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf(ReplicaWideRequiredMessage, group)))
	}
	warnings, shapeErrs := backend.RefuseGroveSchedulerShapes(pcs, "koord-scheduler")
	errs = append(errs, shapeErrs...)
	return warnings, append(errs, b.validateTopologyKeys(ctx, pcs)...)
}

// ReplicaWideRequiredMessage is why a PodCliqueSet-level required domain with scaled PodGangs
// is rejected; %s is the scaling group.
const ReplicaWideRequiredMessage = "koord-scheduler cannot keep a replica's PodGangs in one domain: scaling group %q has PodGangs " +
	"beyond its minAvailable, each a separate GangGroup whose gather rules apply to it alone, so they could land outside the " +
	"domain the base PodGang took; set the required domain on the cliques instead, make it preferred, or use grove-scheduler"

func rejectMNNVL(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	const why = "koord-scheduler cannot honour Multi-Node NVLink: it needs NVIDIA ComputeDomain resource claims, which Koordinator's device model does not schedule; remove the annotation or use kai-scheduler"
	var errs field.ErrorList
	if pcs.Annotations[common.AnnotationAutoMNNVL] == common.AnnotationAutoMNNVLEnabled {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(common.AnnotationAutoMNNVL), why))
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Annotations[common.AnnotationAutoMNNVL] == common.AnnotationAutoMNNVLEnabled {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "cliques").Index(i).Child("annotations").Key(common.AnnotationAutoMNNVL), why))
		}
	}
	return errs
}

// validateTopologyKeys checks that every domain of the PodCliqueSet's and its cliques'
// constraints is a node label key with a configured Koordinator layer. Unknown domains and a
// missing topologyName are the generic validation's to report.
func (b *Backend) validateTopologyKeys(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	type constrained struct {
		path *field.Path
		tc   *corev1alpha1.TopologyConstraint
	}
	tmpl := field.NewPath("spec", "template")
	var all []constrained
	if tc := pcs.Spec.Template.TopologyConstraint; tc != nil && tc.HasDomain() {
		all = append(all, constrained{tmpl.Child("topologyConstraint"), tc})
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.TopologyConstraint != nil && c.TopologyConstraint.HasDomain() {
			all = append(all, constrained{tmpl.Child("cliques").Index(i).Child("topologyConstraint"), c.TopologyConstraint})
		}
	}
	topologyName := ""
	if pcs.Spec.Template.TopologyConstraint != nil {
		topologyName = pcs.Spec.Template.TopologyConstraint.TopologyName
	}
	if len(all) == 0 || topologyName == "" {
		return nil
	}
	namePath := tmpl.Child("topologyConstraint", "topologyName")
	ct := &corev1alpha1.ClusterTopology{}
	if err := b.reader.Get(ctx, client.ObjectKey{Name: topologyName}, ct); err != nil {
		if apierrors.IsNotFound(err) {
			return field.ErrorList{field.NotFound(namePath, topologyName)}
		}
		return field.ErrorList{field.InternalError(namePath, fmt.Errorf("reading ClusterTopology %s: %w", topologyName, err))}
	}
	var errs field.ErrorList
	check := func(p *field.Path, domain corev1alpha1.TopologyDomain) {
		i := ct.Spec.LevelIndex(domain)
		if i < 0 {
			return
		}
		key := ct.Spec.Levels[i].Key
		if _, ok := b.cfg.TopologyLayers.layerFor(key); !ok {
			errs = append(errs, field.Invalid(p, domain, fmt.Sprintf(
				"domain %q is node label %q in ClusterTopology %q, which has no Koordinator layer in the koord-scheduler profile (configured: %s); "+
					"koord-scheduler can only gather pods on its configured host, rack and block layers",
				domain, key, topologyName, b.cfg.TopologyLayers.describe())))
		}
	}
	for _, c := range all {
		if c.tc.Pack != nil && c.tc.Pack.Required != "" {
			check(c.path.Child("pack", "required"), c.tc.Pack.Required)
		} else if c.tc.PackDomain != "" {
			check(c.path.Child("packDomain"), c.tc.PackDomain)
		}
		if d := c.tc.PreferredDomain(); d != "" {
			check(c.path.Child("pack", "preferred"), d)
		}
	}
	return errs
}
