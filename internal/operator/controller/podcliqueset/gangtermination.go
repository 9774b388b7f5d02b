package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
)

// gangTermination recreates gangs that lost their minimum. When a PodClique of a replica has
// been MinAvailableBreached (it was placed, then fell below minAvailable scheduled or ready
// pods) for terminationDelay:
//   - a member of a scaling-group replica, while the group still has minAvailable other
//     available replicas: only that scaling-group replica's PodCliques are recreated;
//   - otherwise every PodClique of the PodCliqueSet replica is recreated, its PodGangs with
//     them, and its scaling groups carry the gang-termination annotation until the PodCliques
//     are back (their own controller reports it as GangTerminationInProgress).
//
// Recreated PodCliques start unplaced, so one breach leads to one recreation. A replica under
// a rolling update is left alone (the update takes pods down on purpose); other replicas are
// never touched.
type gangTermination struct{ r *Reconciler }

func (*gangTermination) Name() string { return "gang-termination" }

// replicaCliques are the live PodCliques of one PodCliqueSet replica.
type replicaCliques struct {
	standalone []*corev1alpha1.PodClique
	// members by scaling group name and group replica.
	members map[string]map[int][]*corev1alpha1.PodClique
	// terminating is set when a PodClique of the replica is being deleted.
	terminating bool
}

func (rc *replicaCliques) all() []*corev1alpha1.PodClique {
	out := slices.Clone(rc.standalone)
	for _, byReplica := range rc.members {
		for _, pclqs := range byReplica {
			out = append(out, pclqs...)
		}
	}
	return out
}

// replicas returns the PodCliqueSet's scaling groups by name and its PodCliques by replica.
func (c *gangTermination) replicas(ctx context.Context, st *state) (map[string]*corev1alpha1.PodCliqueScalingGroup, map[int]*replicaCliques, error) {
	groups, err := st.children.ownedScalingGroups(ctx, st.stored)
	if err != nil {
		return nil, nil, err
	}
	pcsgs := map[string]*corev1alpha1.PodCliqueScalingGroup{}
	pcsgUIDs := map[types.UID]bool{}
	for _, g := range groups {
		pcsgs[g.Name], pcsgUIDs[g.UID] = g, true
	}
	replicas, err := c.replicaCliques(ctx, st, pcsgUIDs)
	return pcsgs, replicas, err
}

func (c *gangTermination) Sync(ctx context.Context, st *state) error {
	pcsgs, replicas, err := c.replicas(ctx, st)
	if err != nil {
		return err
	}
	delay := ptr.Deref(st.pcs.Spec.Template.TerminationDelay, metav1.Duration{Duration: corev1alpha1.DefaultTerminationDelay}).Duration
	now := time.Now()
	var errs []error
	for i := range int(st.pcs.Spec.Replicas) {
		rc := replicas[i]
		if rc == nil {
			rc = &replicaCliques{}
		}
		replicaGroups := scalingGroupsOfReplica(st.pcs, pcsgs, i)
		errs = append(errs, c.endRecreation(ctx, st, i, rc, replicaGroups))
		if st.updatingReplica(i) {
			continue
		}
		wait, err := c.terminateExpired(ctx, st, i, rc, replicaGroups, delay, now)
		errs = append(errs, err)
		if wait > 0 {
			st.requeueAfter(wait)
		}
	}
	return errors.Join(errs...)
}

func (c *gangTermination) Delete(context.Context, *state) error { return nil }

// replicaCliques groups the PodCliqueSet's PodCliques (its own and its scaling groups') by
// replica.
func (c *gangTermination) replicaCliques(ctx context.Context, st *state, pcsgUIDs map[types.UID]bool) (map[int]*replicaCliques, error) {
	items, err := st.children.podCliques(ctx)
	if err != nil {
		return nil, err
	}
	out := map[int]*replicaCliques{}
	for k := range items {
		p := &items[k]
		owner := metav1.GetControllerOf(p)
		i, ok := common.IntLabel(p, apicommon.LabelPodCliqueSetReplicaIndex)
		if owner == nil || !ok || (owner.UID != st.stored.UID && !pcsgUIDs[owner.UID]) {
			continue
		}
		rc := out[i]
		if rc == nil {
			rc = &replicaCliques{members: map[string]map[int][]*corev1alpha1.PodClique{}}
			out[i] = rc
		}
		if common.IsTerminating(p) {
			rc.terminating = true
			continue
		}
		group := p.Labels[apicommon.LabelPodCliqueScalingGroup]
		j, member := common.IntLabel(p, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		if owner.UID == st.stored.UID || group == "" || !member {
			rc.standalone = append(rc.standalone, p)
			continue
		}
		if rc.members[group] == nil {
			rc.members[group] = map[int][]*corev1alpha1.PodClique{}
		}
		rc.members[group][j] = append(rc.members[group][j], p)
	}
	return out, nil
}

// scalingGroupsOfReplica are the existing scaling groups of replica i.
func scalingGroupsOfReplica(pcs *corev1alpha1.PodCliqueSet, pcsgs map[string]*corev1alpha1.PodCliqueScalingGroup, i int) []*corev1alpha1.PodCliqueScalingGroup {
	var out []*corev1alpha1.PodCliqueScalingGroup
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if pcsg := pcsgs[apicommon.PodCliqueScalingGroupName(pcs.Name, i, g.Name)]; pcsg != nil {
			out = append(out, pcsg)
		}
	}
	return out
}

// terminateExpired recreates what the replica's expired breaches call for, and returns how
// long until the next pending breach expires (0 when none is pending).
func (c *gangTermination) terminateExpired(ctx context.Context, st *state, i int, rc *replicaCliques,
	groups []*corev1alpha1.PodCliqueScalingGroup, delay time.Duration, now time.Time) (time.Duration, error) {
	var wait time.Duration
	expired := func(p *corev1alpha1.PodClique) bool {
		cond := meta.FindStatusCondition(p.Status.Conditions, apicommon.ConditionMinAvailableBreached)
		if cond == nil || cond.Status != metav1.ConditionTrue {
			return false
		}
		left := delay - now.Sub(cond.LastTransitionTime.Time)
		if left > 0 {
			if wait == 0 || left < wait {
				wait = left
			}
			return false
		}
		return true
	}
	var breached []string
	wholeReplica := false
	for _, p := range rc.standalone {
		if expired(p) {
			wholeReplica = true
			breached = append(breached, p.Name)
		}
	}
	recreate := map[*corev1alpha1.PodCliqueScalingGroup][]int{}
	for _, g := range groups {
		broken := map[int]bool{}
		for j, members := range rc.members[g.Name] {
			for _, p := range members {
				if expired(p) {
					broken[j] = true
					breached = append(breached, p.Name)
				}
			}
		}
		if len(broken) == 0 {
			continue
		}
		healthy := 0
		for j, members := range rc.members[g.Name] {
			if !broken[j] && replicaAvailable(members, len(g.Spec.CliqueNames)) {
				healthy++
			}
		}
		if int32(healthy) < ptr.Deref(g.Spec.MinAvailable, 1) {
			wholeReplica = true
			continue
		}
		for j := range broken {
			recreate[g] = append(recreate[g], j)
		}
	}
	if len(breached) == 0 {
		return wait, nil
	}
	sort.Strings(breached)
	if wholeReplica {
		return wait, c.recreateReplica(ctx, st, i, rc, groups, breached, delay)
	}
	var errs []error
	for g, js := range recreate {
		sort.Ints(js)
		for _, j := range js {
			errs = append(errs, c.recreateScalingGroupReplica(ctx, st, g, j, rc.members[g.Name][j], breached, delay))
		}
	}
	return wait, errors.Join(errs...)
}

// replicaAvailable reports whether a scaling-group replica has all its members, each with
// minAvailable ready pods.
func replicaAvailable(members []*corev1alpha1.PodClique, want int) bool {
	if len(members) != want {
		return false
	}
	for _, p := range members {
		if p.Status.ReadyReplicas < corev1alpha1.MinAvailableOf(&p.Spec) {
			return false
		}
	}
	return true
}

// recreateReplica deletes every PodClique and PodGang of PodCliqueSet replica i; the
// PodCliqueSet and scaling-group controllers create them afresh.
func (c *gangTermination) recreateReplica(ctx context.Context, st *state, i int, rc *replicaCliques,
	groups []*corev1alpha1.PodCliqueScalingGroup, breached []string, delay time.Duration) error {
	msg := fmt.Sprintf("replica %d is recreated: %s stayed below minAvailable for %s", i, strings.Join(breached, ", "), delay)
	return c.recreateReplicaFor(ctx, st, i, rc, groups, msg)
}

// recreateReplicaFor is recreateReplica with the reason given (msg), for the node-failure
// policy RecreateGang too.
func (c *gangTermination) recreateReplicaFor(ctx context.Context, st *state, i int, rc *replicaCliques,
	groups []*corev1alpha1.PodCliqueScalingGroup, msg string) error {
	var errs []error
	for _, g := range groups {
		errs = append(errs, c.setRecreating(ctx, st, g, msg))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, p := range rc.all() {
		errs = append(errs, c.deletePodClique(ctx, st, p))
	}
	errs = append(errs, c.deletePodGangs(ctx, st, func(pg *schedv1alpha1.PodGang) bool {
		r, ok := common.IntLabel(pg, apicommon.LabelPodCliqueSetReplicaIndex)
		return ok && r == i
	}))
	c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, "GangTerminated", "RecreatePodCliqueSetReplica", msg)
	grovemetrics.GangTerminations.WithLabelValues(grovemetrics.ScopeReplica).Inc()
	return errors.Join(errs...)
}

// recreateScalingGroupReplica deletes the PodCliques of replica j of a scaling group (and its
// scaled PodGang); the scaling-group controller creates them afresh.
func (c *gangTermination) recreateScalingGroupReplica(ctx context.Context, st *state, g *corev1alpha1.PodCliqueScalingGroup, j int,
	members []*corev1alpha1.PodClique, breached []string, delay time.Duration) error {
	return c.recreateScalingGroupReplicaFor(ctx, st, g, j, members, fmt.Sprintf(
		"replica %d of %s is recreated: %s stayed below minAvailable for %s; the group keeps its other replicas", j, g.Name, strings.Join(breached, ", "), delay))
}

// recreateScalingGroupReplicaFor is recreateScalingGroupReplica with the reason given (msg),
// for the node-failure policy RecreateGang too.
func (c *gangTermination) recreateScalingGroupReplicaFor(ctx context.Context, st *state, g *corev1alpha1.PodCliqueScalingGroup, j int,
	members []*corev1alpha1.PodClique, msg string) error {
	var errs []error
	for _, p := range members {
		errs = append(errs, c.deletePodClique(ctx, st, p))
	}
	minAvailable := int(ptr.Deref(g.Spec.MinAvailable, 1))
	if j >= minAvailable {
		scaled := apicommon.ScaledPodGangName(g.Name, j, minAvailable)
		errs = append(errs, c.deletePodGangs(ctx, st, func(pg *schedv1alpha1.PodGang) bool { return pg.Name == scaled }))
	}
	grovemetrics.GangTerminations.WithLabelValues(grovemetrics.ScopeScalingGroup).Inc()
	c.r.Recorder.Eventf(st.stored, nil, corev1.EventTypeWarning, "ScalingGroupReplicaRecreated", "RecreateScalingGroupReplica", "%s", msg)
	return errors.Join(errs...)
}

func (c *gangTermination) deletePodGangs(ctx context.Context, st *state, match func(*schedv1alpha1.PodGang) bool) error {
	owned, err := st.children.ownedPodGangs(ctx, st.stored)
	if err != nil {
		return err
	}
	var errs []error
	for _, pg := range owned {
		if match(pg) {
			c.r.forgetPodGang(pg)
			st.children.wrote(childPodGangs)
			errs = append(errs, common.Delete(ctx, c.r.Client, pg))
		}
	}
	return errors.Join(errs...)
}

// endRecreation removes the gang-termination annotation once replica i has all its PodCliques
// again, none of them one that was deleted for the recreation.
func (c *gangTermination) endRecreation(ctx context.Context, st *state, i int, rc *replicaCliques, groups []*corev1alpha1.PodCliqueScalingGroup) error {
	inProgress := false
	for _, g := range groups {
		_, annotated := g.Annotations[apicommon.AnnotationGangTermination]
		inProgress = inProgress || annotated
	}
	if !inProgress || rc.terminating || !replicaComplete(st.pcs, rc, groups) {
		return nil
	}
	var errs []error
	for _, g := range groups {
		errs = append(errs, c.setRecreating(ctx, st, g, ""))
	}
	return errors.Join(errs...)
}

// replicaComplete reports whether replica i has every PodClique its template and scaling
// groups call for.
func replicaComplete(pcs *corev1alpha1.PodCliqueSet, rc *replicaCliques, groups []*corev1alpha1.PodCliqueScalingGroup) bool {
	if len(rc.standalone) != len(pcs.Spec.Template.StandaloneCliques()) || len(groups) != len(pcs.Spec.Template.PodCliqueScalingGroupConfigs) {
		return false
	}
	for _, g := range groups {
		n := 0
		for _, members := range rc.members[g.Name] {
			n += len(members)
		}
		if n != int(g.Spec.Replicas)*len(g.Spec.CliqueNames) {
			return false
		}
	}
	return true
}

// setRecreating puts the gang-termination annotation with its message on the scaling group,
// or removes it when msg is empty. The annotation is the PodCliqueSet controller's request; the
// scaling group's own controller writes the GangTerminationInProgress condition from it, so
// the group's status keeps a single writer.
func (c *gangTermination) setRecreating(ctx context.Context, st *state, g *corev1alpha1.PodCliqueScalingGroup, msg string) error {
	current, annotated := g.Annotations[apicommon.AnnotationGangTermination]
	if (msg == "" && !annotated) || (msg != "" && current == msg) {
		return nil
	}
	st.children.wrote(childScalingGroups)
	patch := client.MergeFrom(g.DeepCopy())
	if msg == "" {
		delete(g.Annotations, apicommon.AnnotationGangTermination)
	} else {
		g.Annotations = common.WithLabels(g.Annotations, map[string]string{apicommon.AnnotationGangTermination: msg})
	}
	return client.IgnoreNotFound(c.r.Client.Patch(ctx, g, patch))
}

// deletePodClique deletes a PodClique for a recreation. The delete is recorded (common.Writes):
// no later reconcile runs on a cache that does not show it terminating, and so none acts on
// its breach again.
func (c *gangTermination) deletePodClique(ctx context.Context, st *state, p *corev1alpha1.PodClique) error {
	st.children.wrote(childPodCliques)
	return common.Delete(ctx, c.r.Client, p)
}
