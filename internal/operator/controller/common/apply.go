package common

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// CreateOrPatch creates obj when the cache does not have it, or patches what mutate changes.
// AlreadyExists means the cache is behind: the create event will bring the reconciler back.
func CreateOrPatch(ctx context.Context, c client.Client, obj client.Object, mutate controllerutil.MutateFn) (controllerutil.OperationResult, error) {
	res, err := controllerutil.CreateOrPatch(ctx, c, obj, mutate)
	if apierrors.IsAlreadyExists(err) {
		return controllerutil.OperationResultNone, nil
	}
	return res, err
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
