// Package thirdparty writes objects of other schedulers' APIs. Their Go modules are not
// imported, so the objects are unstructured; every write is a server-side apply, which the
// apiserver checks against the installed CRD's schema (an unknown field is an error, not
// silently pruned) and which keeps the fields other managers own (status, fields Grove
// leaves unset).
package thirdparty

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// FieldOwner is the field manager of everything Grove applies.
const FieldOwner = common.LabelManagedByValue

// NotOwnedError reports an existing object of the name Grove wants that Grove does not control.
type NotOwnedError struct {
	GVK schema.GroupVersionKind
	Key client.ObjectKey
}

func (e *NotOwnedError) Error() string {
	name := e.Key.Name
	if e.Key.Namespace != "" {
		name = e.Key.Namespace + "/" + name
	}
	return fmt.Sprintf("%s %s exists and is not managed by Grove; Grove does not overwrite it", e.GVK.Kind, name)
}

// New returns an empty unstructured object of a kind, named key.
func New(gvk schema.GroupVersionKind, key client.ObjectKey) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(key.Namespace)
	u.SetName(key.Name)
	return u
}

// Get reads an object; found is false when it does not exist.
func Get(ctx context.Context, r client.Reader, gvk schema.GroupVersionKind, key client.ObjectKey) (obj *unstructured.Unstructured, found bool, err error) {
	obj = New(gvk, key)
	if err := r.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return obj, true, nil
}

// ApplyControlled applies desired unless an object of its name exists that the owner with
// ownerUID does not control.
func ApplyControlled(ctx context.Context, c client.Client, desired *unstructured.Unstructured, ownerUID types.UID) error {
	key := client.ObjectKeyFromObject(desired)
	existing, found, err := Get(ctx, c, desired.GroupVersionKind(), key)
	if err != nil {
		return err
	}
	if found && !IsControlledBy(existing, ownerUID) {
		return &NotOwnedError{GVK: desired.GroupVersionKind(), Key: key}
	}
	return Apply(ctx, c, desired)
}

// Apply server-side applies desired as Grove, taking over fields another manager changed.
func Apply(ctx context.Context, c client.Client, desired *unstructured.Unstructured) error {
	return c.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// IsControlledBy reports whether obj's controller owner reference has the given UID.
func IsControlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// ControllerReference makes owner the controller of a dependent. BlockOwnerDeletion is left
// unset: it would need update permission on the owner's finalizers and nothing waits on it.
func ControllerReference(owner client.Object, gvk schema.GroupVersionKind) metav1.OwnerReference {
	controller := true
	return metav1.OwnerReference{
		APIVersion: gvk.GroupVersion().String(),
		Kind:       gvk.Kind,
		Name:       owner.GetName(),
		UID:        owner.GetUID(),
		Controller: &controller,
	}
}

// ManagedLabels are put on every third-party object Grove writes.
func ManagedLabels(extra map[string]string) map[string]string {
	l := map[string]string{common.LabelManagedByKey: common.LabelManagedByValue}
	for k, v := range extra {
		l[k] = v
	}
	return l
}
