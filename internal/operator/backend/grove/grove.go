// Package grove is the backend of Grove's native scheduler (grove-scheduler): its plugins read
// PodGangs and ClusterTopologies directly, so the backend only points pods at the scheduler.
package grove

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Backend is the grove-scheduler backend.
type Backend struct{}

var (
	_ backend.Backend        = Backend{}
	_ backend.UngatedMembers = Backend{}
)

// New is the backend.Factory of grove-scheduler.
func New() backend.Backend { return Backend{} }

// Name is grove-scheduler.
func (Backend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameGrove }

// Init has nothing to prepare.
func (Backend) Init(context.Context, backend.InitContext) error { return nil }

// SyncPodGang has nothing to create: the scheduler plugins read the PodGang itself.
func (Backend) SyncPodGang(context.Context, *schedv1alpha1.PodGang) error { return nil }

// PreparePod hands the pod to grove-scheduler.
func (Backend) PreparePod(pod *corev1.Pod, _ backend.PodGangRef) {
	pod.Spec.SchedulerName = string(configv1alpha1.SchedulerNameGrove)
}

// HoldsUnlistedMembers: grove-scheduler's gang plugin keeps a pod grove-operator made out of
// the scheduling queue until its PodGang lists it (and a scaled PodGang's pods until the base
// PodGang is placed), so the pods need no scheduling gate.
func (Backend) HoldsUnlistedMembers() {}

// ValidatePodCliqueSet accepts everything: grove-scheduler honours gangs and topology.
func (Backend) ValidatePodCliqueSet(context.Context, *corev1alpha1.PodCliqueSet) ([]string, field.ErrorList) {
	return nil, nil
}
