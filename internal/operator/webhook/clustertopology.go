package webhook

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/core/validation"
)

const kindClusterTopology = "ClusterTopology"

// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-clustertopology,mutating=false,failurePolicy=fail,sideEffects=None,groups=grove.io,resources=clustertopologies,verbs=create;update,versions=v1alpha1,name=clustertopology.validating.webhooks.grove.io,admissionReviewVersions=v1,serviceName=grove-operator,serviceNamespace=grove-system,patch=`{"matchConditions":[{"name":"spec-changed","expression":"request.operation == 'CREATE' || (!has(object.metadata.deletionTimestamp) && object.spec != oldObject.spec)"}]}`

// ClusterTopologyValidator admits ClusterTopologies: unique domains and keys, and scheduler
// references only to enabled topology-aware backends, each at most once.
type ClusterTopologyValidator struct {
	Backends *backend.Registry
}

var _ admission.Validator[*corev1alpha1.ClusterTopology] = &ClusterTopologyValidator{}

// ValidateCreate admits a new ClusterTopology.
func (v *ClusterTopologyValidator) ValidateCreate(_ context.Context, ct *corev1alpha1.ClusterTopology) (admission.Warnings, error) {
	return nil, admissionError(kindClusterTopology, ct.Name, validation.ValidateClusterTopology(ct, v.topologyAwareSchedulers()))
}

// ValidateUpdate admits a change to a ClusterTopology.
func (v *ClusterTopologyValidator) ValidateUpdate(_ context.Context, oldCT, newCT *corev1alpha1.ClusterTopology) (admission.Warnings, error) {
	// Metadata-only changes (the controller's finalizer) and deletions are never blocked.
	if newCT.DeletionTimestamp != nil || apiequality.Semantic.DeepEqual(oldCT.Spec, newCT.Spec) {
		return nil, nil
	}
	return nil, admissionError(kindClusterTopology, newCT.Name, validation.ValidateClusterTopologyUpdate(newCT, oldCT, v.topologyAwareSchedulers()))
}

// ValidateDelete admits every deletion.
func (v *ClusterTopologyValidator) ValidateDelete(context.Context, *corev1alpha1.ClusterTopology) (admission.Warnings, error) {
	return nil, nil
}

func (v *ClusterTopologyValidator) topologyAwareSchedulers() []string {
	var names []string
	for _, b := range v.Backends.TopologyAware() {
		names = append(names, string(b.Name()))
	}
	return names
}
