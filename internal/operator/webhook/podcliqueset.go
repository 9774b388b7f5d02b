package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/core/validation"
)

const kindPodCliqueSet = "PodCliqueSet"

// +kubebuilder:webhook:path=/mutate-grove-io-v1alpha1-podcliqueset,mutating=true,failurePolicy=fail,sideEffects=None,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=pcs.defaulting.webhooks.grove.io,admissionReviewVersions=v1,serviceName=grove-operator,serviceNamespace=grove-system,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation == 'CREATE' || (!has(object.metadata.deletionTimestamp) && object.spec != oldObject.spec)"}]}`

// PodCliqueSetDefaulter applies corev1alpha1.SetDefaultsPodCliqueSet.
type PodCliqueSetDefaulter struct{}

// defaultingHandler serves PodCliqueSetDefaulter. Unlike controller-runtime's generic handler
// it lets an object it cannot decode (e.g. terminationDelay: forever) through unchanged: the
// CRD schema runs next and names the field, where a decode error here would not.
type defaultingHandler struct{ defaulter PodCliqueSetDefaulter }

func (h defaultingHandler) Handle(ctx context.Context, req admission.Request) admission.Response {
	pcs := &corev1alpha1.PodCliqueSet{}
	if err := json.Unmarshal(req.Object.Raw, pcs); err != nil {
		return admission.Allowed("not decodable: left to schema validation")
	}
	if err := h.defaulter.Default(ctx, pcs); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	out, err := json.Marshal(pcs)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}

var _ admission.Defaulter[*corev1alpha1.PodCliqueSet] = PodCliqueSetDefaulter{}

// Default fills what the user left out.
func (PodCliqueSetDefaulter) Default(_ context.Context, pcs *corev1alpha1.PodCliqueSet) error {
	corev1alpha1.SetDefaultsPodCliqueSet(pcs)
	return nil
}

// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-podcliqueset,mutating=false,failurePolicy=fail,sideEffects=None,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=pcs.validating.webhooks.grove.io,admissionReviewVersions=v1,serviceName=grove-operator,serviceNamespace=grove-system,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation == 'CREATE' || (!has(object.metadata.deletionTimestamp) && object.spec != oldObject.spec)"}]}`

// PodCliqueSetValidator admits PodCliqueSets: the object's own rules, topology constraints
// against their ClusterTopology (on create; constraints are immutable afterwards), and the
// scheduler backend all cliques resolve to.
type PodCliqueSetValidator struct {
	Reader                  client.Reader
	Backends                *backend.Registry
	TopologyAwareScheduling bool
	// Client dry-runs the first pod of each clique (dryrun.go) and asks SubjectAccessReviews
	// (crossnamespace.go) as grove-operator; nil skips those checks.
	Client client.Client
}

var _ admission.Validator[*corev1alpha1.PodCliqueSet] = &PodCliqueSetValidator{}

// ValidateCreate admits a new PodCliqueSet.
func (v *PodCliqueSetValidator) ValidateCreate(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	warnings, errs := validation.ValidatePodCliqueSet(pcs)
	errs = append(errs, validatePodTemplates(pcs)...)
	errs = append(errs, validateAnnotationBudget(pcs)...)
	tw, terrs := validation.ValidateTopologyConstraints(pcs, v.TopologyAwareScheduling, v.lookupTopology(ctx))
	warnings, errs = append(warnings, tw...), append(errs, terrs...)
	bw, berrs := v.validateBackend(ctx, pcs, errs)
	warnings, errs = append(warnings, bw...), append(errs, berrs...)
	errs = append(errs, v.authorizeCrossNamespace(ctx, pcs)...)
	if len(errs) == 0 {
		errs = append(errs, v.conflictingChildren(ctx, pcs)...)
	}
	if len(errs) == 0 {
		dw, derrs := v.dryRunPods(ctx, pcs, nil)
		warnings, errs = append(warnings, dw...), append(errs, derrs...)
	}
	return warnings, admissionError(kindPodCliqueSet, pcs.Name, errs)
}

// ValidateUpdate admits a change to a PodCliqueSet.
func (v *PodCliqueSetValidator) ValidateUpdate(ctx context.Context, oldPCS, newPCS *corev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	// Finalizer, label and annotation changes, and anything during deletion, must never be
	// blocked: an object admitted under older rules would otherwise be stuck.
	if newPCS.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldPCS.Spec, newPCS.Spec) {
		return nil, nil
	}
	warnings, errs := validation.ValidatePodCliqueSetUpdate(newPCS, oldPCS)
	errs = append(errs, validatePodTemplates(newPCS)...)
	errs = append(errs, validateAnnotationBudget(newPCS)...)
	if len(errs) == 0 && validation.TopologyConstraintsChanged(newPCS, oldPCS) {
		// A repair upstream allows (a topologyName added to a legacy constraint, packDomain
		// moved to pack.required): the repaired constraints must hold against the topology.
		tw, terrs := validation.ValidateTopologyConstraints(newPCS, v.TopologyAwareScheduling, v.lookupTopology(ctx))
		warnings, errs = append(warnings, tw...), append(errs, terrs...)
	}
	bw, berrs := v.validateBackend(ctx, newPCS, errs)
	warnings, errs = append(warnings, bw...), append(errs, berrs...)
	if len(errs) == 0 {
		// An update whose new pods the apiserver refuses would have the rolling update replace
		// healthy members with pods that are never created.
		dw, derrs := v.dryRunPods(ctx, newPCS, oldPCS)
		warnings, errs = append(warnings, dw...), append(errs, derrs...)
	}
	return warnings, admissionError(kindPodCliqueSet, newPCS.Name, errs)
}

// ValidateDelete admits every deletion.
func (v *PodCliqueSetValidator) ValidateDelete(context.Context, *corev1alpha1.PodCliqueSet) (admission.Warnings, error) {
	return nil, nil
}

// validateBackend resolves the one scheduler backend of the PodCliqueSet and lets it reject
// what it cannot honour. Backends see only objects that passed every other check.
func (v *PodCliqueSetValidator) validateBackend(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, prior field.ErrorList) ([]string, field.ErrorList) {
	b, errs := v.Backends.ForPodCliqueSet(pcs)
	if len(errs) > 0 || len(prior) > 0 || b == nil {
		return nil, errs
	}
	return b.ValidatePodCliqueSet(ctx, pcs)
}

func (v *PodCliqueSetValidator) lookupTopology(ctx context.Context) validation.TopologyLookup {
	return func(name string) (*corev1alpha1.ClusterTopology, error) {
		ct := &corev1alpha1.ClusterTopology{}
		err := v.Reader.Get(ctx, client.ObjectKey{Name: name}, ct)
		if err == nil {
			return ct, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
		// An upstream ClusterTopologyBinding applied together with the PodCliqueSet is
		// admitted before grove-operator has translated it into its ClusterTopology.
		b := &corev1alpha1.ClusterTopologyBinding{}
		if err := v.Reader.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				return nil, nil
			}
			return nil, err
		}
		return &corev1alpha1.ClusterTopology{ObjectMeta: b.ObjectMeta, Spec: b.ClusterTopologySpec()}, nil
	}
}

// validateAnnotationBudget refuses PodCliqueSet annotations that would not fit on its
// PodGangs once grove-operator adds its own keys (apicommon.PodGangAnnotationReserve): the
// PodGang create failed with "annotations: Too long" and the gang's pods stayed gated.
func validateAnnotationBudget(pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	mirrored, dropped := apicommon.MirroredAnnotations(pcs.Annotations)
	if len(dropped) == 0 {
		return nil
	}
	size := apicommon.AnnotationsSize(mirrored)
	for _, k := range dropped {
		size += len(k) + len(pcs.Annotations[k])
	}
	e := field.TooLong(field.NewPath("metadata", "annotations"), "", apicommon.MirroredAnnotationBudget)
	e.Detail = fmt.Sprintf("the annotations outside grove.io/ are copied onto every PodGang together with grove-operator's own keys; "+
		"they take %d bytes and may take at most %d (the apiserver's %d less %d kept for grove-operator and the scheduler backend)",
		size, apicommon.MirroredAnnotationBudget, apicommon.TotalAnnotationSizeLimit, apicommon.PodGangAnnotationReserve)
	return field.ErrorList{e}
}
