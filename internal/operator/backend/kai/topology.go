package kai

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TopologyGVR is the KAI Topology resource.
func (b *Backend) TopologyGVR() schema.GroupVersionResource { return TopologyGVR }

// SyncTopology creates the KAI Topology of a ClusterTopology, or recreates it when the levels
// changed (KAI does not allow changing them). A same-named Topology that Grove does not
// control is left alone and reported.
func (b *Backend) SyncTopology(ctx context.Context, ct *corev1alpha1.ClusterTopology) error {
	desired := desiredTopology(ct)
	existing, found, err := thirdparty.Get(ctx, b.client, TopologyGVK, client.ObjectKey{Name: ct.Name})
	if err != nil {
		return err
	}
	if found {
		if !thirdparty.IsControlledBy(existing, ct.UID) {
			return &thirdparty.NotOwnedError{GVK: TopologyGVK, Key: client.ObjectKey{Name: ct.Name}}
		}
		if !slices.Equal(topologyLevels(existing), ct.Spec.Keys()) {
			b.log.Info("recreating KAI Topology: its levels are immutable", "topology", ct.Name, "levels", ct.Spec.Keys())
			if err := b.client.Delete(ctx, existing, client.Preconditions{UID: ptr.To(existing.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting KAI Topology %s to change its levels: %w", ct.Name, err)
			}
		}
	}
	if err := thirdparty.Apply(ctx, b.client, desired); err != nil {
		return fmt.Errorf("applying KAI Topology %s: %w", ct.Name, err)
	}
	return nil
}

// OnTopologyDelete deletes the KAI Topology Grove manages for a ClusterTopology.
func (b *Backend) OnTopologyDelete(ctx context.Context, ct *corev1alpha1.ClusterTopology) error {
	existing, found, err := thirdparty.Get(ctx, b.client, TopologyGVK, client.ObjectKey{Name: ct.Name})
	if err != nil || !found {
		return err
	}
	if !thirdparty.IsControlledBy(existing, ct.UID) {
		return nil
	}
	if err := b.client.Delete(ctx, existing, client.Preconditions{UID: ptr.To(existing.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting KAI Topology %s: %w", ct.Name, err)
	}
	return nil
}

// CheckTopologyDrift compares a KAI Topology's levels with the ClusterTopology's keys.
func (b *Backend) CheckTopologyDrift(ctx context.Context, ct *corev1alpha1.ClusterTopology, reference string) (backend.DriftResult, error) {
	obj, found, err := thirdparty.Get(ctx, b.reader, TopologyGVK, client.ObjectKey{Name: reference})
	if err != nil {
		return backend.DriftResult{}, err
	}
	if !found {
		return backend.DriftResult{Message: fmt.Sprintf("KAI Topology %q not found", reference)}, nil
	}
	levels := topologyLevels(obj)
	r := backend.DriftResult{Found: true, InSync: slices.Equal(levels, ct.Spec.Keys()), ObservedGeneration: obj.GetGeneration()}
	if !r.InSync {
		r.Message = fmt.Sprintf("KAI Topology %q has levels %q; the ClusterTopology's keys are %q", reference, levels, ct.Spec.Keys())
	}
	return r, nil
}

func desiredTopology(ct *corev1alpha1.ClusterTopology) *unstructured.Unstructured {
	u := thirdparty.New(TopologyGVK, client.ObjectKey{Name: ct.Name})
	u.SetLabels(thirdparty.ManagedLabels(nil))
	u.SetOwnerReferences(append(u.GetOwnerReferences(), thirdparty.ControllerReference(ct, corev1alpha1.SchemeGroupVersion.WithKind("ClusterTopology"))))
	levels := make([]any, 0, len(ct.Spec.Levels))
	for _, k := range ct.Spec.Keys() {
		levels = append(levels, map[string]any{"nodeLabel": k})
	}
	u.Object["spec"] = map[string]any{"levels": levels}
	return u
}

// topologyLevels are the node labels of a KAI Topology, broadest first.
func topologyLevels(u *unstructured.Unstructured) []string {
	levels, _, _ := unstructured.NestedSlice(u.Object, "spec", "levels")
	keys := make([]string, 0, len(levels))
	for _, l := range levels {
		m, _ := l.(map[string]any)
		k, _ := m["nodeLabel"].(string)
		keys = append(keys, k)
	}
	return keys
}
