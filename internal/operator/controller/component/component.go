// Package component is the shape every Grove reconciler shares: a reconciler owns an object
// of kind T and keeps a list of named components (one kind of child object each) in sync
// with it, in dependency order.
package component

import (
	"context"
	"errors"
	"fmt"
)

// Component keeps one kind of child object of an owner T in sync.
type Component[T any] interface {
	// Name identifies the component in errors and logs.
	Name() string
	// Sync makes the component's objects match the owner. It must be idempotent.
	Sync(ctx context.Context, owner T) error
	// Delete removes the component's objects while the owner is being deleted.
	Delete(ctx context.Context, owner T) error
}

// Error is a component failure, naming the component.
type Error struct {
	Component string
	Err       error
}

func (e *Error) Error() string { return fmt.Sprintf("component %s: %v", e.Component, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// SyncAll syncs the components in order and stops at the first failure: later components
// depend on earlier ones (pods need their PodClique, a RoleBinding its Role).
func SyncAll[T any](ctx context.Context, owner T, components ...Component[T]) error {
	for _, c := range components {
		if err := c.Sync(ctx, owner); err != nil {
			return &Error{Component: c.Name(), Err: err}
		}
	}
	return nil
}

// DeleteAll deletes the components in the order given and reports every failure.
func DeleteAll[T any](ctx context.Context, owner T, components ...Component[T]) error {
	var errs []error
	for _, c := range components {
		if err := c.Delete(ctx, owner); err != nil {
			errs = append(errs, &Error{Component: c.Name(), Err: err})
		}
	}
	return errors.Join(errs...)
}
