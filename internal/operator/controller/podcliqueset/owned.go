package podcliqueset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// listOwned lists (from the cache) the objects of a component that the PodCliqueSet controls.
// Objects that only look like ours (labels without the controller reference) are never
// touched.
func listOwned(ctx context.Context, c client.Client, pcs *corev1alpha1.PodCliqueSet, list client.ObjectList, component string) ([]client.Object, error) {
	if err := c.List(ctx, list, client.InNamespace(pcs.Namespace), client.MatchingLabels(common.ComponentLabels(pcs.Name, component))); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	var owned []client.Object
	for _, item := range items {
		obj, ok := item.(client.Object)
		if ok && controlledAs(obj, pcs, component) {
			owned = append(owned, obj)
		}
	}
	return owned, nil
}

// anyUnwanted reports whether deleteUnwanted would delete anything.
func anyUnwanted(owned []client.Object, wanted map[string]bool) bool {
	for _, obj := range owned {
		if !wanted[obj.GetName()] {
			return true
		}
	}
	return false
}

// deleteUnwanted deletes the owned objects whose names are not wanted, in slow-start batches
// (a scale-in of hundreds of replicas is not hundreds of round trips one after another).
func deleteUnwanted(ctx context.Context, c client.Client, owned []client.Object, wanted map[string]bool) error {
	var unwanted []client.Object
	for _, obj := range owned {
		if !wanted[obj.GetName()] {
			unwanted = append(unwanted, obj)
		}
	}
	_, err := common.SlowStart(ctx, len(unwanted), func(ctx context.Context, i int) error { return common.Delete(ctx, c, unwanted[i]) })
	return err
}

// deleteOwned deletes every owned object of a component (the PodCliqueSet is being deleted).
func deleteOwned(ctx context.Context, c client.Client, pcs *corev1alpha1.PodCliqueSet, list client.ObjectList, component string) error {
	owned, err := listOwned(ctx, c, pcs, list, component)
	if err != nil {
		return err
	}
	return deleteUnwanted(ctx, c, owned, nil)
}
