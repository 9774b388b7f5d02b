// Package resourceclaim implements hierarchical resource sharing with DRA (claims shared at
// PodCliqueSet, scaling-group and clique level, each AllReplicas or PerReplica): the
// ResourceClaims that resourceSharing entries of a PodCliqueSet, a scaling group and a clique
// ask for, and the claim references of the pods that share them.
//
// Each level owns the claims it declares:
//   - a PodCliqueSet entry makes "<pcs>-all-<template>" (AllReplicas) or one
//     "<pcs>-<replica>-<template>" per PodCliqueSet replica (PerReplica);
//   - a scaling-group entry makes "<pcsg>-all-<template>" or one "<pcsg>-<groupReplica>-<template>"
//     per replica of that PodCliqueScalingGroup;
//   - a clique entry makes "<pclq>-all-<template>" or one "<pclq>-<podIndex>-<template>" per pod.
//
// This file holds the pure part: which claims exist for an owner and which claims a pod uses.
// sync.go creates and removes them.
package resourceclaim

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// Kinds of claim owners, the values of the owner-kind label.
const (
	OwnerKindPodCliqueSet          = "PodCliqueSet"
	OwnerKindPodCliqueScalingGroup = "PodCliqueScalingGroup"
	OwnerKindPodClique             = "PodClique"
)

// ClaimName is the claim an entry of owner makes for one replica (ignored for AllReplicas).
func ClaimName(owner string, entry corev1alpha1.ResourceSharingSpec, replica int) string {
	if entry.Scope == corev1alpha1.ResourceSharingScopePerReplica {
		return apicommon.PerReplicaResourceClaimName(owner, replica, entry.Name)
	}
	return apicommon.AllReplicasResourceClaimName(owner, entry.Name)
}

// Labels are the labels of a claim: the PodCliqueSet's managed-object labels, the owner's kind
// and name, the template and, for a PerReplica claim, the replica index.
func Labels(pcsName, ownerKind, ownerName string, entry corev1alpha1.ResourceSharingSpec, replica int) map[string]string {
	l := common.ComponentLabels(pcsName, apicommon.ComponentResourceClaim)
	l[apicommon.LabelResourceClaimOwnerKind] = ownerKind
	l[apicommon.LabelResourceClaimOwnerName] = apicommon.ShortenLabelValue(ownerName)
	l[apicommon.LabelResourceClaimTemplate] = apicommon.ShortenLabelValue(entry.Name)
	if entry.Scope == corev1alpha1.ResourceSharingScopePerReplica {
		l[apicommon.LabelResourceClaimReplicaIndex] = strconv.Itoa(replica)
	}
	return l
}

// ownerSelector are the labels every claim of one owner carries.
func ownerSelector(pcsName, ownerKind, ownerName string) map[string]string {
	l := common.ComponentLabels(pcsName, apicommon.ComponentResourceClaim)
	l[apicommon.LabelResourceClaimOwnerKind] = ownerKind
	l[apicommon.LabelResourceClaimOwnerName] = apicommon.ShortenLabelValue(ownerName)
	return l
}

// PodCliqueSetEntries are the PodCliqueSet-level entries without their filters.
func PodCliqueSetEntries(t *corev1alpha1.PodCliqueSetTemplateSpec) []corev1alpha1.ResourceSharingSpec {
	out := make([]corev1alpha1.ResourceSharingSpec, 0, len(t.ResourceSharing))
	for _, s := range t.ResourceSharing {
		out = append(out, s.ResourceSharingSpec)
	}
	return out
}

// ScalingGroupEntries are a scaling group's entries without their filters.
func ScalingGroupEntries(g *corev1alpha1.PodCliqueScalingGroupConfig) []corev1alpha1.ResourceSharingSpec {
	out := make([]corev1alpha1.ResourceSharingSpec, 0, len(g.ResourceSharing))
	for _, s := range g.ResourceSharing {
		out = append(out, s.ResourceSharingSpec)
	}
	return out
}

// Declared reports whether a PodCliqueSet shares resources at any level.
func Declared(t *corev1alpha1.PodCliqueSetTemplateSpec) bool {
	if len(t.ResourceSharing) > 0 {
		return true
	}
	for _, g := range t.PodCliqueScalingGroupConfigs {
		if len(g.ResourceSharing) > 0 {
			return true
		}
	}
	return slices.ContainsFunc(t.Cliques, func(c *corev1alpha1.PodCliqueTemplateSpec) bool { return c != nil && len(c.ResourceSharing) > 0 })
}

// pcsFilterMatches reports whether a PodCliqueSet entry reaches a clique (by template name)
// that is a member of group ("" for a standalone clique). No filter reaches every clique.
func pcsFilterMatches(f *corev1alpha1.PCSResourceSharingFilter, clique, group string) bool {
	if f == nil {
		return true
	}
	return slices.Contains(f.ChildCliqueNames, clique) || (group != "" && slices.Contains(f.ChildScalingGroupNames, group))
}

// pcsgFilterMatches reports whether a scaling-group entry reaches a member clique.
func pcsgFilterMatches(f *corev1alpha1.PCSGResourceSharingFilter, clique string) bool {
	return f == nil || slices.Contains(f.ChildCliqueNames, clique)
}

// Where locates a PodClique in its PodCliqueSet's template.
type Where struct {
	// PCSReplica is the PodCliqueSet replica index.
	PCSReplica int
	// Clique is the clique template.
	Clique *corev1alpha1.PodCliqueTemplateSpec
	// Group is the scaling group of a member clique, nil for a standalone one.
	Group *corev1alpha1.PodCliqueScalingGroupConfig
	// GroupName is the PodCliqueScalingGroup's name and GroupReplica the replica of it.
	GroupName    string
	GroupReplica int
}

// Locate finds a PodClique's clique template (and scaling group) from its labels and name.
func Locate(pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) (Where, error) {
	var w Where
	var ok bool
	if w.PCSReplica, ok = common.IntLabel(pclq, apicommon.LabelPodCliqueSetReplicaIndex); !ok {
		return w, fmt.Errorf("PodClique %s: label %s is missing or not a replica index", pclq.Name, apicommon.LabelPodCliqueSetReplicaIndex)
	}
	t := &pcs.Spec.Template
	if pcsg, member := pclq.Labels[apicommon.LabelPodCliqueScalingGroup]; member {
		if w.GroupReplica, ok = common.IntLabel(pclq, apicommon.LabelPodCliqueScalingGroupReplicaIndex); !ok {
			return w, fmt.Errorf("PodClique %s: label %s is missing or not a replica index", pclq.Name, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		}
		w.GroupName = pcsg
		for i := range t.PodCliqueScalingGroupConfigs {
			if g := &t.PodCliqueScalingGroupConfigs[i]; apicommon.PodCliqueScalingGroupName(pcs.Name, w.PCSReplica, g.Name) == pcsg {
				w.Group = g
			}
		}
		if w.Group == nil {
			return w, fmt.Errorf("PodClique %s: scaling group %s is not in PodCliqueSet %s", pclq.Name, pcsg, pcs.Name)
		}
		for _, name := range w.Group.CliqueNames {
			if apicommon.ScalingGroupPodCliqueName(pcsg, w.GroupReplica, name) == pclq.Name {
				w.Clique = t.Clique(name)
			}
		}
	} else {
		for _, c := range t.Cliques {
			if c != nil && t.ScalingGroupOf(c.Name) == nil && apicommon.StandalonePodCliqueName(pcs.Name, w.PCSReplica, c.Name) == pclq.Name {
				w.Clique = c
			}
		}
	}
	if w.Clique == nil {
		return w, fmt.Errorf("PodClique %s: no clique of PodCliqueSet %s has this name", pclq.Name, pcs.Name)
	}
	return w, nil
}

// PodClaims are the claims the pods of one PodClique use, in declaration order: the
// PodCliqueSet's entries that reach the clique, the scaling group's entries that reach it,
// then the clique's own.
type PodClaims struct {
	// shared are used by every pod of the PodClique.
	shared []string
	// pclq and clique are the clique-level entries, whose PerReplica claims depend on the pod.
	pclq   string
	clique []corev1alpha1.ResourceSharingSpec
}

// ForPodClique computes the claims of a PodClique's pods.
func ForPodClique(pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique) (PodClaims, error) {
	w, err := Locate(pcs, pclq)
	if err != nil {
		return PodClaims{}, err
	}
	p := PodClaims{pclq: pclq.Name, clique: w.Clique.ResourceSharing}
	groupConfig := ""
	if w.Group != nil {
		groupConfig = w.Group.Name
	}
	for _, s := range pcs.Spec.Template.ResourceSharing {
		if pcsFilterMatches(s.Filter, w.Clique.Name, groupConfig) {
			p.shared = append(p.shared, ClaimName(pcs.Name, s.ResourceSharingSpec, w.PCSReplica))
		}
	}
	if w.Group != nil {
		for _, s := range w.Group.ResourceSharing {
			if pcsgFilterMatches(s.Filter, w.Clique.Name) {
				p.shared = append(p.shared, ClaimName(w.GroupName, s.ResourceSharingSpec, w.GroupReplica))
			}
		}
	}
	return p, nil
}

// Empty reports whether the pods use no shared claims.
func (p PodClaims) Empty() bool { return len(p.shared) == 0 && len(p.clique) == 0 }

// HasCliqueLevel reports whether the clique declares claims of its own.
func (p PodClaims) HasCliqueLevel() bool { return len(p.clique) > 0 }

// ForPod are the claim names of the pod with podIndex.
func (p PodClaims) ForPod(podIndex int) []string {
	out := slices.Clone(p.shared)
	for _, s := range p.clique {
		out = append(out, ClaimName(p.pclq, s, podIndex))
	}
	return out
}

// Inject makes a pod use claims: a spec.resourceClaims entry for each and a resources.claims
// reference in every container and init container, so that all of them see the devices.
// Entries the pod already has are not added again.
func Inject(spec *corev1.PodSpec, claims []string) {
	for _, claim := range claims {
		entry := apicommon.PodResourceClaimName(claim)
		if !slices.ContainsFunc(spec.ResourceClaims, func(c corev1.PodResourceClaim) bool { return c.Name == entry }) {
			spec.ResourceClaims = append(spec.ResourceClaims, corev1.PodResourceClaim{Name: entry, ResourceClaimName: &claim})
		}
		for _, containers := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
			for i := range containers {
				c := &containers[i].Resources
				if !slices.ContainsFunc(c.Claims, func(r corev1.ResourceClaim) bool { return r.Name == entry }) {
					c.Claims = append(c.Claims, corev1.ResourceClaim{Name: entry})
				}
			}
		}
	}
}
