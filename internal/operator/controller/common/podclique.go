package common

import (
	"maps"
	"slices"
	"strconv"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

// ScalingGroupMember places a PodClique in one replica of a scaling group.
type ScalingGroupMember struct {
	// Name of the PodCliqueScalingGroup.
	Name string
	// Replica is the scaling-group replica index.
	Replica int
	// MinAvailable of the scaling group: replicas below it belong to the base PodGang.
	MinAvailable int
}

// PodCliqueTarget is where a PodClique sits in a PodCliqueSet's object graph.
type PodCliqueTarget struct {
	// PCS is the PodCliqueSet with defaults applied.
	PCS *corev1alpha1.PodCliqueSet
	// Replica is the PodCliqueSet replica index.
	Replica int
	// Clique is the clique template.
	Clique *corev1alpha1.PodCliqueTemplateSpec
	// Member is set for a PodClique of a scaling group.
	Member *ScalingGroupMember
	// Hashes, when set, are the hashes of PCS's template computed once for all its targets
	// (hash.NewTemplates; Clique must be one of that template's cliques); otherwise each target
	// hashes the template itself.
	Hashes *hash.Templates
}

// Name is the PodClique's name.
func (t PodCliqueTarget) Name() string {
	if t.Member != nil {
		return apicommon.ScalingGroupPodCliqueName(t.Member.Name, t.Member.Replica, t.Clique.Name)
	}
	return apicommon.StandalonePodCliqueName(t.PCS.Name, t.Replica, t.Clique.Name)
}

// PodGang is the PodGang the PodClique's pods belong to.
func (t PodCliqueTarget) PodGang() string {
	if t.Member != nil {
		return apicommon.PodGangNameForScalingGroupReplica(t.PCS.Name, t.Replica, t.Member.Name, t.Member.Replica, t.Member.MinAvailable)
	}
	return apicommon.BasePodGangName(t.PCS.Name, t.Replica)
}

// IsScaled reports whether the PodClique's pods form a scaled PodGang, which waits for its
// base PodGang.
func (t PodCliqueTarget) IsScaled() bool {
	return t.Member != nil && t.Member.Replica >= t.Member.MinAvailable
}

// Labels are the PodClique's labels (its pods carry them too).
func (t PodCliqueTarget) Labels() map[string]string {
	component := apicommon.ComponentPCSPodClique
	if t.Member != nil {
		component = apicommon.ComponentPCSGPodClique
	}
	l := maps.Clone(t.Clique.Labels)
	if l == nil {
		l = map[string]string{}
	}
	maps.Copy(l, ReplicaLabels(t.PCS.Name, component, t.Replica))
	l[apicommon.LabelPodGang] = t.PodGang()
	if t.Hashes != nil {
		l[apicommon.LabelPodTemplateHash] = t.Hashes.Clique(t.Clique.Name)
		l[apicommon.LabelPodCliqueSetGenerationHash] = t.Hashes.Generation()
	} else {
		l[apicommon.LabelPodTemplateHash] = hash.PodTemplate(t.Clique, t.PCS.Spec.Template.PriorityClassName)
		l[apicommon.LabelPodCliqueSetGenerationHash] = hash.PodCliqueSetGeneration(&t.PCS.Spec.Template)
	}
	if t.Member != nil {
		l[apicommon.LabelPodCliqueScalingGroup] = t.Member.Name
		l[apicommon.LabelPodCliqueScalingGroupReplicaIndex] = strconv.Itoa(t.Member.Replica)
		if t.IsScaled() {
			l[apicommon.LabelBasePodGang] = apicommon.BasePodGangName(t.PCS.Name, t.Replica)
		}
	}
	return l
}

// MutatePodClique makes pclq (new, or a copy of the existing one) match its template. The
// template's replicas only seed a new PodClique: afterwards they belong to its scale
// subresource (kubectl scale, an autoscaler).
func MutatePodClique(pclq *corev1alpha1.PodClique, t PodCliqueTarget) {
	if pclq.ResourceVersion == "" {
		// Created with the PodClique controller's finalizer, so that controller need not patch
		// it in: one write less per clique on the client that creates the pods.
		controllerutil.AddFinalizer(pclq, apicommon.FinalizerPodClique)
	}
	pclq.Labels = WithLabels(pclq.Labels, t.Labels())
	if len(t.Clique.Annotations) > 0 {
		if pclq.Annotations == nil {
			pclq.Annotations = map[string]string{}
		}
		maps.Copy(pclq.Annotations, t.Clique.Annotations)
	}
	replicas := t.Clique.Spec.Replicas
	if pclq.ResourceVersion != "" {
		replicas = pclq.Spec.Replicas
	}
	spec := t.Clique.Spec.DeepCopy()
	spec.Replicas = replicas
	if m := corev1alpha1.MinAvailableOf(&t.Clique.Spec); spec.MinAvailable == nil && m > 0 {
		// Same rule as the defaulting webhook, for PodCliqueSets that bypassed it.
		spec.MinAvailable = &m
	}
	if spec.PodSpec.PriorityClassName == "" {
		spec.PodSpec.PriorityClassName = t.PCS.Spec.Template.PriorityClassName
	}
	// The PodClique names the PodCliques its pods start after; the template names cliques.
	spec.StartsAfter = t.StartsAfter()
	pclq.Spec = *spec
}

// StartsAfter resolves the clique's startup dependencies into the PodCliques its pods wait
// for. The parent cliques are the previous clique in template order (InOrder) or the clique's
// startsAfter (Explicit); none with AnyOrder. A parent that is a scaling-group member means
// that group's replicas in the base PodGang. Pods of a scaled PodGang are started on their own
// once the base gang has been placed: they only wait for parents in their own scaling-group
// replica.
func (t PodCliqueTarget) StartsAfter() []string {
	tmpl := &t.PCS.Spec.Template
	var parents []string
	switch ptr.Deref(tmpl.StartupType, corev1alpha1.CliqueStartupTypeAnyOrder) {
	case corev1alpha1.CliqueStartupTypeInOrder:
		for i, c := range tmpl.Cliques {
			if c != nil && c.Name == t.Clique.Name && i > 0 && tmpl.Cliques[i-1] != nil {
				parents = []string{tmpl.Cliques[i-1].Name}
			}
		}
	case corev1alpha1.CliqueStartupTypeExplicit:
		parents = t.Clique.Spec.StartsAfter
	}
	var names []string
	for _, parent := range parents {
		if parent == t.Clique.Name {
			continue
		}
		group := tmpl.ScalingGroupOf(parent)
		switch {
		case t.IsScaled():
			if group != nil && apicommon.PodCliqueScalingGroupName(t.PCS.Name, t.Replica, group.Name) == t.Member.Name {
				names = append(names, apicommon.ScalingGroupPodCliqueName(t.Member.Name, t.Member.Replica, parent))
			}
		case group == nil:
			if tmpl.Clique(parent) != nil {
				names = append(names, apicommon.StandalonePodCliqueName(t.PCS.Name, t.Replica, parent))
			}
		default:
			pcsg := apicommon.PodCliqueScalingGroupName(t.PCS.Name, t.Replica, group.Name)
			for j := range int(corev1alpha1.ScalingGroupMinAvailable(group)) {
				names = append(names, apicommon.ScalingGroupPodCliqueName(pcsg, j, parent))
			}
		}
	}
	return names
}

// ReplicasBeingUpdated are the PodCliqueSet replicas a RollingRecreate or Coherent update is
// replacing pods of (status.updateProgress.currentlyUpdating): one at a time under
// RollingRecreate, possibly several under Coherent.
func ReplicasBeingUpdated(pcs *corev1alpha1.PodCliqueSet) []int {
	if !corev1alpha1.IsRollingStrategy(corev1alpha1.StrategyOf(pcs)) {
		return nil
	}
	p := pcs.Status.UpdateProgress
	if p == nil || p.UpdateEndedAt != nil {
		return nil
	}
	var out []int
	for _, r := range p.CurrentlyUpdating {
		if r.UpdateEndedAt == nil {
			out = append(out, int(r.ReplicaIndex))
		}
	}
	return out
}

// IsReplicaBeingUpdated reports whether replica is one of ReplicasBeingUpdated.
func IsReplicaBeingUpdated(pcs *corev1alpha1.PodCliqueSet, replica int) bool {
	return slices.Contains(ReplicasBeingUpdated(pcs), replica)
}
