package podcliquescalinggroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
)

// groupReplica is what a rolling update needs to know about one replica of the group.
type groupReplica struct {
	// outdated are its live pods not built from the template being rolled out.
	outdated []*corev1.Pod
	// available: every member has minAvailable ready pods.
	available bool
	// updated: every member has all its pods, all ready and none outdated.
	updated bool
	// current: every member holds the template being rolled out, so the pods they create now
	// are new ones.
	current bool
}

// turn is what one pass of an update decided.
type turn struct {
	// decided: the pass got as far as deciding which replicas are held.
	decided bool
	// held are the group replicas whose members keep their template for now.
	held map[int]bool
	// due are the old pods of the replicas whose turn came in this pass, deleted once the cache
	// shows their members written (deleteWhenWritten).
	due []*corev1.Pod
}

// replaceOutdatedReplicas moves the group to the current template during an update of its
// PodCliqueSet replica. A group replica is one gang unit (say a leader and its workers), so it
// is recreated whole. Replicas that are not available are recreated at once (they serve
// nothing, and a stuck replica must not block the update that may fix it); available ones go
// within the group's rollingUpdate.maxUnavailable: at most that many of its desired replicas
// are unavailable at a time, replicas still starting and replicas a scale-in is removing
// included. Under Coherent the PodCliqueSet controller replaces the replica's pods instead.
//
// Under RollingRecreate a replica's members get the new template only at the replica's turn,
// as upstream Grove recreates a group replica's PodCliques then: until that turn they keep
// the template their pods run (a pod lost meanwhile comes back as it was), report nothing
// updated, and are not written. Writing every member up front held the first deletion of a
// large group for the seconds its template writes took. At a replica's turn its members
// are written first (syncMembers) and its old pods deleted only once the cache shows them
// (deleteWhenWritten), so the PodClique controller, reading the same cache, recreates the pods
// from the new template; replicas whose members show the new template already have their old
// pods deleted here, within the budget. Deletions are remembered until the cache shows them, so a reconcile on a
// stale cache never counts a replica being recreated as available.
func (r *Reconciler) replaceOutdatedReplicas(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup,
	members []*corev1alpha1.PodClique, pods *groupPods, hashes *hash.Templates) (turn, error) {
	replicas, accepted, err := r.groupReplicas(ctx, pods, members, hashes)
	if err != nil {
		return turn{}, err
	}
	generation := hashes.Generation()
	progress := pcsg.Status.UpdateProgress.DeepCopy()
	anyOutdated := slices.ContainsFunc(replicas, func(g groupReplica) bool { return len(g.outdated) > 0 })
	inFlight := func() (int, bool) {
		if progress == nil || progress.ReadyReplicaIndicesSelectedToUpdate == nil {
			return 0, false
		}
		sel := progress.ReadyReplicaIndicesSelectedToUpdate
		j := int(sel.Current)
		return j, j < len(replicas) && !slices.Contains(sel.Completed, sel.Current)
	}
	now := metav1.Now()
	if anyOutdated && (progress == nil || progress.PodCliqueSetGenerationHash != generation) {
		// A new update; a replica still being recreated for an earlier one stays in flight.
		next := &corev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: generation}
		if j, ok := inFlight(); ok {
			next.ReadyReplicaIndicesSelectedToUpdate = &corev1alpha1.PodCliqueScalingGroupReplicaUpdateProgress{Current: int32(j)}
		}
		if s := pcs.Spec.UpdateStrategy; s != nil && s.Type == corev1alpha1.OnDeleteStrategy {
			next.UpdateEndedAt = &now // as the PodCliqueSet's: OnDelete replaces nothing itself
		}
		progress = next
	}
	if j, ok := inFlight(); ok && replicas[j].updated {
		sel := progress.ReadyReplicaIndicesSelectedToUpdate
		sel.Completed = append(sel.Completed, sel.Current)
	}
	countMembers(progress, pcsg, members)
	if corev1alpha1.StrategyOf(pcs) != corev1alpha1.RollingRecreateStrategy {
		// OnDelete replaces nothing itself; under Coherent the PodCliqueSet controller replaces
		// the whole replica's pods in one pass. Either way the members hold the new template.
		return turn{decided: true}, r.writeProgress(ctx, pcsg, endIfDone(progress, anyOutdated, inFlight, now))
	}
	held := map[int]bool{}
	for j, g := range replicas {
		if len(g.outdated) > 0 && !g.current {
			held[j] = true
		}
	}
	pcsReplica, _ := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	if !common.IsReplicaBeingUpdated(pcs, pcsReplica) {
		return turn{decided: true, held: held}, r.writeProgress(ctx, pcsg, endIfDone(progress, anyOutdated, inFlight, now))
	}
	var deletions, due []*corev1.Pod
	var started, waiting []int // available replicas with old pods: members written, or held
	for j, g := range replicas {
		switch {
		case len(g.outdated) == 0:
		case !g.available:
			if held[j] {
				delete(held, j)
				due = append(due, g.outdated...)
			} else {
				deletions = append(deletions, g.outdated...)
			}
		case g.current:
			started = append(started, j)
		default:
			waiting = append(waiting, j)
		}
	}
	// Replicas whose members hold the new template already (a turn whose deletions the last
	// pass left to this one, or members an earlier strategy or operator version wrote up front)
	// go first, then the held ones; scaled gangs (the highest indices) before the base gang's
	// replicas. The budget bounds both.
	sort.Sort(sort.Reverse(sort.IntSlice(started)))
	sort.Sort(sort.Reverse(sort.IntSlice(waiting)))
	budget := max(r.budget(pcs, pcsg, members, replicas), 0)
	startedNow := started[:min(budget, len(started))]
	picked := waiting[:min(budget-len(startedNow), len(waiting))]
	for _, j := range startedNow {
		deletions = append(deletions, replicas[j].outdated...)
	}
	if len(startedNow)+len(picked) > 0 {
		sel := progress.ReadyReplicaIndicesSelectedToUpdate
		if sel == nil {
			sel = &corev1alpha1.PodCliqueScalingGroupReplicaUpdateProgress{}
			progress.ReadyReplicaIndicesSelectedToUpdate = sel
		}
		for _, j := range append(slices.Clone(startedNow), picked...) {
			sel.Current = int32(j) // the last one picked; the budget, not this field, bounds how many
		}
	}
	if err := r.writeProgress(ctx, pcsg, endIfDone(progress, anyOutdated, inFlight, now)); err != nil {
		return turn{decided: true, held: held}, err
	}
	// Never a healthy group replica before its replacement can be created: pods the apiserver
	// refuses would leave the gang a replica short for good. Checked once the progress is
	// stored, so that a progress write that conflicts does not dry-run again on its retry.
	var errs []error
	if len(picked) > 0 {
		if err := r.replacementsCreatable(ctx, pcs, pcsg, members, hashes, accepted); err != nil {
			errs = append(errs, err)
		} else {
			for _, j := range picked {
				delete(held, j)
				due = append(due, replicas[j].outdated...)
			}
		}
	}
	errs = append(errs, r.deleteOutdated(ctx, pcsg, pods, deletions))
	return turn{decided: true, held: held, due: due}, errors.Join(errs...)
}

// deleteOutdated deletes a pass's old pods all at once: a group replica is one gang unit, down
// as soon as its first pod goes, and its pods deleted one after another kept it down (and the
// next step waiting) for a round trip per pod.
func (r *Reconciler) deleteOutdated(ctx context.Context, pcsg *corev1alpha1.PodCliqueScalingGroup, pods *groupPods, deletions []*corev1.Pod) error {
	key := client.ObjectKeyFromObject(pcsg).String()
	if len(deletions) > 0 {
		pods.changed()
	}
	errs := make([]error, len(deletions))
	var wg sync.WaitGroup
	for i, p := range deletions {
		r.deletions().ExpectDeletion(key, p.UID)
		wg.Go(func() {
			if errs[i] = common.Delete(ctx, r.Client, p); errs[i] != nil {
				r.deletions().CancelDeletion(key, p.UID)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// turnWriteWait bounds how long a pass waits for the cache to show the members it wrote at a
// replica's turn; the watch delivers a write in milliseconds.
const turnWriteWait = 2 * time.Second

// deleteWhenWritten deletes the old pods of the replicas whose turn came in this pass, once the
// cache shows the members the pass wrote (the consistency check every reconcile starts with).
// Waiting here rather than leaving the deletions to the next pass saves a pass per turn, which
// at a budget of 1 is a pass per group replica, one after the other. Should the cache lag
// longer, the next pass deletes them: their replicas are current then.
func (r *Reconciler) deleteWhenWritten(ctx context.Context, pcsg *corev1alpha1.PodCliqueScalingGroup, pods *groupPods, due []*corev1.Pod) error {
	key := client.ObjectKeyFromObject(pcsg)
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, turnWriteWait, true, func(ctx context.Context) (bool, error) {
		return r.writes.CaughtUp(ctx, pcsg, key), nil
	})
	if err != nil {
		return nil
	}
	return r.deleteOutdated(ctx, pcsg, pods, due)
}

// budget is how many more available group replicas may be taken down now: the group's
// maxUnavailable (of its desired replicas) less the replicas already unavailable and those a
// scale-in is still removing.
func (r *Reconciler) budget(pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup, members []*corev1alpha1.PodClique, replicas []groupReplica) int {
	return int(corev1alpha1.ResolveMaxUnavailable(rollingUpdateOfGroup(pcs, pcsg), pcsg.Spec.Replicas)) - unavailable(replicas) - len(removedReplicas(pcsg, members))
}

// unavailable counts the replicas that do not serve.
func unavailable(replicas []groupReplica) int {
	n := 0
	for _, g := range replicas {
		if !g.available {
			n++
		}
	}
	return n
}

// removedReplicas are the replica indices at or above spec.replicas that still have members:
// what a scale-in is removing.
func removedReplicas(pcsg *corev1alpha1.PodCliqueScalingGroup, members []*corev1alpha1.PodClique) []int {
	var out []int
	for _, m := range members {
		if j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex); ok && j >= int(pcsg.Spec.Replicas) && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	return out
}

// rollingUpdateOfGroup is the rollingUpdate of the scaling-group config pcsg was built from.
func rollingUpdateOfGroup(pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup) *corev1alpha1.RollingUpdateConfiguration {
	replica, _ := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		cfg := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		if apicommon.PodCliqueScalingGroupName(pcs.Name, replica, cfg.Name) == pcsg.Name {
			return cfg.RollingUpdate
		}
	}
	return nil
}

// countMembers fills in the counts upstream Grove reports: member PodCliques at the hash being
// rolled out, of those the spec asks for.
func countMembers(progress *corev1alpha1.PodCliqueScalingGroupUpdateProgress, pcsg *corev1alpha1.PodCliqueScalingGroup, members []*corev1alpha1.PodClique) {
	if progress == nil {
		return
	}
	var updated int32
	for _, m := range members {
		j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		if ok && j < int(pcsg.Spec.Replicas) && !common.IsTerminating(m) &&
			m.Status.CurrentPodCliqueSetGenerationHash != nil && *m.Status.CurrentPodCliqueSetGenerationHash == progress.PodCliqueSetGenerationHash {
			updated++
		}
	}
	progress.UpdatedPodCliquesCount = updated
	progress.TotalPodCliquesCount = pcsg.Spec.Replicas * int32(len(pcsg.Spec.CliqueNames))
}

// endIfDone marks the update ended once no replica has outdated pods and none is in flight.
func endIfDone(progress *corev1alpha1.PodCliqueScalingGroupUpdateProgress, anyOutdated bool, inFlight func() (int, bool), now metav1.Time) *corev1alpha1.PodCliqueScalingGroupUpdateProgress {
	if progress == nil || progress.UpdateEndedAt != nil || anyOutdated {
		return progress
	}
	if _, busy := inFlight(); busy {
		return progress
	}
	progress.UpdateEndedAt = &now
	return progress
}

// writeProgress stores the update progress when it changed, with an optimistic lock: a stale
// copy must not overwrite the replica a newer reconcile selected. It is applied with the rest
// of the status, under the manager of updateStatus, which then finds nothing to hand over.
func (r *Reconciler) writeProgress(ctx context.Context, pcsg *corev1alpha1.PodCliqueScalingGroup, progress *corev1alpha1.PodCliqueScalingGroupUpdateProgress) error {
	if equality.Semantic.DeepEqual(progress, pcsg.Status.UpdateProgress) {
		return nil
	}
	desired := pcsg.DeepCopy()
	desired.Status.UpdateProgress = progress
	if err := common.ApplyStatusIfUnchanged(ctx, r.Client, desired, apicommon.ScalingGroupFieldManager); err != nil {
		return err
	}
	pcsg.Status.UpdateProgress = progress
	pcsg.ResourceVersion = desired.ResourceVersion
	return nil
}

// groupReplicas reads the state of each group replica from its members' pods, judged against
// the templates being rolled out (hashes); accepted are the pod template hashes of the group's
// live pods (templates the apiserver has created pods of).
func (r *Reconciler) groupReplicas(ctx context.Context, listed *groupPods, members []*corev1alpha1.PodClique, hashes *hash.Templates) ([]groupReplica, map[string]bool, error) {
	pcsg := listed.pcsg
	items, err := listed.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	live := make(map[types.UID]bool, len(items))
	for i := range items {
		live[items[i].UID] = common.IsActive(&items[i])
	}
	// A pod this controller deleted that the cache still lists is gone already.
	deleting := r.deletions().Pending(client.ObjectKeyFromObject(pcsg).String(), live).Deletions
	pods := map[string][]*corev1.Pod{}
	accepted := map[string]bool{}
	for i := range items {
		p := &items[i]
		if common.IsActive(p) && !deleting[p.UID] {
			pods[p.Labels[apicommon.LabelPodClique]] = append(pods[p.Labels[apicommon.LabelPodClique]], p)
			accepted[p.Labels[apicommon.LabelPodTemplateHash]] = true
		}
	}
	// The template each member should run, by member name.
	want := make(map[string]string, len(members))
	for j := range int(pcsg.Spec.Replicas) {
		for _, name := range pcsg.Spec.CliqueNames {
			want[apicommon.ScalingGroupPodCliqueName(pcsg.Name, j, name)] = hashes.Clique(name)
		}
	}
	replicas := make([]groupReplica, pcsg.Spec.Replicas)
	count := make([]int, pcsg.Spec.Replicas)
	for j := range replicas {
		replicas[j] = groupReplica{available: true, updated: true, current: true}
	}
	for _, m := range members {
		j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		h, wanted := want[m.Name]
		if !ok || !wanted || j >= len(replicas) || common.IsTerminating(m) {
			continue
		}
		count[j]++
		g := &replicas[j]
		g.current = g.current && m.Labels[apicommon.LabelPodTemplateHash] == h
		var ready int32
		for _, p := range pods[m.Name] {
			if common.IsReady(p) {
				ready++
			}
			if p.Labels[apicommon.LabelPodTemplateHash] != h {
				g.outdated = append(g.outdated, p)
			}
		}
		g.available = g.available && ready >= corev1alpha1.MinAvailableOf(&m.Spec)
		g.updated = g.updated && len(pods[m.Name]) == int(m.Spec.Replicas) && ready == m.Spec.Replicas
	}
	for j := range replicas {
		g := &replicas[j]
		g.available = g.available && count[j] == len(pcsg.Spec.CliqueNames)
		g.updated = g.updated && g.available && len(g.outdated) == 0
	}
	return replicas, accepted, nil
}

// replacementsCreatable dry-runs a pod of each of the group's cliques as the template being
// rolled out builds it (one per distinct template), except templates in accepted: a live pod
// of the template shows the apiserver creates them, and dry-running it again at every step of
// an update cost a request per template and replica replaced, on the path from one replica
// ready to the next deleted. The pod is built from a copy of a member written as its turn
// would write it.
func (r *Reconciler) replacementsCreatable(ctx context.Context, pcs *corev1alpha1.PodCliqueSet, pcsg *corev1alpha1.PodCliqueScalingGroup,
	members []*corev1alpha1.PodClique, hashes *hash.Templates, accepted map[string]bool) error {
	pcsReplica, _ := common.IntLabel(pcsg, apicommon.LabelPodCliqueSetReplicaIndex)
	minAvailable := int(ptrOr(pcsg.Spec.MinAvailable, 1))
	seen := map[string]bool{}
	for _, m := range members {
		j, ok := common.IntLabel(m, apicommon.LabelPodCliqueScalingGroupReplicaIndex)
		if !ok || j >= int(pcsg.Spec.Replicas) || common.IsTerminating(m) {
			continue
		}
		for _, name := range pcsg.Spec.CliqueNames {
			clique := pcs.Spec.Template.Clique(name)
			if clique == nil || apicommon.ScalingGroupPodCliqueName(pcsg.Name, j, name) != m.Name {
				continue
			}
			h := hashes.Clique(name) + "/" + clique.Spec.RoleName
			if seen[h] || accepted[hashes.Clique(name)] {
				continue
			}
			seen[h] = true
			desired := m.DeepCopy()
			common.MutatePodClique(desired, common.PodCliqueTarget{PCS: pcs, Replica: pcsReplica, Clique: clique, Hashes: hashes,
				Member: &common.ScalingGroupMember{Name: pcsg.Name, Replica: j, MinAvailable: minAvailable}})
			if err := podclique.CanCreatePod(ctx, r.Client, nil, pcs, desired); err != nil {
				return fmt.Errorf("PodClique %s: the apiserver refuses pods of the updated template, so no group replica is recreated until it would create them: %w", m.Name, err)
			}
		}
	}
	return nil
}
