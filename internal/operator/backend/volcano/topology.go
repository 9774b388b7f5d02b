package volcano

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/packing"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// What Volcano can express: one spec.networkTopology per PodGroup, for the whole PodGang.
//   - A required domain is mode hard with the HyperNode tier of its key: every pod of the gang
//     in one HyperNode of at most that tier.
//   - A preferred domain alone is mode soft: Volcano packs the gang into as few HyperNodes as
//     it can but places it anyway.
//   - A preferred domain narrower than the required one on the same gang cannot be written
//     next to it (a broader one is implied by the required domain).
//   - A constraint on part of a gang (a clique, or a scaling group inside the base PodGang) has
//     no field of its own. It is honoured when the gang-level constraint implies it: the gang's
//     required domain is the same level or a narrower one, or (for a preferred domain) the gang
//     is packed softly as a whole.
// Everything else is rejected at admission with the path of the domain Volcano cannot honour.

// covered tells whether a gang-level constraint (required gr, preferred gp) implies a nested
// domain; index orders the levels, broadest first (-1: unknown).
func covered(nested string, nestedRequired bool, gr, gp string, index func(string) int) bool {
	if gr != "" {
		i, j := index(nested), index(gr)
		if i >= 0 && j >= 0 && i <= j {
			return true
		}
	}
	return !nestedRequired && gr == "" && gp != ""
}

// constrained is one topology constraint of a PodCliqueSet template with its field path.
type constrained struct {
	path *field.Path
	tc   *corev1alpha1.TopologyConstraint
}

func (c constrained) required() string  { return string(c.tc.RequiredDomain()) }
func (c constrained) preferred() string { return string(c.tc.PreferredDomain()) }

// requiredPath is the path of the required domain as written.
func (c constrained) requiredPath() *field.Path {
	if c.tc.Pack != nil && c.tc.Pack.Required != "" {
		return c.path.Child("pack", "required")
	}
	return c.path.Child("packDomain")
}

func (c constrained) preferredPath() *field.Path { return c.path.Child("pack", "preferred") }

// validateTopology rejects the topology constraints of a PodCliqueSet that Volcano cannot
// honour. Unknown domains and a missing ClusterTopology are the generic validation's to report.
func (b *Backend) validateTopology(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	t := &pcs.Spec.Template
	if !packing.HasConstraints(t) || b.reader == nil {
		return nil
	}
	topologyName := packing.NameOf(t)
	if topologyName == "" {
		return nil
	}
	ct := &corev1alpha1.ClusterTopology{}
	if err := b.reader.Get(ctx, client.ObjectKey{Name: topologyName}, ct); err != nil {
		p := field.NewPath("spec", "template", "topologyConstraint", "topologyName")
		if apierrors.IsNotFound(err) {
			return nil
		}
		return field.ErrorList{field.InternalError(p, fmt.Errorf("reading ClusterTopology %s: %w", topologyName, err))}
	}
	index := func(d string) int { return ct.Spec.LevelIndex(corev1alpha1.TopologyDomain(d)) }
	tmpl := field.NewPath("spec", "template")
	var errs field.ErrorList

	// gangLevel checks a constraint that becomes a PodGang's spec.networkTopology.
	gangLevel := func(c constrained) {
		if !c.tc.HasDomain() {
			return
		}
		r, p := c.required(), c.preferred()
		if r != "" && p != "" && !covered(p, false, r, "", index) {
			errs = append(errs, field.Forbidden(c.preferredPath(), fmt.Sprintf(
				"volcano writes one networkTopology per PodGroup: required %q becomes mode hard, and the narrower preferred %q cannot be expressed next to it; drop one of them", r, p)))
		}
		if r == "" {
			return
		}
		i := index(r)
		if i < 0 {
			return
		}
		key := ct.Spec.Levels[i].Key
		if _, ok := b.cfg.tierFor(key); !ok {
			errs = append(errs, field.Invalid(c.requiredPath(), r, fmt.Sprintf(
				"domain %q is node label %q in ClusterTopology %q, which has no HyperNode tier in the volcano profile's topologyTiers (configured: %s); "+
					"volcano can only require a domain that is a HyperNode tier", r, key, topologyName, b.cfg.describeTiers())))
		}
	}
	// nested checks a constraint on part of a gang against the gang-level one.
	nested := func(c constrained, gang *corev1alpha1.TopologyConstraint, what string) {
		gr, gp := string(gang.RequiredDomain()), string(gang.PreferredDomain())
		why := func(d string) string {
			return fmt.Sprintf("volcano has one networkTopology for the whole PodGang, and %s: it cannot pack this part of the gang into %q on its own; "+
				"constrain the PodCliqueSet to %q or a narrower domain instead, or use kai-scheduler or grove-scheduler", what, d, d)
		}
		if r := c.required(); r != "" && !covered(r, true, gr, gp, index) {
			errs = append(errs, field.Forbidden(c.requiredPath(), why(r)))
		}
		if p := c.preferred(); p != "" && p != c.required() && !covered(p, false, gr, gp, index) {
			errs = append(errs, field.Forbidden(c.preferredPath(), why(p)))
		}
	}

	base := t.TopologyConstraint
	gangLevel(constrained{tmpl.Child("topologyConstraint"), base})
	groupOf := map[string]int{}
	for i := range t.PodCliqueScalingGroupConfigs {
		g := &t.PodCliqueScalingGroupConfigs[i]
		for _, n := range g.CliqueNames {
			groupOf[n] = i
		}
		c := constrained{tmpl.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"), g.TopologyConstraint}
		if !g.TopologyConstraint.HasDomain() {
			continue
		}
		// Inside the base PodGang the group's replicas are nested; each scaled PodGang is the
		// group's replica alone, packed at gang level.
		nested(c, base, describeGang("the base PodGang", base))
		if hasScaledGangs(g) {
			gangLevel(c)
		}
	}
	for i, cl := range t.Cliques {
		if cl == nil || !cl.TopologyConstraint.HasDomain() {
			continue
		}
		c := constrained{tmpl.Child("cliques").Index(i).Child("topologyConstraint"), cl.TopologyConstraint}
		nested(c, base, describeGang("the base PodGang", base))
		if gi, inGroup := groupOf[cl.Name]; inGroup && hasScaledGangs(&t.PodCliqueScalingGroupConfigs[gi]) {
			g := &t.PodCliqueScalingGroupConfigs[gi]
			scaled := g.TopologyConstraint
			if !scaled.HasDomain() {
				scaled = base
			}
			nested(c, scaled, describeGang(fmt.Sprintf("a scaled PodGang of scaling group %q", g.Name), scaled))
		}
	}
	return errs
}

// hasScaledGangs: a scaling group with replicas (now or through its autoscaler) beyond its
// minAvailable has PodGangs of its own.
func hasScaledGangs(g *corev1alpha1.PodCliqueScalingGroupConfig) bool {
	most := corev1alpha1.ScalingGroupReplicas(g)
	if g.ScaleConfig != nil {
		most = max(most, g.ScaleConfig.MaxReplicas)
	}
	return most > corev1alpha1.ScalingGroupMinAvailable(g)
}

func describeGang(gang string, tc *corev1alpha1.TopologyConstraint) string {
	switch {
	case tc.RequiredDomain() != "":
		return fmt.Sprintf("%s requires only %q", gang, tc.RequiredDomain())
	case tc.PreferredDomain() != "":
		return fmt.Sprintf("%s only prefers %q", gang, tc.PreferredDomain())
	}
	return gang + " has no topology constraint"
}

// keyIndex orders node label keys as the ClusterTopology's levels, broadest first.
func keyIndex(keys []string) func(string) int {
	return func(k string) int { return slices.Index(keys, k) }
}
