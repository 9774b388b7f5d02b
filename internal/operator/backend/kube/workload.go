package kube

import (
	"context"
	"fmt"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/pkg/api/common"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Kinds of the Workload API objects Grove writes.
var (
	PodGroupGVK          = schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup")
	CompositePodGroupGVK = schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup")
	podGangGVK           = schedv1alpha1.SchemeGroupVersion.WithKind("PodGang")
)

// Template names of the workloadRef the API requires on a CompositePodGroup and on a PodGroup
// that has one as parent. Grove creates no Workload object: the PodGang is the unit Grove
// schedules, and neither kube-scheduler nor any controller reads the Workload of a PodGroup
// it did not create. workloadName is the PodGang; templateName says what the group stands for.
const (
	WorkloadTemplatePodGang     = "podgang"
	WorkloadTemplateGroupConfig = "topology-group"
	WorkloadTemplatePodClique   = "podclique"
)

// SyncPodGang writes the Workload API objects of a PodGang (nothing without the Workload API)
// and deletes the ones of PodGroups and group configs the PodGang no longer has; a removed
// PodGang takes its objects along through the owner references. Objects whose immutable
// fields must change are deleted and created anew.
func (b *Backend) SyncPodGang(ctx context.Context, pg *schedv1alpha1.PodGang) error {
	if !b.api.PodGroups {
		return nil
	}
	want, err := desiredWorkloadObjects(pg, b.api)
	if err != nil {
		return err
	}
	keepCPGs, keepPGs := map[string]bool{}, map[string]bool{}
	for _, cpg := range want.compositePodGroups {
		if err := b.apply(ctx, pg, cpg, &schedulingv1alpha3.CompositePodGroup{}, CompositePodGroupGVK, compositePodGroupImmutableChange); err != nil {
			return err
		}
		keepCPGs[cpg.Name] = true
	}
	for _, g := range want.podGroups {
		if err := b.apply(ctx, pg, g, &schedulingv1beta1.PodGroup{}, PodGroupGVK, podGroupImmutableChange); err != nil {
			return err
		}
		keepPGs[g.Name] = true
	}
	if err := b.deleteStale(ctx, pg, &schedulingv1beta1.PodGroupList{}, PodGroupGVK, keepPGs); err != nil {
		return err
	}
	if b.api.CompositePodGroups {
		return b.deleteStale(ctx, pg, &schedulingv1alpha3.CompositePodGroupList{}, CompositePodGroupGVK, keepCPGs)
	}
	return nil
}

// workloadObjects are the Workload API objects of one PodGang.
type workloadObjects struct {
	// compositePodGroups lists parents before their children.
	compositePodGroups []*schedulingv1alpha3.CompositePodGroup
	podGroups          []*schedulingv1beta1.PodGroup
}

// desiredWorkloadObjects are the objects of a PodGang with the fields Grove sets. What the
// served API cannot express is an error (admission rejects the constraints it comes from), so
// a gang is never scheduled without a constraint it asked for.
func desiredWorkloadObjects(pg *schedv1alpha1.PodGang, api WorkloadAPI) (workloadObjects, error) {
	var out workloadObjects
	if err := checkExpressible(pg, api); err != nil {
		return out, fmt.Errorf("PodGang %s/%s: %w", pg.Namespace, pg.Name, err)
	}
	if len(pg.Spec.PodGroups) == 0 {
		return out, nil
	}
	objectMeta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Namespace:       pg.Namespace,
			Name:            name,
			Labels:          thirdparty.ManagedLabels(map[string]string{common.LabelPodGang: common.ShortenLabelValue(pg.Name)}),
			OwnerReferences: []metav1.OwnerReference{thirdparty.ControllerReference(pg, podGangGVK)},
		}
	}
	groupNames := map[string]bool{}
	for _, g := range pg.Spec.PodGroups {
		groupNames[g.Name] = true
	}
	// parentOf is the CompositePodGroup each PodGroup belongs to, with CompositePodGroups.
	parentOf := map[string]string{}
	if api.CompositePodGroups {
		root := CompositePodGroupName(pg.Name)
		var nested []*schedulingv1alpha3.CompositePodGroup
		for _, gc := range pg.Spec.TopologyConstraintGroupConfigs {
			key := gc.TopologyConstraint.Required()
			if key == "" {
				continue // nothing to pack: its PodGroups stay direct children of the PodGang's
			}
			name := GroupConfigCompositePodGroupName(pg.Name, gc.Name)
			for _, member := range gc.PodGroupNames {
				if !groupNames[member] {
					return out, fmt.Errorf("PodGang %s/%s: topologyConstraintGroupConfig %q names PodGroup %q, which the PodGang does not have", pg.Namespace, pg.Name, gc.Name, member)
				}
				if other := parentOf[member]; other != "" {
					return out, fmt.Errorf("PodGang %s/%s: PodGroup %q is in two packed topologyConstraintGroupConfigs (CompositePodGroups %s and %s)", pg.Namespace, pg.Name, member, other, name)
				}
				parentOf[member] = name
			}
			if len(gc.PodGroupNames) == 0 {
				continue
			}
			nested = append(nested, &schedulingv1alpha3.CompositePodGroup{
				ObjectMeta: objectMeta(name),
				Spec: schedulingv1alpha3.CompositePodGroupSpec{
					ParentCompositePodGroupName: ptr.To(root),
					WorkloadRef:                 &schedulingv1alpha3.WorkloadReference{WorkloadName: pg.Name, TemplateName: WorkloadTemplateGroupConfig},
					SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{
						Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: int32(len(gc.PodGroupNames))}},
					SchedulingConstraints: &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{
						Topology: []schedulingv1alpha3.TopologyConstraint{{Key: key}}},
					PriorityClassName: pg.Spec.PriorityClassName,
				},
			})
		}
		// The PodGang's gang needs every child: each PodGroup not in a packed group config and
		// each packed group config.
		children := len(nested)
		for _, g := range pg.Spec.PodGroups {
			if parentOf[g.Name] == "" {
				parentOf[g.Name] = root
				children++
			}
		}
		rootCPG := &schedulingv1alpha3.CompositePodGroup{
			ObjectMeta: objectMeta(root),
			Spec: schedulingv1alpha3.CompositePodGroupSpec{
				WorkloadRef: &schedulingv1alpha3.WorkloadReference{WorkloadName: pg.Name, TemplateName: WorkloadTemplatePodGang},
				SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{
					Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: int32(children)}},
				PriorityClassName: pg.Spec.PriorityClassName,
			},
		}
		if key := pg.Spec.TopologyConstraint.Required(); key != "" {
			rootCPG.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{
				Topology: []schedulingv1alpha3.TopologyConstraint{{Key: key}}}
		}
		out.compositePodGroups = append([]*schedulingv1alpha3.CompositePodGroup{rootCPG}, nested...)
	}
	seen := map[string]string{}
	for _, g := range pg.Spec.PodGroups {
		name := PodGroupName(pg.Name, g.Name)
		if other, dup := seen[name]; dup {
			return out, fmt.Errorf("PodGang %s/%s: PodGroups %q and %q map to one scheduling.k8s.io PodGroup %q", pg.Namespace, pg.Name, other, g.Name, name)
		}
		seen[name] = g.Name
		if g.MinReplicas < 1 {
			return out, fmt.Errorf("PodGang %s/%s: PodGroup %q has minReplicas %d; a gang needs at least one pod", pg.Namespace, pg.Name, g.Name, g.MinReplicas)
		}
		spec := schedulingv1beta1.PodGroupSpec{
			SchedulingPolicy:  schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: g.MinReplicas}},
			PriorityClassName: pg.Spec.PriorityClassName,
		}
		if key := g.TopologyConstraint.Required(); key != "" {
			spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
		}
		if parent := parentOf[g.Name]; parent != "" {
			spec.ParentCompositePodGroupName = ptr.To(parent)
			spec.WorkloadRef = &schedulingv1beta1.WorkloadReference{WorkloadName: pg.Name, TemplateName: WorkloadTemplatePodClique}
		}
		out.podGroups = append(out.podGroups, &schedulingv1beta1.PodGroup{ObjectMeta: objectMeta(name), Spec: spec})
	}
	return out, nil
}

// checkExpressible fails on a constraint the served API cannot express.
func checkExpressible(pg *schedv1alpha1.PodGang, api WorkloadAPI) error {
	type constraint struct {
		what       string
		tc         *schedv1alpha1.TopologyConstraint
		multiGroup bool
	}
	all := []constraint{{"the PodGang", pg.Spec.TopologyConstraint, true}}
	for _, gc := range pg.Spec.TopologyConstraintGroupConfigs {
		all = append(all, constraint{fmt.Sprintf("topologyConstraintGroupConfig %q", gc.Name), gc.TopologyConstraint, true})
	}
	for _, g := range pg.Spec.PodGroups {
		all = append(all, constraint{fmt.Sprintf("PodGroup %q", g.Name), g.TopologyConstraint, false})
	}
	for _, c := range all {
		if key := c.tc.Preferred(); key != "" {
			return fmt.Errorf("%s prefers topology key %q; the Workload API expresses only required keys", c.what, key)
		}
		key := c.tc.Required()
		switch {
		case key == "":
		case !api.TopologyConstraints:
			return fmt.Errorf("%s requires topology key %q; the apiserver does not keep PodGroup topology constraints (feature gate TopologyAwareWorkloadScheduling)", c.what, key)
		case c.multiGroup && !api.CompositePodGroups:
			return fmt.Errorf("%s requires topology key %q across PodGroups; that needs CompositePodGroups (scheduling.k8s.io/v1alpha3), which the apiserver does not serve", c.what, key)
		}
	}
	return nil
}

// podGroupImmutableChange names the first immutable field of a PodGroup that must change
// ("" when none). A priorityClassName Grove leaves empty is not compared: admission may
// have set the cluster's default.
func podGroupImmutableChange(existingObj, desiredObj client.Object) string {
	existing, desired := existingObj.(*schedulingv1beta1.PodGroup).Spec, desiredObj.(*schedulingv1beta1.PodGroup).Spec
	switch {
	case !equality.Semantic.DeepEqual(existing.ParentCompositePodGroupName, desired.ParentCompositePodGroupName):
		return "spec.parentCompositePodGroupName"
	case !equality.Semantic.DeepEqual(existing.WorkloadRef, desired.WorkloadRef):
		return "spec.workloadRef"
	case !equality.Semantic.DeepEqual(existing.SchedulingConstraints, desired.SchedulingConstraints):
		return "spec.schedulingConstraints"
	case (existing.SchedulingPolicy.Gang == nil) != (desired.SchedulingPolicy.Gang == nil):
		return "spec.schedulingPolicy"
	case desired.PriorityClassName != "" && existing.PriorityClassName != desired.PriorityClassName:
		return "spec.priorityClassName"
	}
	return ""
}

// compositePodGroupImmutableChange is podGroupImmutableChange for a CompositePodGroup, whose
// whole schedulingPolicy (minGroupCount included) is immutable.
func compositePodGroupImmutableChange(existingObj, desiredObj client.Object) string {
	existing, desired := existingObj.(*schedulingv1alpha3.CompositePodGroup).Spec, desiredObj.(*schedulingv1alpha3.CompositePodGroup).Spec
	switch {
	case !equality.Semantic.DeepEqual(existing.ParentCompositePodGroupName, desired.ParentCompositePodGroupName):
		return "spec.parentCompositePodGroupName"
	case !equality.Semantic.DeepEqual(existing.WorkloadRef, desired.WorkloadRef):
		return "spec.workloadRef"
	case !equality.Semantic.DeepEqual(existing.SchedulingConstraints, desired.SchedulingConstraints):
		return "spec.schedulingConstraints"
	case !equality.Semantic.DeepEqual(existing.SchedulingPolicy, desired.SchedulingPolicy):
		return "spec.schedulingPolicy"
	case desired.PriorityClassName != "" && existing.PriorityClassName != desired.PriorityClassName:
		return "spec.priorityClassName"
	}
	return ""
}

// apply server-side applies desired unless an object of its name is being deleted or is not
// controlled by the PodGang; one whose immutable fields must change is deleted first. It
// fails when the apiserver dropped a field Grove set (a disabled feature gate).
func (b *Backend) apply(ctx context.Context, pg *schedv1alpha1.PodGang, desired, existing client.Object,
	gvk schema.GroupVersionKind, immutableChange func(existing, desired client.Object) string) error {
	key := client.ObjectKeyFromObject(desired)
	err := b.reader.Get(ctx, key, existing)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	case existing.GetDeletionTimestamp() != nil:
		return fmt.Errorf("%s %s is being deleted (pods that still use it keep it); it is created anew once it is gone", gvk.Kind, key)
	case !thirdparty.IsControlledBy(existing, pg.UID):
		return &thirdparty.NotOwnedError{GVK: gvk, Key: key}
	default:
		if changed := immutableChange(existing, desired); changed != "" {
			if err := b.replace(ctx, existing, gvk, changed); err != nil {
				return err
			}
		}
	}
	u, err := toUnstructured(desired, gvk)
	if err != nil {
		return err
	}
	if err := thirdparty.Apply(ctx, b.client, u); err != nil {
		return fmt.Errorf("applying %s %s: %w", gvk.Kind, key, err)
	}
	if dropped := droppedFields(desired, u); dropped != "" {
		return fmt.Errorf("the apiserver dropped %s of %s %s: the feature gate it needs is off", dropped, gvk.Kind, key)
	}
	return nil
}

// replace deletes an object whose immutable field must change, so that apply creates it
// anew. A PodGroup stays until the pods that use it are gone (podgroup-protection finalizer):
// then the error asks for a retry instead of applying to the object being deleted.
func (b *Backend) replace(ctx context.Context, existing client.Object, gvk schema.GroupVersionKind, changed string) error {
	key := client.ObjectKeyFromObject(existing)
	if err := b.client.Delete(ctx, existing, client.Preconditions{UID: ptr.To(existing.GetUID())}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s to change its immutable %s: %w", gvk.Kind, key, changed, err)
	}
	b.log.Info("deleted a Workload API object to create it anew: an immutable field changed", "kind", gvk.Kind, "object", key, "field", changed)
	err := b.reader.Get(ctx, key, existing)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
	}
	return fmt.Errorf("%s %s: %s is immutable and changed; the object is being deleted and is created anew once the pods that use it are gone",
		gvk.Kind, key, changed)
}

// droppedFields names the topology or parent field Grove set that the applied object lacks.
func droppedFields(desired client.Object, applied *unstructured.Unstructured) string {
	want, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return ""
	}
	for _, f := range [][]string{{"spec", "schedulingConstraints"}, {"spec", "parentCompositePodGroupName"}} {
		_, set, _ := unstructured.NestedFieldNoCopy(want, f...)
		_, kept, _ := unstructured.NestedFieldNoCopy(applied.Object, f...)
		if set && !kept {
			return f[len(f)-1]
		}
	}
	return ""
}

// toUnstructured is desired as an apply configuration: its set fields only, no status.
func toUnstructured(desired client.Object, gvk schema.GroupVersionKind) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(desired)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// deleteStale deletes the objects of a kind the PodGang controls and no longer wants.
func (b *Backend) deleteStale(ctx context.Context, pg *schedv1alpha1.PodGang, list client.ObjectList, gvk schema.GroupVersionKind, keep map[string]bool) error {
	if err := b.reader.List(ctx, list, client.InNamespace(pg.Namespace),
		client.MatchingLabels{common.LabelPodGang: common.ShortenLabelValue(pg.Name)}); err != nil {
		return fmt.Errorf("listing the %ss of PodGang %s/%s: %w", gvk.Kind, pg.Namespace, pg.Name, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		obj := item.(client.Object)
		if keep[obj.GetName()] || !thirdparty.IsControlledBy(obj, pg.UID) || obj.GetDeletionTimestamp() != nil {
			continue
		}
		if err := b.client.Delete(ctx, obj, client.Preconditions{UID: ptr.To(obj.GetUID())}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting stale %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		b.log.V(1).Info("deleted the Workload API object of a removed group", "kind", gvk.Kind, "object", client.ObjectKeyFromObject(obj))
	}
	return nil
}
