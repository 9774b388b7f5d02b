package common

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
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
	return createOrPatch(ctx, c, &child, obj, mutate)
}

// CreateOrPatchConfigured is CreateOrPatch for an object the operator's configuration names
// (a managed ClusterTopology of a topology profile): the cluster admin who wrote the
// configuration decided that the object of that name is Grove's, so it is written whoever
// created it. Never use it for an object whose name a PodCliqueSet author chooses.
func CreateOrPatchConfigured(ctx context.Context, c client.Client, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	return createOrPatch(ctx, c, nil, obj, mutate)
}

// createOrPatch: child nil writes the object whoever created it. The cache it reads is the one
// the caller's consistency check (Writes.CaughtUp) found to show the caller's own last writes.
func createOrPatch(ctx context.Context, c client.Client, child *Child, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	key := client.ObjectKeyFromObject(obj)
	before := obj.DeepCopyObject().(client.Object)
	if err := c.Get(ctx, key, before, client.UnsafeDisableDeepCopy); err != nil {
		if !apierrors.IsNotFound(err) {
			return controllerutil.OperationResultNone, err
		}
		if err := mutateKeeping(key, obj, child, c.Scheme(), mutate); err != nil {
			return controllerutil.OperationResultNone, err
		}
		if err := c.Create(ctx, obj); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The cache leaves it out (a label-filtered kind), or another pass of this
				// writer is creating it: its event brings the owner back.
				return controllerutil.OperationResultNone, nil
			}
			return controllerutil.OperationResultNone, err
		}
		return controllerutil.OperationResultCreated, nil
	}
	if child != nil && !child.Owns(before) {
		return controllerutil.OperationResultNone, child.Conflict(before, c.Scheme())
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(before.DeepCopyObject()).Elem())
	if err := mutateKeeping(key, obj, child, c.Scheme(), mutate); err != nil {
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

// ApplyStatus writes obj's status, as the reconcile computed it, by server-side apply under
// manager: the whole status is the manager's, so a field the desired status leaves out is
// removed and nothing is diffed against a cached copy (from an older copy, a merge patch left
// out a count that changed and changed back). Only a status with a single writer may be
// applied whole; PodGang conditions have one manager each (applyPodGangCondition).
//
// Status fields an earlier writer set by update or patch (upstream Grove before a takeover, an
// operator version that merge-patched) are that writer's in managedFields, and an apply that
// leaves them out would not remove them: they are first handed to manager, once.
func ApplyStatus(ctx context.Context, c client.Client, obj client.Object, manager string) error {
	return applyStatus(ctx, c, obj, manager, false)
}

// ApplyStatusIfUnchanged is ApplyStatus conditional on obj's resourceVersion (a Conflict when
// the stored object has moved on): for a status decision that must not overwrite one a newer
// pass made from a fresher copy. Writing it by apply too, under the same manager, keeps the
// status one manager's: a merge patch of part of it made that part an updater's, and every
// later apply first handed it back with a patch of managedFields.
func ApplyStatusIfUnchanged(ctx context.Context, c client.Client, obj client.Object, manager string) error {
	return applyStatus(ctx, c, obj, manager, true)
}

func applyStatus(ctx context.Context, c client.Client, obj client.Object, manager string, locked bool) error {
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	// After the conversion: the patch's response replaces obj's status with the stored one.
	if err := adoptStatusFields(ctx, c, obj, manager); err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": content["status"]}}
	u.SetGroupVersionKind(gvk)
	u.SetName(obj.GetName())
	u.SetNamespace(obj.GetNamespace())
	if locked {
		u.SetResourceVersion(obj.GetResourceVersion())
	}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return err
	}
	obj.SetResourceVersion(u.GetResourceVersion())
	return nil
}

// adoptStatusFields hands the status fields that managers writing by update own to manager
// (client-go's csaupgrade), so that its applies own the whole status.
func adoptStatusFields(ctx context.Context, c client.Client, obj client.Object, manager string) error {
	updaters := sets.New[string]()
	for _, f := range obj.GetManagedFields() {
		if f.Subresource == "status" && f.Operation == metav1.ManagedFieldsOperationUpdate {
			updaters.Insert(f.Manager)
		}
	}
	if updaters.Len() == 0 {
		return nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(obj, updaters, manager, csaupgrade.Subresource("status"))
	if err != nil || patch == nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
}
