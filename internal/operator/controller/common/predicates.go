package common

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"slices"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// DeletionChanged passes updates that start an object's deletion or change its finalizers.
type DeletionChanged struct {
	predicate.Funcs
}

// Update implements predicate.Predicate.
func (DeletionChanged) Update(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	return (e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil) ||
		!equality.Semantic.DeepEqual(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
}

// Create implements predicate.Predicate.
func (DeletionChanged) Create(event.CreateEvent) bool { return true }

// Delete implements predicate.Predicate.
func (DeletionChanged) Delete(event.DeleteEvent) bool { return true }

// StatusChanged passes updates whose status differs (reflect-compared via the callback).
type StatusChanged[T any] struct {
	predicate.Funcs
	// Status extracts the status to compare.
	Status func(obj T) any
}

// Update implements predicate.Predicate.
func (p StatusChanged[T]) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(T)
	n, ok2 := e.ObjectNew.(T)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(p.Status(o), p.Status(n))
}

// Create implements predicate.Predicate.
func (StatusChanged[T]) Create(event.CreateEvent) bool { return true }

// Delete implements predicate.Predicate.
func (StatusChanged[T]) Delete(event.DeleteEvent) bool { return true }

// ReplicaBeingUpdatedChanged passes PodCliqueSet updates that change which replica a rolling
// update is replacing pods of.
type ReplicaBeingUpdatedChanged struct {
	predicate.Funcs
}

// Update implements predicate.Predicate.
func (ReplicaBeingUpdatedChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*corev1alpha1.PodCliqueSet)
	n, ok2 := e.ObjectNew.(*corev1alpha1.PodCliqueSet)
	if !ok1 || !ok2 {
		return false
	}
	return !slices.Equal(ReplicasBeingUpdated(o), ReplicasBeingUpdated(n))
}

// Create implements predicate.Predicate.
func (ReplicaBeingUpdatedChanged) Create(event.CreateEvent) bool { return false }

// Delete implements predicate.Predicate.
func (ReplicaBeingUpdatedChanged) Delete(event.DeleteEvent) bool { return false }

// Generic implements predicate.Predicate.
func (ReplicaBeingUpdatedChanged) Generic(event.GenericEvent) bool { return false }
