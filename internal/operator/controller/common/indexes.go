package common

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The reconcilers list a clique's pods, a PodCliqueSet's children and a scaling group's
// members by label on every pass. The informer cache can only select a namespace, so without
// an index each such List tested the labels of every object in it: with a 1000-pod
// PodCliqueSet that was a third of the operator's CPU while applying it. These indexes key the
// objects grove-operator manages (app.kubernetes.io/managed-by=grove-operator) by the value of
// one label.
var labelIndexes = []struct {
	obj  client.Object
	keys []string
}{
	{&corev1.Pod{}, []string{apicommon.LabelPartOfKey, apicommon.LabelPodClique, apicommon.LabelPodGang, apicommon.LabelPodCliqueScalingGroup}},
	{&corev1alpha1.PodClique{}, []string{apicommon.LabelPartOfKey, apicommon.LabelPodCliqueScalingGroup, apicommon.LabelBasePodGang}},
	{&corev1alpha1.PodCliqueScalingGroup{}, []string{apicommon.LabelPartOfKey}},
	{&schedv1alpha1.PodGang{}, []string{apicommon.LabelPartOfKey}},
}

// LabelIndex is the name of the cache index of managed objects by the value of label key.
func LabelIndex(key string) string { return "grove.io/label:" + key }

// IndexManagedLabel is the index function of LabelIndex(key).
func IndexManagedLabel(key string) client.IndexerFunc {
	return func(obj client.Object) []string {
		l := obj.GetLabels()
		if l[apicommon.LabelManagedByKey] != apicommon.LabelManagedByValue {
			return nil
		}
		if v, ok := l[key]; ok {
			return []string{v}
		}
		return nil
	}
}

// RegisterLabelIndexes adds the label indexes to the cache; call it once, before the cache
// starts.
func RegisterLabelIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, ix := range labelIndexes {
		for _, key := range ix.keys {
			if err := indexer.IndexField(ctx, ix.obj, LabelIndex(key), IndexManagedLabel(key)); err != nil {
				return fmt.Errorf("indexing %T by label %s: %w", ix.obj, key, err)
			}
		}
	}
	return nil
}

// ListManaged lists the managed objects of namespace that carry every label of sel, through the
// cache's index on sel[indexed]; only the few objects the index yields are matched against the
// rest of sel. sel must hold indexed, and the list's kind must have that index
// (RegisterLabelIndexes).
func ListManaged(ctx context.Context, reader client.Reader, list client.ObjectList, namespace string, sel map[string]string, indexed string, opts ...client.ListOption) error {
	v, ok := sel[indexed]
	if !ok {
		return fmt.Errorf("listing by the index of label %s: the selector %v does not hold it", indexed, sel)
	}
	opts = append(opts, client.InNamespace(namespace), client.MatchingFields{LabelIndex(indexed): v})
	// The index already holds the indexed label and managed-by.
	rest := maps.Clone(sel)
	delete(rest, indexed)
	delete(rest, apicommon.LabelManagedByKey)
	if len(rest) > 0 {
		opts = append(opts, client.MatchingLabels(rest))
	}
	return reader.List(ctx, list, opts...)
}
