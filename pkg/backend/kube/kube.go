// Package kube is the backend of the Kubernetes default scheduler (default-scheduler). Gang
// and topology placement through the scheduling.k8s.io Workload API come in a later release;
// until then the backend only points pods at the scheduler and rejects topology constraints
// instead of silently ignoring them.
package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/backend"
)

// TopologyUnsupportedMessage explains why a topology constraint is rejected for default-scheduler.
const TopologyUnsupportedMessage = "default-scheduler cannot honour topology constraints yet: gang and topology placement through the Kubernetes Workload API is not available in this release; remove the constraint or use grove-scheduler"

// GangNotEnforcedWarning tells users that minAvailable is not enforced at scheduling time.
const GangNotEnforcedWarning = "default-scheduler places pods one by one: gang scheduling (minAvailable) is not enforced until the Workload API backend is available"

// Backend is the default-scheduler backend.
type Backend struct{}

var _ backend.Backend = Backend{}

// New is the backend.Factory of default-scheduler.
func New() backend.Backend { return Backend{} }

// Name is default-scheduler.
func (Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKube }

// Init has nothing to prepare.
func (Backend) Init(context.Context, backend.InitContext) error { return nil }

// SyncPodGang creates nothing yet (Workload/PodGroup objects come with the Workload API backend).
func (Backend) SyncPodGang(context.Context, *schedv1alpha1.PodGang) error { return nil }

// PreparePod hands the pod to default-scheduler.
func (Backend) PreparePod(pod *corev1.Pod, _ backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameKube)
}

// ValidatePodCliqueSet rejects every topology constraint, naming its field, and warns that
// gangs are not enforced.
func (Backend) ValidatePodCliqueSet(_ context.Context, pcs *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	var errs field.ErrorList
	t := &pcs.Spec.Template
	tp := field.NewPath("spec", "template")
	if t.TopologyConstraint != nil {
		errs = append(errs, field.Forbidden(tp.Child("topologyConstraint"), TopologyUnsupportedMessage))
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		if t.PodCliqueScalingGroupConfigs[i].TopologyConstraint != nil {
			errs = append(errs, field.Forbidden(tp.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"), TopologyUnsupportedMessage))
		}
	}
	for i, c := range t.Cliques {
		if c != nil && c.TopologyConstraint != nil {
			errs = append(errs, field.Forbidden(tp.Child("cliques").Index(i).Child("topologyConstraint"), TopologyUnsupportedMessage))
		}
	}
	return []string{GangNotEnforcedWarning}, errs
}
