// Package webhook holds grove-operator's admission webhooks: PodCliqueSet defaulting and
// validation, and ClusterTopology validation. The checks themselves live in
// pkg/api/core/validation; the handlers here add what needs the cluster or the operator
// configuration (ClusterTopology lookups, scheduler backends) and turn field errors into 422s.
//
// The kubebuilder:webhook markers next to each handler generate config/webhook/manifests.yaml
// (make generate); their paths must equal the Path* constants the handlers are served on.
//
// +kubebuilder:webhookconfiguration:mutating=true,name=grove-defaulting-webhook
// +kubebuilder:webhookconfiguration:mutating=false,name=grove-validating-webhook
package webhook

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Paths the webhooks are served on.
const (
	PathDefaultPodCliqueSet     = "/mutate-grove-io-v1alpha1-podcliqueset"
	PathValidatePodCliqueSet    = "/validate-grove-io-v1alpha1-podcliqueset"
	PathValidateClusterTopology = "/validate-grove-io-v1alpha1-clustertopology"
	// PathValidateClusterTopologyBinding serves upstream's ClusterTopologyBinding.
	PathValidateClusterTopologyBinding = "/validate-grove-io-v1alpha1-clustertopologybinding"
)

// Options configures the webhooks.
type Options struct {
	// TopologyAwareScheduling is topologyAwareScheduling.enabled of the operator configuration.
	TopologyAwareScheduling bool
	// Backends are the enabled scheduler backends.
	Backends *backend.Registry
	// Reader reads ClusterTopologies; it should read through to the apiserver so a topology
	// created just before a PodCliqueSet is seen.
	Reader client.Reader
	// Client is grove-operator's client (the manager's): it dry-runs pods and creates
	// SubjectAccessReviews. Nil skips those checks.
	Client client.Client
}

// Register adds the webhooks to the manager's webhook server.
func Register(mgr manager.Manager, opts Options) error {
	if opts.Backends == nil || opts.Reader == nil {
		return fmt.Errorf("webhooks need the scheduler backends and a reader")
	}
	mgr.GetWebhookServer().Register(PathDefaultPodCliqueSet, &ctrlwebhook.Admission{Handler: defaultingHandler{}})
	err := builder.WebhookManagedBy(mgr, &corev1alpha1.PodCliqueSet{}).
		WithValidator(&PodCliqueSetValidator{Reader: opts.Reader, Backends: opts.Backends, TopologyAwareScheduling: opts.TopologyAwareScheduling, Client: opts.Client}).
		WithValidatorCustomPath(PathValidatePodCliqueSet).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the PodCliqueSet webhooks: %w", err)
	}
	err = builder.WebhookManagedBy(mgr, &corev1alpha1.ClusterTopology{}).
		WithValidator(&ClusterTopologyValidator{Backends: opts.Backends, Reader: opts.Reader}).
		WithValidatorCustomPath(PathValidateClusterTopology).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the ClusterTopology webhook: %w", err)
	}
	err = builder.WebhookManagedBy(mgr, &corev1alpha1.ClusterTopologyBinding{}).
		WithValidator(&ClusterTopologyBindingValidator{Backends: opts.Backends}).
		WithValidatorCustomPath(PathValidateClusterTopologyBinding).
		Complete()
	if err != nil {
		return fmt.Errorf("registering the ClusterTopologyBinding webhook: %w", err)
	}
	return nil
}

// admissionError turns field errors into the API error the apiserver passes to the client: a
// 422 Invalid naming every field, or a 500 when a check could not be made (e.g. a lookup failed).
func admissionError(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs {
		if e.Type == field.ErrorTypeInternal {
			return apierrors.NewInternalError(errs.ToAggregate())
		}
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: corev1alpha1.GroupName, Kind: kind}, name, errs)
}
