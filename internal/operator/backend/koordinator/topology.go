package koordinator

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// clusterTopologyLayer is Koordinator's built-in layer of the whole cluster; it has no key.
const clusterTopologyLayer = "ClusterTopologyLayer"

// hostnameKey is the node label that stands for NodeTopologyLayer, which has no label key.
const hostnameKey = "kubernetes.io/hostname"

// TopologyGVR is Koordinator's ClusterNetworkTopology resource.
func (b *Backend) TopologyGVR() schema.GroupVersionResource { return ClusterNetworkTopologyGVR }

// ReferenceOnlyTopology marks Koordinator's topology as managed outside Grove.
func (b *Backend) ReferenceOnlyTopology() {}

// SyncTopology does nothing: Koordinator's ClusterNetworkTopology is not Grove's to write.
func (b *Backend) SyncTopology(context.Context, *corev1alpha1.ClusterTopology) error { return nil }

// OnTopologyDelete does nothing: Grove never created a ClusterNetworkTopology.
func (b *Backend) OnTopologyDelete(context.Context, *corev1alpha1.ClusterTopology) error {
	return nil
}

// CheckTopologyDrift compares a ClusterNetworkTopology's chain of layers, from the root down
// the parentTopologyLayer links, with the ClusterTopology's keys: each layer must have the
// key of the level at its position (NodeTopologyLayer stands for kubernetes.io/hostname).
func (b *Backend) CheckTopologyDrift(ctx context.Context, ct *corev1alpha1.ClusterTopology, reference string) (backend.DriftResult, error) {
	obj, found, err := thirdparty.Get(ctx, b.reader, ClusterNetworkTopologyGVK, client.ObjectKey{Name: reference})
	if err != nil {
		return backend.DriftResult{}, err
	}
	if !found {
		return backend.DriftResult{Message: fmt.Sprintf("ClusterNetworkTopology %q not found", reference)}, nil
	}
	r := backend.DriftResult{Found: true, ObservedGeneration: obj.GetGeneration()}
	keys, err := layerKeys(obj)
	switch {
	case err != nil:
		r.Message = fmt.Sprintf("ClusterNetworkTopology %q: %v", reference, err)
	case !slices.Equal(keys, ct.Spec.Keys()):
		r.Message = fmt.Sprintf("ClusterNetworkTopology %q has layer keys %q; the ClusterTopology's keys are %q", reference, keys, ct.Spec.Keys())
	default:
		r.InSync = true
	}
	return r, nil
}

type networkLayer struct {
	layer, parent string
	keys          []string
}

// layerKeys are the node label keys of a ClusterNetworkTopology's layers, broadest first.
func layerKeys(obj *unstructured.Unstructured) ([]string, error) {
	items, _, _ := unstructured.NestedSlice(obj.Object, "spec", "networkTopologySpec")
	children := map[string][]networkLayer{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		l := networkLayer{}
		l.layer, _, _ = unstructured.NestedString(m, "topologyLayer")
		l.parent, _, _ = unstructured.NestedString(m, "parentTopologyLayer")
		l.keys, _, _ = unstructured.NestedStringSlice(m, "labelKey")
		if l.layer == clusterTopologyLayer {
			continue
		}
		if l.parent == clusterTopologyLayer {
			l.parent = ""
		}
		children[l.parent] = append(children[l.parent], l)
	}
	var keys []string
	seen := map[string]bool{}
	for parent := ""; ; {
		next := children[parent]
		if len(next) == 0 {
			break
		}
		if len(next) > 1 {
			return nil, fmt.Errorf("layers %s share the parent %q; Grove compares a single chain of layers", layerNames(next), parent)
		}
		l := next[0]
		if seen[l.layer] {
			return nil, fmt.Errorf("layer %q is its own ancestor", l.layer)
		}
		seen[l.layer] = true
		switch {
		case len(l.keys) == 1:
			keys = append(keys, l.keys[0])
		case len(l.keys) == 0 && l.layer == NodeTopologyLayer:
			keys = append(keys, hostnameKey)
		default:
			return nil, fmt.Errorf("layer %q has label keys %q; Grove compares exactly one key per layer", l.layer, l.keys)
		}
		parent = l.layer
	}
	if len(seen) != countLayers(children) {
		return nil, fmt.Errorf("not every layer descends from a root layer")
	}
	return keys, nil
}

func layerNames(ls []networkLayer) []string {
	var n []string
	for _, l := range ls {
		n = append(n, l.layer)
	}
	return n
}

func countLayers(children map[string][]networkLayer) int {
	n := 0
	for _, ls := range children {
		n += len(ls)
	}
	return n
}
