package resourceclaim

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// ReasonTemplateNotFound is the reason of the Warning event when a resourceSharing entry names
// a ResourceClaimTemplate that does not exist.
const ReasonTemplateNotFound = "ResourceClaimTemplateNotFound"

// ReasonClaimConflict is the reason of the Warning event when a claim's name is taken by a
// ResourceClaim Grove does not own.
const ReasonClaimConflict = apicommon.ReasonChildNameConflict

// Syncer creates, adopts and removes the claims of resourceSharing entries.
type Syncer struct {
	// Client reads claims from the cache and writes them.
	Client client.Client
	// Reader reads external ResourceClaimTemplates directly from the apiserver: they live in
	// any namespace, and are only read when a claim is created.
	Reader client.Reader
	// Recorder reports problems on the owner; optional.
	Recorder events.EventRecorder
}

// owner is one level that declares resource sharing.
type owner struct {
	obj       client.Object
	kind      string
	pcs       *corev1alpha1.PodCliqueSet
	entries   []corev1alpha1.ResourceSharingSpec
	templates []corev1alpha1.ResourceClaimTemplateConfig
}

// SyncPodCliqueSet keeps the claims of the PodCliqueSet's own entries: the AllReplicas claims
// and a PerReplica claim for each replica, and removes PerReplica claims of replicas that are
// gone. pcs is the PodCliqueSet as read (the claims' owner).
func (s *Syncer) SyncPodCliqueSet(ctx context.Context, pcs *corev1alpha1.PodCliqueSet) error {
	t := &pcs.Spec.Template
	if len(t.ResourceSharing) == 0 {
		return nil
	}
	o := owner{obj: pcs, kind: OwnerKindPodCliqueSet, pcs: pcs, entries: PodCliqueSetEntries(t), templates: t.ResourceClaimTemplates}
	replicas := int(pcs.Spec.Replicas)
	return s.sync(ctx, o, upTo(replicas), func(i int) bool { return i < replicas })
}

// SyncScalingGroup keeps the claims of a scaling group's entries for one
// PodCliqueScalingGroup, which owns them: the AllReplicas claims, a PerReplica claim for each
// group replica, and removes PerReplica claims of group replicas that are gone.
func (s *Syncer) SyncScalingGroup(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup) error {
	pcsReplica, ok := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	if !ok {
		// Not one of Grove's groups; its controller reports the missing label.
		return nil
	}
	var g *corev1alpha1.PodCliqueScalingGroupConfig
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if c := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]; apicommon.PodCliqueScalingGroupName(pcs.Name, pcsReplica, c.Name) == pcsg.Name {
			g = c
		}
	}
	if g == nil || len(g.ResourceSharing) == 0 {
		return nil
	}
	o := owner{obj: pcsg, kind: OwnerKindPodCliqueScalingGroup, pcs: pcs, entries: ScalingGroupEntries(g), templates: pcs.Spec.Template.ResourceClaimTemplates}
	replicas := int(pcsg.Spec.Replicas)
	return s.sync(ctx, o, upTo(replicas), func(i int) bool { return i < replicas })
}

// EnsurePodClique makes the claims of a clique's own entries exist for the pods with the given
// indices (the AllReplicas claims too), before those pods are created or while they live.
func (s *Syncer) EnsurePodClique(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pclq *corev1alpha1.PodClique, clique *corev1alpha1.PodCliqueTemplateSpec, podIndices []int) error {
	if len(clique.ResourceSharing) == 0 {
		return nil
	}
	o := owner{obj: pclq, kind: OwnerKindPodClique, pcs: pcs, entries: clique.ResourceSharing, templates: pcs.Spec.Template.ResourceClaimTemplates}
	return s.ensureAll(ctx, o, podIndices)
}

// CleanupPodClique removes the PerReplica claims of a PodClique whose pod index is not kept
// (no pod of the clique has it any more).
func (s *Syncer) CleanupPodClique(ctx context.Context, pclq *corev1alpha1.PodClique, keep func(podIndex int) bool) error {
	return s.cleanup(ctx, common.PodCliqueSetName(pclq), OwnerKindPodClique, pclq, keep)
}

func (s *Syncer) sync(ctx context.Context, o owner, replicas []int, keep func(int) bool) error {
	return errors.Join(s.ensureAll(ctx, o, replicas), s.cleanup(ctx, o.pcs.Name, o.kind, o.obj, keep))
}

func (s *Syncer) ensureAll(ctx context.Context, o owner, replicas []int) error {
	var errs []error
	for _, e := range o.entries {
		if e.Scope == corev1alpha1.ResourceSharingScopePerReplica {
			for _, i := range replicas {
				errs = append(errs, s.ensure(ctx, o, e, i))
			}
		} else {
			errs = append(errs, s.ensure(ctx, o, e, 0))
		}
	}
	return errors.Join(errs...)
}

// ensure creates a claim from its template, or brings an existing claim's labels up to date (a
// claim's spec is immutable). A claim of that name that Grove did not create for this owner
// (common.Child) is left alone, never adopted, and reported.
func (s *Syncer) ensure(ctx context.Context, o owner, e corev1alpha1.ResourceSharingSpec, replica int) error {
	name := ClaimName(o.obj.GetName(), e, replica)
	want := Labels(o.pcs.Name, o.kind, o.obj.GetName(), e, replica)
	rc := &resourcev1.ResourceClaim{}
	err := s.Client.Get(ctx, client.ObjectKey{Namespace: o.obj.GetNamespace(), Name: name}, rc)
	if apierrors.IsNotFound(err) {
		return s.create(ctx, o, e, name, want)
	}
	if err != nil {
		return err
	}
	if !o.child(e).Owns(rc) {
		return s.conflict(o, e, rc)
	}
	orig := rc.DeepCopy()
	rc.Labels = common.WithLabels(rc.Labels, want)
	if maps.Equal(orig.Labels, rc.Labels) {
		return nil
	}
	return client.IgnoreNotFound(s.Client.Patch(ctx, rc, client.MergeFrom(orig)))
}

// child is what makes a claim of the entry the owner's (common.Child).
func (o owner) child(e corev1alpha1.ResourceSharingSpec) common.Child {
	return common.Child{Owner: o.obj, PodCliqueSet: o.pcs.Name, Component: apicommon.ComponentResourceClaim,
		Field: fmt.Sprintf("resourceSharing name %q of %s %s", e.Name, o.kind, o.obj.GetName())}
}

func (s *Syncer) create(ctx context.Context, o owner, e corev1alpha1.ResourceSharingSpec, name string, want map[string]string) error {
	tpl, err := s.resolve(ctx, o, e)
	if err != nil {
		return err
	}
	rc := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   o.obj.GetNamespace(),
			Labels:      common.WithLabels(tpl.Labels, want),
			Annotations: maps.Clone(tpl.Annotations),
		},
		Spec: *tpl.Spec.DeepCopy(),
	}
	if err := controllerutil.SetControllerReference(o.obj, rc, s.Client.Scheme()); err != nil {
		return err
	}
	err = s.Client.Create(ctx, rc)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating ResourceClaim %s: %w", name, err)
		}
		return nil
	}
	// The cache is behind, or the name is taken by a claim the cache does not hold (it only
	// holds Grove's): look at the claim itself.
	existing := &resourcev1.ResourceClaim{}
	if err := s.Reader.Get(ctx, client.ObjectKeyFromObject(rc), existing); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !o.child(e).Owns(existing) {
		return s.conflict(o, e, existing)
	}
	// Ours: the cache will show it and the next reconcile updates it.
	return nil
}

// conflict reports a claim Grove did not create that holds the name of one of the owner's
// claims, as a Warning event on the owner and a *common.NameConflict (which the PodCliqueSet
// controller turns into its NameConflict condition).
func (s *Syncer) conflict(o owner, e corev1alpha1.ResourceSharingSpec, rc *resourcev1.ResourceClaim) error {
	nc := o.child(e).Conflict(rc, s.Client.Scheme())
	s.warn(o.obj, ReasonClaimConflict, nc.Error())
	return nc
}

// resolve finds the template of an entry: with a namespace, the ResourceClaimTemplate of that
// name there; otherwise the inline template of that name, or else the ResourceClaimTemplate of
// that name in the owner's namespace.
func (s *Syncer) resolve(ctx context.Context, o owner, e corev1alpha1.ResourceSharingSpec) (*resourcev1.ResourceClaimTemplateSpec, error) {
	if e.Namespace == "" {
		for i := range o.templates {
			if o.templates[i].Name == e.Name {
				return &o.templates[i].TemplateSpec, nil
			}
		}
	}
	ns := e.Namespace
	if ns == "" {
		ns = o.obj.GetNamespace()
	}
	rct := &resourcev1.ResourceClaimTemplate{}
	if err := s.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.Name}, rct); err != nil {
		if apierrors.IsNotFound(err) {
			msg := fmt.Sprintf("resourceSharing %q: ResourceClaimTemplate %s/%s not found and no resourceClaimTemplates entry has that name", e.Name, ns, e.Name)
			s.warn(o.obj, ReasonTemplateNotFound, msg)
			return nil, errors.New(msg)
		}
		return nil, err
	}
	return &rct.Spec, nil
}

// cleanup deletes the owner's PerReplica claims whose replica is not kept. One label-selected
// list per owner; only claims the owner controls are deleted, by UID.
func (s *Syncer) cleanup(ctx context.Context, pcsName, kind string, obj client.Object, keep func(int) bool) error {
	sel := labels.SelectorFromSet(ownerSelector(pcsName, kind, obj.GetName()))
	exists, err := labels.NewRequirement(apicommon.LabelResourceClaimReplicaIndex, selection.Exists, nil)
	if err != nil {
		return err
	}
	list := &resourcev1.ResourceClaimList{}
	if err := s.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabelsSelector{Selector: sel.Add(*exists)}); err != nil {
		return err
	}
	var errs []error
	for i := range list.Items {
		rc := &list.Items[i]
		replica, ok := common.IntLabel(rc, apicommon.LabelResourceClaimReplicaIndex)
		if !ok || keep(replica) || !metav1.IsControlledBy(rc, obj) {
			continue
		}
		errs = append(errs, common.Delete(ctx, s.Client, rc))
	}
	return errors.Join(errs...)
}

func (s *Syncer) warn(obj client.Object, reason, msg string) {
	if s.Recorder != nil {
		s.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, reason, "SyncResourceClaims", "%s", msg)
	}
}

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// Deleted passes only the deletion of a claim: its owner's controller makes it again if it
// is still wanted.
func Deleted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
