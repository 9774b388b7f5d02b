package common

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
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
//
// Only the child's own object is ever patched (Child.Owns): an object of that name Grove did not
// create is left as it is and reported as a *NameConflict. Created and patched objects get the
// child's labels and controller reference after mutate.
func CreateOrPatch(ctx context.Context, c client.Client, child Child, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	res, _, err := CreateOrPatchRecorded(ctx, c, nil, child, obj, mutate)
	return res, err
}

// CreateOrPatchRecorded is CreateOrPatch for a writer that keeps a record of its writes (w; nil
// keeps none). While the cache does not show the writer's last write of the object it writes
// nothing and reports behind, and the caller comes back later: a pass running on a cache a
// create behind sent that create again (the 500×2 apply sent 574 PodClique creates for 500,
// the twins refused AlreadyExists), and a patch computed from a copy older than the last one
// can leave out a field that changed and changed back.
//
// A create refused with AlreadyExists reports behind too: either the cache does not show the
// object yet, or the cache leaves it out (a label-filtered kind) and only a later pass can tell
// whose it is.
func CreateOrPatchRecorded(ctx context.Context, c client.Client, w *OwnWrites, child Child, obj client.Object, mutate controllerutil.MutateFn) (res controllerutil.OperationResult, behind bool, err error) {
	return createOrPatch(ctx, c, w, &child, obj, mutate)
}

// CreateOrPatchConfigured is CreateOrPatch for an object the operator's configuration names
// (a managed ClusterTopology of a topology profile): the cluster admin who wrote the
// configuration decided that the object of that name is Grove's, so it is written whoever
// created it. Never use it for an object whose name a PodCliqueSet author chooses.
func CreateOrPatchConfigured(ctx context.Context, c client.Client, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	res, _, err := createOrPatch(ctx, c, nil, nil, obj, mutate)
	return res, err
}

// createOrPatch: child nil writes the object whoever created it.
func createOrPatch(ctx context.Context, c client.Client, w *OwnWrites, child *Child, obj client.Object, mutate controllerutil.MutateFn) (res controllerutil.OperationResult, behind bool, err error) {
	key := client.ObjectKeyFromObject(obj)
	before := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, key, before, client.UnsafeDisableDeepCopy); err != nil {
		if !apierrors.IsNotFound(err) {
			return controllerutil.OperationResultNone, false, err
		}
		if w.Behind(key, nil) {
			return controllerutil.OperationResultNone, true, nil
		}
		if err := mutateKeeping(key, obj, child, c.Scheme(), mutate); err != nil {
			return controllerutil.OperationResultNone, false, err
		}
		if err := c.Create(ctx, obj); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return controllerutil.OperationResultNone, true, nil
			}
			return controllerutil.OperationResultNone, false, err
		}
		w.Wrote(obj)
		return controllerutil.OperationResultCreated, false, nil
	}
	if child != nil && !child.Owns(before) {
		return controllerutil.OperationResultNone, false, child.Conflict(before, c.Scheme())
	}
	if w.Behind(key, before) {
		return controllerutil.OperationResultNone, true, nil
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(before.DeepCopyObject()).Elem())
	if err := mutateKeeping(key, obj, child, c.Scheme(), mutate); err != nil {
		return controllerutil.OperationResultNone, false, err
	}
	if equality.Semantic.DeepEqual(before, obj) {
		return controllerutil.OperationResultNone, false, nil
	}
	patch, err := client.MergeFrom(before).Data(obj)
	if err != nil {
		return controllerutil.OperationResultNone, false, err
	}
	if string(patch) == "{}" { // e.g. an empty map where there was none
		return controllerutil.OperationResultNone, false, nil
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return controllerutil.OperationResultNone, false, err
	}
	w.Wrote(obj)
	return controllerutil.OperationResultUpdated, false, nil
}

// mutateKeeping runs mutate, marks the object as the child and refuses a change of its name or
// namespace.
func mutateKeeping(key client.ObjectKey, obj client.Object, child *Child, scheme *runtime.Scheme, mutate controllerutil.MutateFn) error {
	if err := mutate(); err != nil {
		return err
	}
	if child != nil {
		if err := child.mark(obj, scheme); err != nil {
			return err
		}
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
