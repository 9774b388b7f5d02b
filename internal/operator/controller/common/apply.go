package common

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// CreateOrPatch creates obj when the cache does not have it, or patches what mutate changes
// (a JSON merge patch, as controllerutil.CreateOrPatch sends). AlreadyExists means the cache is
// behind: the create event will bring the reconciler back. Unlike controllerutil's, an unchanged
// object costs a deep comparison, not two conversions to unstructured and a diff: reconcilers
// call it for every child on every pass, and at hundreds of children those conversions were
// the operator's largest CPU cost. mutate must not change the object's status.
//
// The stored object is read from the cache without a copy (the comparison's "before", never
// written to) and copied once into obj for mutate: a copying read and a second copy for the
// comparison were the scaling-group controller's largest CPU cost in a rolling update.
func CreateOrPatch(ctx context.Context, c client.Client, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	key := client.ObjectKeyFromObject(obj)
	before := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, key, before, client.UnsafeDisableDeepCopy); err != nil {
		if !apierrors.IsNotFound(err) {
			return controllerutil.OperationResultNone, err
		}
		if err := mutateKeeping(key, obj, mutate); err != nil {
			return controllerutil.OperationResultNone, err
		}
		if err := c.Create(ctx, obj); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return controllerutil.OperationResultNone, nil
			}
			return controllerutil.OperationResultNone, err
		}
		return controllerutil.OperationResultCreated, nil
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(before.DeepCopyObject()).Elem())
	if err := mutateKeeping(key, obj, mutate); err != nil {
		return controllerutil.OperationResultNone, err
	}
	if equality.Semantic.DeepEqual(before, obj) {
		return controllerutil.OperationResultNone, nil
	}
	patch, err := client.MergeFrom(before).Data(obj)
	if err != nil {
		return controllerutil.OperationResultNone, err
	}
	if string(patch) == "{}" { // e.g. an empty map where there was none
		return controllerutil.OperationResultNone, nil
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return controllerutil.OperationResultNone, err
	}
	return controllerutil.OperationResultUpdated, nil
}

// mutateKeeping runs mutate and refuses a change of the object's name or namespace.
func mutateKeeping(key client.ObjectKey, obj client.Object, mutate controllerutil.MutateFn) error {
	if err := mutate(); err != nil {
		return err
	}
	if client.ObjectKeyFromObject(obj) != key {
		return fmt.Errorf("%s: the mutate function renamed the object to %s", key, client.ObjectKeyFromObject(obj))
	}
	return nil
}

// Delete deletes the object seen in the cache (by UID, so a newer object of the same name is
// left alone) unless it is already going away.
func Delete(ctx context.Context, c client.Client, obj client.Object) error {
	if IsTerminating(obj) {
		return nil
	}
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}
