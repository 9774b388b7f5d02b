package v1alpha1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Defaults of a PodCliqueSet.
const (
	DefaultTerminationDelay              = 4 * time.Hour
	DefaultTerminationGracePeriodSeconds = int64(30)
)

// SetDefaultsPodCliqueSet fills what a user may leave out. The defaulting webhook calls it;
// controllers read specs through the same rules (MinAvailableOf, ...) so they behave the same
// even when the webhook was bypassed.
func SetDefaultsPodCliqueSet(pcs *PodCliqueSet) {
	spec := &pcs.Spec
	if spec.UpdateStrategy == nil {
		spec.UpdateStrategy = &PodCliqueSetUpdateStrategy{}
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = RollingRecreateStrategy
	}
	t := &spec.Template
	if t.StartupType == nil {
		t.StartupType = ptr.To(CliqueStartupTypeAnyOrder)
	}
	if t.TerminationDelay == nil {
		t.TerminationDelay = &metav1.Duration{Duration: DefaultTerminationDelay}
	}
	if t.HeadlessServiceConfig == nil {
		t.HeadlessServiceConfig = &HeadlessServiceConfig{PublishNotReadyAddresses: true}
	}
	for _, c := range t.Cliques {
		if c == nil {
			continue
		}
		// replicas: 0 is left as sent (the CRD defaults a missing field to 1): turning it into 1
		// would run a pod the user said not to run, so validation refuses it instead.
		if c.Spec.MinAvailable == nil && c.Spec.Replicas > 0 {
			c.Spec.MinAvailable = ptr.To(c.Spec.Replicas)
		}
		if a := c.Spec.ScaleConfig; a != nil && a.MinReplicas == nil {
			a.MinReplicas = ptr.To(c.Spec.Replicas)
		}
		if t.ScalingGroupOf(c.Name) == nil {
			c.RollingUpdate = defaultRollingUpdate(c.RollingUpdate, spec.UpdateStrategy.Type)
		}
		if c.Spec.RoleName == "" {
			c.Spec.RoleName = c.Name
		}
		ps := &c.Spec.PodSpec
		if ps.RestartPolicy == "" {
			ps.RestartPolicy = corev1.RestartPolicyAlways
		}
		if ps.TerminationGracePeriodSeconds == nil {
			ps.TerminationGracePeriodSeconds = ptr.To(DefaultTerminationGracePeriodSeconds)
		}
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		if g.Replicas == nil {
			g.Replicas = ptr.To[int32](1)
		}
		if g.MinAvailable == nil {
			g.MinAvailable = ptr.To[int32](1)
		}
		if a := g.ScaleConfig; a != nil && a.MinReplicas == nil {
			a.MinReplicas = ptr.To(*g.Replicas)
		}
		g.RollingUpdate = defaultRollingUpdate(g.RollingUpdate, spec.UpdateStrategy.Type)
	}
}

// MinAvailableOf is a clique's minAvailable, defaulting to its replicas.
func MinAvailableOf(spec *PodCliqueSpec) int32 {
	if spec.MinAvailable != nil {
		return *spec.MinAvailable
	}
	return spec.Replicas
}

// ScalingGroupMinAvailable is a scaling group's minAvailable, defaulting to 1.
func ScalingGroupMinAvailable(g *PodCliqueScalingGroupConfig) int32 {
	return ptr.Deref(g.MinAvailable, 1)
}

// ScalingGroupReplicas is a scaling group's template replicas, defaulting to 1.
func ScalingGroupReplicas(g *PodCliqueScalingGroupConfig) int32 {
	return ptr.Deref(g.Replicas, 1)
}

// ScalingGroupOf returns the scaling group a clique belongs to, or nil for a standalone clique.
func (t *PodCliqueSetTemplateSpec) ScalingGroupOf(clique string) *PodCliqueScalingGroupConfig {
	for i := range t.PodCliqueScalingGroupConfigs {
		for _, n := range t.PodCliqueScalingGroupConfigs[i].CliqueNames {
			if n == clique {
				return &t.PodCliqueScalingGroupConfigs[i]
			}
		}
	}
	return nil
}

// StandaloneCliques are the clique templates outside every scaling group: the PodCliqueSet's
// own PodCliques, one of each per replica.
func (t *PodCliqueSetTemplateSpec) StandaloneCliques() []*PodCliqueTemplateSpec {
	var out []*PodCliqueTemplateSpec
	for _, c := range t.Cliques {
		if c != nil && t.ScalingGroupOf(c.Name) == nil {
			out = append(out, c)
		}
	}
	return out
}

// Clique returns the clique template of that name, or nil.
func (t *PodCliqueSetTemplateSpec) Clique(name string) *PodCliqueTemplateSpec {
	for _, c := range t.Cliques {
		if c != nil && c.Name == name {
			return c
		}
	}
	return nil
}
