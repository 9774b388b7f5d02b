package common

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
