package webhook

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// Generated-name collisions.
//
// Names of PodCliques and PodCliqueScalingGroups are built by joining names and indices with
// "-", so two valid PodCliqueSets can want the same object: PCS "x-0-g" with clique "w" has
// PodClique "x-0-g-0-w", and so has PCS "x" with clique "w" in scaling group "g". grove-operator
// never takes over an object another PodCliqueSet (or anyone else) made, so the second would
// wait forever. Admission refuses a new PodCliqueSet when such an object exists already, naming
// its owner; a collision that arises later (the other object is created after, or a scale-out
// reaches it) is reported by the controller as a name conflict on the PodCliqueSet.

// conflictingChildren lists the PodCliques and PodCliqueScalingGroups of the namespace that
// pcs would create now and that are not its own.
func (v *PodCliqueSetValidator) conflictingChildren(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) field.ErrorList {
	if v.Reader == nil || pcs.Name == "" {
		return nil
	}
	var errs field.ErrorList
	for _, kind := range []string{"PodClique", "PodCliqueScalingGroup"} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(corev1alpha1.SchemeGroupVersion.WithKind(kind + "List"))
		if err := v.Reader.List(ctx, list, client.InNamespace(pcs.Namespace)); err != nil {
			return field.ErrorList{field.InternalError(field.NewPath("metadata", "name"), fmt.Errorf("listing %ss to check for name collisions: %w", kind, err))}
		}
		for i := range list.Items {
			obj := &list.Items[i]
			p := wouldCreate(pcs, obj.Name, kind == "PodCliqueScalingGroup")
			if p == nil {
				continue
			}
			owner := "no PodCliqueSet"
			if ref := metav1.GetControllerOf(obj); ref != nil {
				if ref.Kind == "PodCliqueSet" && ref.Name == pcs.Name {
					continue // a previous PodCliqueSet of this name, being deleted
				}
				owner = fmt.Sprintf("%s %s", ref.Kind, ref.Name)
			}
			errs = append(errs, field.Invalid(p, obj.Name, fmt.Sprintf(
				"this PodCliqueSet would create %s %s, which exists already and belongs to %s: rename the PodCliqueSet or the clique (generated names join names and indices with \"-\")",
				kind, obj.Name, owner)))
		}
	}
	return errs
}

// wouldCreate reports where in pcs the object name comes from, when pcs creates an object of
// that name now ("<pcs>-<i>-<clique>" for a standalone PodClique, "<pcs>-<i>-<group>" for a
// scaling group, "<pcs>-<i>-<group>-<j>-<clique>" for a member), else nil.
func wouldCreate(pcs *corev1alpha1.PodCliqueSet, name string, scalingGroup bool) *field.Path {
	rest, ok := strings.CutPrefix(name, pcs.Name+"-")
	if !ok {
		return nil
	}
	i, rest, ok := cutIndex(rest)
	if !ok || i >= int(pcs.Spec.Replicas) {
		return nil
	}
	t := &pcs.Spec.Template
	cp := field.NewPath("spec", "template", "cliques")
	gp := field.NewPath("spec", "template", "podCliqueScalingGroups")
	for gi, g := range t.PodCliqueScalingGroupConfigs {
		if scalingGroup {
			if rest == g.Name {
				return gp.Index(gi).Child("name")
			}
			continue
		}
		after, ok := strings.CutPrefix(rest, g.Name+"-")
		if !ok {
			continue
		}
		j, clique, ok := cutIndex(after)
		if !ok || j >= int(corev1alpha1.ScalingGroupReplicas(&t.PodCliqueScalingGroupConfigs[gi])) {
			continue
		}
		for _, member := range g.CliqueNames {
			if member == clique {
				return cliquePath(t, cp, clique)
			}
		}
	}
	if scalingGroup {
		return nil
	}
	for _, c := range t.StandaloneCliques() {
		if c.Name == rest {
			return cliquePath(t, cp, c.Name)
		}
	}
	return nil
}

func cliquePath(t *corev1alpha1.PodCliqueSetTemplateSpec, cp *field.Path, name string) *field.Path {
	for i, c := range t.Cliques {
		if c != nil && c.Name == name {
			return cp.Index(i).Child("name")
		}
	}
	return cp
}

// cutIndex splits "<n>-<rest>" into n and rest.
func cutIndex(s string) (int, string, bool) {
	digits, rest, ok := strings.Cut(s, "-")
	if !ok {
		return 0, "", false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return 0, "", false
	}
	return n, rest, true
}
