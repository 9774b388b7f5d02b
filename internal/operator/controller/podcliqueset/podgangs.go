package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	groveclient "github.com/ai-dynamo/grove/pkg/client"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/controller/common"
)

// podGangs keeps the PodGangs of a PodCliqueSet: their groups, the pods each group references,
// topology keys and the Initialized condition; it hands each PodGang to the scheduler backend
// when it is created or its spec changes.
type podGangs struct{ r *Reconciler }

func (*podGangs) Name() string { return "podgang" }

func (c *podGangs) Sync(ctx context.Context, st *state) error {
	// The plan is what the cache showed at this instant: whether an incomplete gang is due is
	// judged at it, not when its turn comes in the batches below. Seconds into a long pass the
	// grace had run out for gangs whose last pods the cache had since shown, and they were
	// created incomplete and written again, complete, at the next pass.
	planned := c.r.now()
	in, err := c.planInput(ctx, st)
	if err != nil {
		return err
	}
	owned, err := st.children.ownedPodGangs(ctx, st.stored)
	if err != nil {
		return err
	}
	plan := planPodGangs(in)
	wanted := map[string]bool{}
	for _, g := range plan {
		wanted[g.name] = true
	}
	existing := map[string]*schedv1alpha1.PodGang{}
	var unwanted []*schedv1alpha1.PodGang
	for _, pg := range owned {
		if !wanted[pg.Name] {
			c.r.forgetPodGang(pg)
			st.children.wrote(childPodGangs)
			unwanted = append(unwanted, pg)
			continue
		}
		existing[pg.Name] = pg
	}
	_, delErr := common.SlowStart(ctx, len(unwanted), func(ctx context.Context, i int) error {
		return common.Delete(ctx, c.r.gangClient(), unwanted[i])
	})
	errs := []error{delErr}
	underWay := updateUnderWay(st.pcs)
	// In slow-start batches: each gang's create and Initialized write are independent of the
	// others', and one after another they made the last gang (and its pods' gates) wait for
	// every other gang's round trips.
	_, err = common.SlowStart(ctx, len(plan), func(ctx context.Context, i int) error {
		if err := c.apply(ctx, st, plan[i], existing[plan[i].name], planned, underWay); err != nil {
			return fmt.Errorf("PodGang %s: %w", plan[i].name, err)
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

func (c *podGangs) planInput(ctx context.Context, st *state) (gangPlanInput, error) {
	in := gangPlanInput{pcs: st.pcs, pclqs: map[string]*corev1alpha1.PodClique{},
		pcsgs: map[string]*corev1alpha1.PodCliqueScalingGroup{}, topology: st.translated()}
	if c.r.gangCreator {
		in.completeGrace = completeGangGrace
	}
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return in, err
	}
	for i := range pclqs {
		if !common.IsTerminating(&pclqs[i]) {
			in.pclqs[pclqs[i].Name] = &pclqs[i]
		}
	}
	pcsgs, err := st.children.scalingGroups(ctx)
	if err != nil {
		return in, err
	}
	for i := range pcsgs {
		if metav1.IsControlledBy(&pcsgs[i], st.stored) {
			in.pcsgs[pcsgs[i].Name] = &pcsgs[i]
		}
	}
	pods, err := st.children.pods(ctx)
	if err != nil {
		return in, err
	}
	in.pods, in.firstPod, in.lastPod = podsByGang(memberPods(pods, in.pclqs))
	return in, nil
}

// memberPods are the live pods that count as members of their PodGangs: only pods their
// PodClique (one of pclqs) controls; a stray pod with our labels is ignored.
func memberPods(pods []corev1.Pod, pclqs map[string]*corev1alpha1.PodClique) []podRef {
	refs := make([]podRef, 0, len(pods))
	for i := range pods {
		p := &pods[i]
		if !common.IsActive(p) {
			continue
		}
		owner := metav1.GetControllerOf(p)
		pclq := p.Labels[apicommon.LabelPodClique]
		if owner == nil || owner.Kind != "PodClique" || owner.Name != pclq || pclqs[pclq] == nil {
			continue
		}
		refs = append(refs, podRef{name: p.Name, gang: p.Labels[apicommon.LabelPodGang], pclq: pclq, created: p.CreationTimestamp.Time})
	}
	return refs
}

// apply creates or updates one PodGang, syncs it to the backend and marks it Initialized;
// planned is when the cache was read for the plan; underWay: an update replaces pods
// (reuseReservation).
func (c *podGangs) apply(ctx context.Context, st *state, g plannedGang, pg *schedv1alpha1.PodGang, planned time.Time, underWay bool) error {
	labels, annotations := gangMetadata(st)
	maps.Copy(labels, common.ReplicaLabels(st.pcs.Name, apicommon.ComponentPodGang, g.replica))
	if st.backend != nil {
		labels[apicommon.LabelSchedulerName] = string(st.backend.Name())
	}
	if g.base != "" {
		labels[apicommon.LabelPodCliqueScalingGroup] = g.scalingGroup
		labels[apicommon.LabelBasePodGang] = g.base
	}
	if st.topology != nil && st.topology.found {
		annotations[apicommon.AnnotationTopologyName] = st.topology.name
	}
	reuseReservation(st.pcs, underWay, &g.spec, annotations, pg)

	// The cache shows every earlier write of this writer and its fast path for the
	// PodCliqueSet (the consistency check before the pass). The gang creator and a writer pass
	// can still both find the gang missing at once (the 500×2 apply sent 560 creates for 500
	// PodGangs, the twins refused AlreadyExists): the record refuses the second create before it
	// is sent, and the first create's event brings the pass back.
	if pg == nil {
		if wait := g.createIn(planned); wait > 0 {
			st.requeueAfter(max(wait-c.r.now().Sub(planned), minGangRequeue))
			return nil
		}
		if taken, err := c.nameTaken(ctx, st, g.name); err != nil || taken {
			return err
		}
		pg = &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{
			Name: g.name, Namespace: st.pcs.Namespace, Labels: labels, Annotations: emptyToNil(annotations)}, Spec: g.spec}
		if err := controllerutil.SetControllerReference(st.stored, pg, c.r.Client.Scheme()); err != nil {
			return err
		}
		st.children.wrote(childPodGangs)
		if err := c.r.gangClient().Create(ctx, pg); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil // being created, or the cache is behind; the create event brings us back
			}
			return err
		}
	} else if _, topologyNamed := pg.Annotations[apicommon.AnnotationTopologyName]; !equality.Semantic.DeepEqual(pg.Spec, g.spec) ||
		!subset(labels, pg.Labels) || !subset(annotations, pg.Annotations) || (topologyNamed && annotations[apicommon.AnnotationTopologyName] == "") {
		if c.replacementPending(st, g, pg, underWay, labels, annotations) {
			return nil
		}
		c.r.replacingSince.Delete(pg.UID)
		// Keys are added and updated, never removed: other controllers (and upstream Grove,
		// before a takeover) may have written their own; only the topology name is ours alone.
		st.children.wrote(childPodGangs)
		patch := client.MergeFrom(pg.DeepCopy())
		pg.Spec = g.spec
		pg.Labels = common.WithLabels(pg.Labels, labels)
		pg.Annotations = emptyToNil(common.WithLabels(pg.Annotations, annotations))
		if annotations[apicommon.AnnotationTopologyName] == "" {
			delete(pg.Annotations, apicommon.AnnotationTopologyName)
		}
		if err := c.r.gangClient().Patch(ctx, pg, patch); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if err := c.syncBackend(ctx, st, pg); err != nil {
		return err
	}
	return c.updateInitialized(ctx, st, pg, g.complete)
}

// replacementPending holds back the patch of a PodGang whose pods an update is replacing until
// every replacement pod exists, so that the PodGang is written once, listing them all, rather
// than once as the old pods go and again as each new one appears (each answered by
// grove-scheduler's status rewrites); a new PodGang is created complete for the same reason
// (gangplan.go). Only the pod list may differ: any other change is written at once. The wait is
// bounded (replacementGrace from the first pass that held the patch back), so replacements
// that are slow to come, or refused, are listed as they exist. The replacement pods are held
// by their scheduling gates until the PodGang lists them, so nothing is placed meanwhile.
func (c *podGangs) replacementPending(st *state, g plannedGang, pg *schedv1alpha1.PodGang, underWay bool, labels, annotations map[string]string) bool {
	if !underWay || g.complete || !subset(labels, pg.Labels) || !subset(annotations, pg.Annotations) || !onlyPodsDiffer(&pg.Spec, &g.spec) {
		return false
	}
	now := c.r.now()
	first, _ := c.r.replacingSince.LoadOrStore(pg.UID, now)
	left := first.(time.Time).Add(replacementGrace).Sub(now)
	if left <= 0 {
		return false
	}
	// The replacement pods' create events bring the pass back; this bounds the wait.
	st.requeueAfter(left)
	return true
}

// replacementGrace bounds how long a replaced PodGang's patch waits for all its replacement pods.
const replacementGrace = 5 * time.Second

// onlyPodsDiffer reports whether two PodGang specs differ in nothing but their pod references
// (and the reuse reference, which is decided with them).
func onlyPodsDiffer(a, b *schedv1alpha1.PodGangSpec) bool {
	if len(a.PodGroups) != len(b.PodGroups) {
		return false
	}
	x, y := a.DeepCopy(), b.DeepCopy()
	x.ReuseReservationRef, y.ReuseReservationRef = nil, nil
	for i := range x.PodGroups {
		x.PodGroups[i].PodReferences, y.PodGroups[i].PodReferences = nil, nil
	}
	return equality.Semantic.DeepEqual(x, y)
}

// syncBackend hands the PodGang to the scheduler backend once per generation and set of
// labels and annotations (backends copy them onto their objects, e.g. KAI's node pool).
func (c *podGangs) syncBackend(ctx context.Context, st *state, pg *schedv1alpha1.PodGang) error {
	if st.backend == nil {
		return nil // the PodCliqueSet names no enabled scheduler; its status says so
	}
	want := syncedGang{generation: pg.Generation, metadata: fmt.Sprint(pg.Labels, pg.Annotations)}
	if synced, ok := c.r.syncedPodGangs.Load(pg.UID); ok && synced.(syncedGang) == want {
		return nil
	}
	if err := st.backend.SyncPodGang(ctx, pg); err != nil {
		return fmt.Errorf("scheduler backend %s: %w", st.backend.Name(), err)
	}
	c.r.syncedPodGangs.Store(pg.UID, want)
	return nil
}

// syncedGang is what of a PodGang the backend last synced.
type syncedGang struct {
	generation int64
	metadata   string // labels and annotations, printed (fmt sorts map keys)
}

// updateInitialized sets Initialized False until every pod of the gang exists and is
// referenced, then True; once True it stays (the gang has been handed over complete).
func (c *podGangs) updateInitialized(ctx context.Context, st *state, pg *schedv1alpha1.PodGang, complete bool) error {
	current := meta.FindStatusCondition(pg.Status.Conditions, schedv1alpha1.PodGangConditionInitialized)
	if current != nil && (current.Status == metav1.ConditionTrue || !complete) {
		return nil
	}
	cond := metav1.Condition{Type: schedv1alpha1.PodGangConditionInitialized, Status: metav1.ConditionFalse,
		Reason: apicommon.ReasonPodGangPodsCreationPending, Message: "not every pod of the PodGang has been created yet"}
	if complete {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, apicommon.ReasonPodGangPodsCreated, "every pod of the PodGang has been created"
	}
	// The phase is the scheduler's alone: the schema defaults it to Pending (upstream Grove's
	// contract) with this first status write, and the scheduler moves it on.
	st.children.wrote(childPodGangs)
	err := applyPodGangCondition(ctx, c.r.gangClient(), pg, apicommon.OperatorFieldManager, cond)
	if apierrors.IsConflict(err) {
		// Another writer (the scheduler's phase) came between; the condition is computed again
		// from a cache that shows it.
		st.requeueAfter(gangRetry)
		return nil
	}
	return err
}

// applyPodGangCondition applies one condition of a PodGang's status under the field manager
// that owns it. PodGang status has several writers, one per condition type
// (pkg/api/scheduler/v1alpha1): server-side apply on the conditions' type-keyed list lets each
// own its entries without reading or rewriting the others'. The resourceVersion makes the
// write conditional on what the condition was computed from.
func applyPodGangCondition(ctx context.Context, c client.Client, pg *schedv1alpha1.PodGang, manager string, cond metav1.Condition) error {
	conds := slices.Clone(pg.Status.Conditions)
	if cond.LastTransitionTime.IsZero() {
		common.SetCondition(&conds, cond, pg.Generation)
	} else {
		// meta.SetStatusCondition keeps an existing condition's transition time; this one is given.
		cond.ObservedGeneration = pg.Generation
		meta.RemoveStatusCondition(&conds, cond.Type)
		conds = append(conds, cond)
	}
	applied := meta.FindStatusCondition(conds, cond.Type)
	status := schedulerac.PodGang(pg.Name, pg.Namespace).WithResourceVersion(pg.ResourceVersion).
		WithStatus(schedulerac.PodGangStatus().WithConditions(groveclient.Condition(*applied)))
	return client.IgnoreNotFound(c.Status().Apply(ctx, status, client.FieldOwner(manager), client.ForceOwnership))
}

func (c *podGangs) Delete(ctx context.Context, st *state) error {
	owned, err := listOwned(ctx, c.r.Client, st.stored, &schedv1alpha1.PodGangList{}, apicommon.ComponentPodGang)
	if err != nil {
		return err
	}
	for _, pg := range owned {
		c.r.forgetPodGang(pg)
	}
	return deleteUnwanted(ctx, c.r.Client, owned, nil)
}

// subset reports whether every entry of want is in have.
func subset(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// gangMetadata is what every PodGang of a PodCliqueSet carries besides Grove's own keys: the
// PodCliqueSet's labels and annotations outside grove.io/ (so that e.g. kai.scheduler/node-pool
// reaches the scheduler's objects, as upstream Grove does), then what the backend adds.
func gangMetadata(st *state) (labels, annotations map[string]string) {
	labels = mirrored(st.pcs.Labels)
	// Within a budget that leaves room for Grove's own keys: over it, the create failed with
	// "annotations: Too long" and the gang's pods stayed gated.
	annotations, _ = apicommon.MirroredAnnotations(st.pcs.Annotations)
	if p, ok := st.backend.(backend.PodGangMetadataProvider); ok {
		l, a := p.PodGangMetadata(st.pcs)
		maps.Copy(labels, l)
		maps.Copy(annotations, a)
	}
	return labels, annotations
}

// mirrored copies the keys outside Grove's own grove.io/ prefix.
func mirrored(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		if !strings.HasPrefix(k, apicommon.GroveKeyPrefix) {
			out[k] = v
		}
	}
	return out
}

func emptyToNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// nameTaken reports whether an object this PodCliqueSet does not control holds the PodGang's
// name. Creating it would fail forever with AlreadyExists while its pods stay gated, so the
// conflict is reported on the PodCliqueSet (condition and event naming the holder) and checked
// again shortly: deleting the foreign object sends no event this controller sees.
func (c *podGangs) nameTaken(ctx context.Context, st *state, name string) (bool, error) {
	other := &schedv1alpha1.PodGang{}
	err := c.r.Client.Get(ctx, client.ObjectKey{Namespace: st.pcs.Namespace, Name: name}, other)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	case controlledAs(other, st.stored, apicommon.ComponentPodGang):
		return false, nil
	}
	holder := "no controller"
	if ref := metav1.GetControllerOf(other); ref != nil {
		holder = fmt.Sprintf("controlled by %s %s", ref.Kind, ref.Name)
	}
	st.mu.Lock()
	st.podGangConflicts = append(st.podGangConflicts, fmt.Sprintf("PodGang %s/%s already exists (%s)", other.Namespace, other.Name, holder))
	st.mu.Unlock()
	st.requeueAfter(podGangConflictRecheck)
	return true, nil
}

// podGangConflictRecheck is how often a PodGang name held by a foreign object is looked at again.
const podGangConflictRecheck = 10 * time.Second
