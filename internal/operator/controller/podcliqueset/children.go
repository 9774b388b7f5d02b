package podcliqueset

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// childKind names a kind of child the reconcile observes.
type childKind int

const (
	childPodCliques childKind = iota
	childScalingGroups
	childPodGangs
	childPods
	childKinds
)

// children is what one reconcile observed of the PodCliqueSet's PodCliques, scaling groups,
// PodGangs and pods (everything carrying its default labels, from the cache). Each kind is listed
// once, by the first component that asks, and the later components read the same list. A
// component that creates, changes or deletes children of a kind calls wrote(kind): the next
// reader then lists that kind again rather than act on what this reconcile already replaced.
// Lists are shared: readers must not modify the objects.
type children struct {
	reader    client.Reader
	namespace string
	labels    map[string]string

	mu    sync.Mutex
	lists [childKinds]client.ObjectList
}

func newChildren(reader client.Reader, pcs *corev1alpha1.PodCliqueSet) *children {
	return &children{reader: reader, namespace: pcs.Namespace, labels: apicommon.DefaultLabels(pcs.Name)}
}

// wrote marks kind as changed by this reconcile. Safe for concurrent use (slow-start batches).
func (c *children) wrote(kind childKind) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists[kind] = nil
}

func (c *children) list(ctx context.Context, kind childKind, empty func() client.ObjectList, opts ...client.ListOption) (client.ObjectList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.lists[kind]; l != nil {
		return l, nil
	}
	l := empty()
	if err := common.ListManaged(ctx, c.reader, l, c.namespace, c.labels, apicommon.LabelPartOfKey, opts...); err != nil {
		return nil, err
	}
	c.lists[kind] = l
	return l, nil
}

// podCliques are the PodCliques carrying the PodCliqueSet's labels (its own and its scaling
// groups'), the informer's own objects like pods: each carries a whole pod template, and a
// reconcile during a rollout of a large PodCliqueSet spent a tenth of its time copying them.
// They must never be modified; a writer copies the PodClique first.
func (c *children) podCliques(ctx context.Context) ([]corev1alpha1.PodClique, error) {
	l, err := c.list(ctx, childPodCliques, func() client.ObjectList { return &corev1alpha1.PodCliqueList{} }, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	return l.(*corev1alpha1.PodCliqueList).Items, nil
}

func (c *children) scalingGroups(ctx context.Context) ([]corev1alpha1.PodCliqueScalingGroup, error) {
	l, err := c.list(ctx, childScalingGroups, func() client.ObjectList { return &corev1alpha1.PodCliqueScalingGroupList{} })
	if err != nil {
		return nil, err
	}
	return l.(*corev1alpha1.PodCliqueScalingGroupList).Items, nil
}

func (c *children) podGangs(ctx context.Context) ([]schedv1alpha1.PodGang, error) {
	l, err := c.list(ctx, childPodGangs, func() client.ObjectList { return &schedv1alpha1.PodGangList{} })
	if err != nil {
		return nil, err
	}
	return l.(*schedv1alpha1.PodGangList).Items, nil
}

// pods are the pods carrying the PodCliqueSet's labels, the informer's own objects: not copied,
// because a reconcile of a large PodCliqueSet spent most of its time copying its pods. They
// must never be modified; a writer copies the pod first.
func (c *children) pods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := c.list(ctx, childPods, func() client.ObjectList { return &corev1.PodList{} }, client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	return l.(*corev1.PodList).Items, nil
}

// ownedPodGangs are the PodGangs the PodCliqueSet controls (component podgang).
func (c *children) ownedPodGangs(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) ([]*schedv1alpha1.PodGang, error) {
	items, err := c.podGangs(ctx)
	if err != nil {
		return nil, err
	}
	var out []*schedv1alpha1.PodGang
	for i := range items {
		if controlledAs(&items[i], pcs, apicommon.ComponentPodGang) {
			out = append(out, &items[i])
		}
	}
	return out, nil
}

// ownedScalingGroups are the PodCliqueScalingGroups the PodCliqueSet controls.
func (c *children) ownedScalingGroups(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) ([]*corev1alpha1.PodCliqueScalingGroup, error) {
	items, err := c.scalingGroups(ctx)
	if err != nil {
		return nil, err
	}
	var out []*corev1alpha1.PodCliqueScalingGroup
	for i := range items {
		if controlledAs(&items[i], pcs, apicommon.ComponentPodCliqueScalingGroup) {
			out = append(out, &items[i])
		}
	}
	return out, nil
}

// controlledAs: obj is of the component and the PodCliqueSet controls it (objects that only look like
// ours are never touched).
func controlledAs(obj client.Object, pcs *corev1alpha1.PodCliqueSet, component string) bool {
	return child(pcs, component, "").Owns(obj)
}

// child is the common.Child of one of the PodCliqueSet's components; field is the PodCliqueSet
// field its name comes from.
func child(pcs *corev1alpha1.PodCliqueSet, component, field string) common.Child {
	return common.Child{Owner: pcs, PodCliqueSet: pcs.Name, Component: component, Field: field}
}
