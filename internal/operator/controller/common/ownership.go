package common

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

// Child is one object grove-operator writes for a PodCliqueSet. It is the one place that says
// which existing objects the operator may write and delete: those it created, i.e. that carry
// Grove's labels for this PodCliqueSet and component AND a controller reference to their owner.
// Upstream Grove writes the same labels and owner references, so its objects are taken over;
// any other object of the same name (another team's ServiceAccount, a Service someone made)
// is a name conflict: nothing is written to it, it is never deleted, and it is not adopted,
// because adopting it would make a user who may only write PodCliqueSets its owner, and its
// deletion theirs.
type Child struct {
	// Owner is the object that controls the child: the PodCliqueSet, or the scaling group or
	// PodClique that declares it.
	Owner client.Object
	// PodCliqueSet is the name of the PodCliqueSet the child belongs to (its part-of label).
	PodCliqueSet string
	// Component is the child's app.kubernetes.io/component label.
	Component string
	// Field is the path of the PodCliqueSet field its name is made from, for conflict reports.
	Field string
}

// Owns reports whether obj is this child as Grove created it.
func (c Child) Owns(obj client.Object) bool {
	return GroveLabelled(obj, c.PodCliqueSet, c.Component) && metav1.IsControlledBy(obj, c.Owner)
}

// GroveLabelled reports whether obj carries Grove's labels for a PodCliqueSet's component.
func GroveLabelled(obj client.Object, pcs, component string) bool {
	l := obj.GetLabels()
	return l[apicommon.LabelManagedByKey] == apicommon.LabelManagedByValue &&
		l[apicommon.LabelPartOfKey] == pcs && l[apicommon.LabelComponentKey] == component
}

// mark gives obj the child's identity: Grove's labels and the controller reference. Only
// objects the operator creates, or already owns, are ever marked.
func (c Child) mark(obj client.Object, scheme *runtime.Scheme) error {
	obj.SetLabels(WithLabels(obj.GetLabels(), ComponentLabels(c.PodCliqueSet, c.Component)))
	return controllerutil.SetControllerReference(c.Owner, obj, scheme)
}

// NameConflictRecheck is how often a name held by an object Grove did not create is looked at
// again: its deletion sends no event to the controller that wants the name.
const NameConflictRecheck = 10 * time.Second

// NameConflict is the error of a write refused because an object Grove did not create holds
// the child's name.
type NameConflict struct {
	Kind, Namespace, Name string
	// Field is the PodCliqueSet field the name is made from.
	Field string
}

func (e *NameConflict) Error() string {
	return fmt.Sprintf("%s %s/%s (name from %s) exists and was not created by Grove for this PodCliqueSet: it is left alone",
		e.Kind, e.Namespace, e.Name, e.Field)
}

// AsNameConflict returns the NameConflict err is or wraps, if any.
func AsNameConflict(err error) (*NameConflict, bool) {
	var nc *NameConflict
	ok := errors.As(err, &nc)
	return nc, ok
}

// Conflict is the NameConflict of obj, which holds the child's name.
func (c Child) Conflict(obj client.Object, scheme *runtime.Scheme) *NameConflict {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
		kind = gvk.Kind
	}
	return &NameConflict{Kind: kind, Namespace: obj.GetNamespace(), Name: obj.GetName(), Field: c.Field}
}
