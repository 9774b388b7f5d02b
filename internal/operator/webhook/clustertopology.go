package webhook

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/packing"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/core/validation"
)

const kindClusterTopology = "ClusterTopology"

// A deletion only ever gets warnings, so its webhook ignores failures: deleting a
// ClusterTopology never waits for grove-operator.
// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-clustertopology,mutating=false,failurePolicy=ignore,sideEffects=None,groups=grove.io,resources=clustertopologies,verbs=delete,versions=v1alpha1,name=clustertopology-delete.validating.webhooks.grove.io,admissionReviewVersions=v1,serviceName=grove-operator,serviceNamespace=grove-system,timeoutSeconds=5

// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-clustertopology,mutating=false,failurePolicy=fail,sideEffects=None,groups=grove.io,resources=clustertopologies,verbs=create;update,versions=v1alpha1,name=clustertopology.validating.webhooks.grove.io,admissionReviewVersions=v1,serviceName=grove-operator,serviceNamespace=grove-system,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation == 'CREATE' || (!has(object.metadata.deletionTimestamp) && object.spec != oldObject.spec)"}]}`

// ClusterTopologyValidator admits ClusterTopologies: unique domains and keys, and scheduler
// references only to enabled topology-aware backends, each at most once.
type ClusterTopologyValidator struct {
	Backends *backend.Registry
	// Reader lists the PodCliqueSets a change affects (warnings only); nil skips the warnings.
	Reader client.Reader
}

var _ admission.Validator[*corev1alpha1.ClusterTopology] = &ClusterTopologyValidator{}

// ValidateCreate admits a new ClusterTopology.
func (v *ClusterTopologyValidator) ValidateCreate(_ context.Context, ct *corev1alpha1.ClusterTopology) (admission.Warnings, error) {
	return nil, admissionError(kindClusterTopology, ct.Name, validation.ValidateClusterTopology(ct, v.topologyAwareSchedulers()))
}

// ValidateUpdate admits a change to a ClusterTopology. Removing a level that PodCliqueSets
// require is allowed (their constraints degrade, and their TopologyLevelsUnavailable condition
// says so), but the admission warning names them so whoever removes it knows.
func (v *ClusterTopologyValidator) ValidateUpdate(ctx context.Context, oldCT, newCT *corev1alpha1.ClusterTopology) (admission.Warnings, error) {
	// Metadata-only changes (the controller's finalizer) and deletions are never blocked.
	if newCT.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldCT.Spec, newCT.Spec) {
		return nil, nil
	}
	errs := validation.ValidateClusterTopologyUpdate(newCT, oldCT, v.topologyAwareSchedulers())
	if len(errs) > 0 {
		return nil, admissionError(kindClusterTopology, newCT.Name, errs)
	}
	return v.affected(ctx, oldCT, newCT), nil
}

// affected warns about the PodCliqueSets whose constraints use a level the update removes (a
// deletion removes them all).
func (v *ClusterTopologyValidator) affected(ctx context.Context, oldCT, newCT *corev1alpha1.ClusterTopology) admission.Warnings {
	if v.Reader == nil {
		return nil
	}
	list := &corev1alpha1.PodCliqueSetList{}
	if err := v.Reader.List(ctx, list); err != nil {
		return admission.Warnings{fmt.Sprintf("could not check which PodCliqueSets use ClusterTopology %s: %v", newCT.Name, err)}
	}
	var warnings admission.Warnings
	for i := range list.Items {
		t := &list.Items[i].Spec.Template
		if !packing.HasConstraints(t) || packing.NameOf(t) != newCT.Name {
			continue
		}
		before := packing.Translate(t, oldCT.Spec.Levels).MissingDomains
		var lost []string
		for _, d := range packing.Translate(t, newCT.Spec.Levels).MissingDomains {
			if !slices.Contains(before, d) {
				lost = append(lost, string(d))
			}
		}
		switch {
		case len(lost) == 0:
		case len(newCT.Spec.Levels) == 0:
			warnings = append(warnings, fmt.Sprintf("PodCliqueSet %s/%s packs by %s of ClusterTopology %s, which this deletion removes: those constraints will no longer be enforced",
				list.Items[i].Namespace, list.Items[i].Name, strings.Join(lost, ", "), newCT.Name))
		default:
			warnings = append(warnings, fmt.Sprintf("PodCliqueSet %s/%s packs by %s, which this change removes: those constraints will no longer be enforced",
				list.Items[i].Namespace, list.Items[i].Name, strings.Join(lost, ", ")))
		}
	}
	return warnings
}

// ValidateDelete admits every deletion, with a warning naming the PodCliqueSets whose
// constraints resolve in the ClusterTopology: they degrade (their TopologyLevelsUnavailable
// condition and an event say so) and are no longer enforced.
func (v *ClusterTopologyValidator) ValidateDelete(ctx context.Context, ct *corev1alpha1.ClusterTopology) (admission.Warnings, error) {
	if ct.DeletionTimestamp != nil {
		return nil, nil // already being deleted: it was said then
	}
	return v.affected(ctx, ct, &corev1alpha1.ClusterTopology{ObjectMeta: ct.ObjectMeta}), nil
}

func (v *ClusterTopologyValidator) topologyAwareSchedulers() []string {
	var names []string
	for _, b := range v.Backends.TopologyAware() {
		names = append(names, string(b.Name()))
	}
	return names
}

const kindClusterTopologyBinding = "ClusterTopologyBinding"

// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-clustertopologybinding,mutating=false,failurePolicy=fail,sideEffects=None,groups=grove.io,resources=clustertopologybindings,verbs=create;update,versions=v1alpha1,name=clustertopologybinding.validating.webhooks.grove.io,admissionReviewVersions=v1,serviceName=grove-operator,serviceNamespace=grove-system,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation == 'CREATE' || (!has(object.metadata.deletionTimestamp) && object.spec != oldObject.spec)"}]}`

// ClusterTopologyBindingValidator admits upstream ClusterTopologyBindings as the ClusterTopology
// each is translated into is admitted. Bindings of schedulers that are not enabled
// topology-aware backends are ignored, as upstream does: admitted with a warning.
type ClusterTopologyBindingValidator struct {
	Backends *backend.Registry
}

var _ admission.Validator[*corev1alpha1.ClusterTopologyBinding] = &ClusterTopologyBindingValidator{}

// ValidateCreate admits a new binding.
func (v *ClusterTopologyBindingValidator) ValidateCreate(_ context.Context, b *corev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	warnings, errs := validation.ValidateClusterTopologyBinding(b, (&ClusterTopologyValidator{Backends: v.Backends}).topologyAwareSchedulers())
	return warnings, admissionError(kindClusterTopologyBinding, b.Name, errs)
}

// ValidateUpdate admits a change to a binding; metadata-only changes and deletions pass.
func (v *ClusterTopologyBindingValidator) ValidateUpdate(ctx context.Context, oldB, newB *corev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	if newB.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldB.Spec, newB.Spec) {
		return nil, nil
	}
	return v.ValidateCreate(ctx, newB)
}

// ValidateDelete admits every deletion.
func (v *ClusterTopologyBindingValidator) ValidateDelete(context.Context, *corev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, nil
}
