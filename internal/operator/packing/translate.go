// Package packing translates the topology constraints of a PodCliqueSet (domains such as
// "rack" of a named ClusterTopology) into the node-label keys a PodGang carries (the
// required and preferred pack keys of every PodGroup and of the PodGang). It is pure: callers fetch the ClusterTopology and apply the result.
package packing

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// NameOf is the ClusterTopology the template's constraints refer to. topologyName belongs on
// the PodCliqueSet-level constraint and is inherited below it; a template that only constrains
// children may name it on one of them.
func NameOf(t *corev1alpha1.PodCliqueSetTemplateSpec) string {
	if t.TopologyConstraint != nil && t.TopologyConstraint.TopologyName != "" {
		return t.TopologyConstraint.TopologyName
	}
	for _, g := range t.PodCliqueScalingGroupConfigs {
		if g.TopologyConstraint != nil && g.TopologyConstraint.TopologyName != "" {
			return g.TopologyConstraint.TopologyName
		}
	}
	for _, c := range t.Cliques {
		if c != nil && c.TopologyConstraint != nil && c.TopologyConstraint.TopologyName != "" {
			return c.TopologyConstraint.TopologyName
		}
	}
	return ""
}

// HasConstraints reports whether any level of the template names a topology domain (to pack
// into or, for the PodCliqueSet, to spread replicas over).
func HasConstraints(t *corev1alpha1.PodCliqueSetTemplateSpec) bool {
	if t.TopologyConstraint.HasDomain() || t.TopologyConstraint != nil && len(t.TopologyConstraint.ReplicaSpreadConstraints) > 0 ||
		hasRoleGroups(t.TopologyConstraint) {
		return true
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		if t.PodCliqueScalingGroupConfigs[i].TopologyConstraint.HasDomain() {
			return true
		}
	}
	for _, c := range t.Cliques {
		if c != nil && (c.TopologyConstraint.HasDomain() || c.TopologyConstraint != nil && c.TopologyConstraint.Slice != nil) {
			return true
		}
	}
	return false
}

// Translated holds a template's constraints as PodGang constraints (node-label keys). A nil
// entry means "no constraint" (none declared, or none of its domains resolve).
type Translated struct {
	// PodCliqueSet is the PodCliqueSet-level constraint (base PodGangs).
	PodCliqueSet *schedv1alpha1.TopologyConstraint
	// ScalingGroups by scaling-group name.
	ScalingGroups map[string]*schedv1alpha1.TopologyConstraint
	// Cliques by clique name.
	Cliques map[string]*schedv1alpha1.TopologyConstraint
	// MissingDomains are the declared domains the ClusterTopology has no level for, sorted.
	MissingDomains []corev1alpha1.TopologyDomain
	// Spread is the PodCliqueSet's replica spread (spread.go).
	Spread []SpreadKey
	// ScalingGroupSpread is each scaling group's replica spread, by scaling-group name (spread.go).
	ScalingGroupSpread map[string][]SpreadKey
	// Slices by clique name (slice.go).
	Slices map[string]SliceKey
	// Roles are the PodCliqueSet's affinity and anti-affinity groups (affinity.go).
	Roles []RoleGroup
}

// ScaledPodGang is the constraint of a scaled PodGang of a scaling group: the group's own,
// falling back to the PodCliqueSet's.
func (t Translated) ScaledPodGang(group string) *schedv1alpha1.TopologyConstraint {
	if c := t.ScalingGroups[group]; c != nil {
		return c
	}
	return t.PodCliqueSet
}

// Shared is the constraint every PodGang of a PodCliqueSet replica shares, group being the
// replica's base PodGang: the PodCliqueSet-level keys; nil when it has none.
func (t Translated) Shared(group string) *schedv1alpha1.SharedTopologyConstraint {
	if t.PodCliqueSet == nil || t.PodCliqueSet.PackConstraint == nil {
		return nil
	}
	return &schedv1alpha1.SharedTopologyConstraint{Group: group, PackConstraint: t.PodCliqueSet.PackConstraint.DeepCopy()}
}

// Translate maps every constraint of the template through levels (the ClusterTopology's
// spec.levels; nil when it does not exist, in which case nothing resolves).
func Translate(t *corev1alpha1.PodCliqueSetTemplateSpec, levels []corev1alpha1.TopologyLevel) Translated {
	keys := make(map[corev1alpha1.TopologyDomain]string, len(levels))
	for _, l := range levels {
		keys[l.Domain] = l.Key
	}
	missing := map[corev1alpha1.TopologyDomain]bool{}
	translate := func(tc *corev1alpha1.TopologyConstraint) *schedv1alpha1.TopologyConstraint {
		pack := &schedv1alpha1.TopologyPackConstraint{}
		for _, d := range []struct {
			domain corev1alpha1.TopologyDomain
			into   **string
		}{{tc.RequiredDomain(), &pack.Required}, {tc.PreferredDomain(), &pack.Preferred}} {
			if d.domain == "" {
				continue
			}
			key, ok := keys[d.domain]
			if !ok {
				missing[d.domain] = true
				continue
			}
			*d.into = &key
		}
		if pack.Required == nil && pack.Preferred == nil {
			return nil
		}
		return &schedv1alpha1.TopologyConstraint{PackConstraint: pack}
	}

	out := Translated{
		PodCliqueSet:  translate(t.TopologyConstraint),
		ScalingGroups: map[string]*schedv1alpha1.TopologyConstraint{},
		Cliques:       map[string]*schedv1alpha1.TopologyConstraint{},
	}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		if c := translate(g.TopologyConstraint); c != nil {
			out.ScalingGroups[g.Name] = c
		}
	}
	for _, c := range t.Cliques {
		if c == nil {
			continue
		}
		if tc := translate(c.TopologyConstraint); tc != nil {
			out.Cliques[c.Name] = tc
		}
	}
	out.Spread = translateSpread(t.TopologyConstraint, keys, missing)
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		if sp := translateSpread(g.TopologyConstraint, keys, missing); len(sp) > 0 {
			if out.ScalingGroupSpread == nil {
				out.ScalingGroupSpread = map[string][]SpreadKey{}
			}
			out.ScalingGroupSpread[g.Name] = sp
		}
	}
	out.Slices = translateSlices(t, keys, missing)
	out.Roles = translateRoles(t.TopologyConstraint, keys, missing)
	for d := range missing {
		out.MissingDomains = append(out.MissingDomains, d)
	}
	sort.Slice(out.MissingDomains, func(i, j int) bool { return out.MissingDomains[i] < out.MissingDomains[j] })
	return out
}

// LevelsUnavailableCondition is the PodCliqueSet's TopologyLevelsUnavailable condition for a
// template with constraints (seed 000): Unknown when nothing can be resolved because
// topology-aware scheduling is disabled or no ClusterTopology is named; True (naming what is
// missing) when the ClusterTopology is gone or lacks a declared domain; False when every
// domain resolves.
func LevelsUnavailableCondition(tasEnabled bool, name string, found bool, missing []corev1alpha1.TopologyDomain) metav1.Condition {
	c := metav1.Condition{Type: common.ConditionTopologyLevelsUnavailable, Status: metav1.ConditionTrue}
	switch {
	case !tasEnabled:
		c.Status = metav1.ConditionUnknown
		c.Reason = common.ReasonTopologyAwareSchedulingDisabled
		c.Message = "topology constraints are set but topologyAwareScheduling is disabled in the operator configuration; they are not passed to the scheduler"
	case name == "":
		c.Status = metav1.ConditionUnknown
		c.Reason = common.ReasonTopologyNameMissing
		c.Message = "topology constraints are set but no topologyName names their ClusterTopology; they are not passed to the scheduler"
	case !found:
		c.Reason = common.ReasonClusterTopologyNotFound
		c.Message = fmt.Sprintf("ClusterTopology %q does not exist; topology constraints are not passed to the scheduler", name)
	case len(missing) > 0:
		ds := make([]string, len(missing))
		for i, d := range missing {
			ds[i] = string(d)
		}
		c.Reason = common.ReasonTopologyLevelsUnavailable
		c.Message = fmt.Sprintf("ClusterTopology %q has no level for domain(s) %s; constraints on them are not passed to the scheduler", name, strings.Join(ds, ", "))
	default:
		c.Status = metav1.ConditionFalse
		c.Reason = common.ReasonAllTopologyLevelsAvailable
		c.Message = fmt.Sprintf("every topology domain resolves in ClusterTopology %q", name)
	}
	return c
}
