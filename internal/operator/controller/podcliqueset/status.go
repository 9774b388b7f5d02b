package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/packing"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/component"
)

// updateStatus writes the PodCliqueSet's status when it changed: the status this reconcile
// computed is applied whole (common.ApplyStatus), never diffed against the cached copy, from
// which a field that changed and changed back (availableReplicas during an update) compared
// equal and was left out. The conditions' transition times come from the observed status,
// which the consistency check at the top of the reconcile keeps current.
func (r *Reconciler) updateStatus(ctx context.Context, st *state, syncErr error) error {
	pclqs, err := st.children.podCliques(ctx)
	if err != nil {
		return err
	}
	pcsgs, err := st.children.scalingGroups(ctx)
	if err != nil {
		return err
	}
	// One read of the PodGangs feeds both the Ready roll-up and status.podGangStatuses.
	gangs, err := st.children.podGangs(ctx)
	if err != nil {
		return err
	}
	status := computeStatus(st, pclqs, pcsgs, syncErr)
	pods, err := st.children.pods(ctx)
	if err != nil {
		return err
	}
	setUpdateInProgressCondition(&status, st, pclqs, pcsgs)
	if err := r.replaceCoherently(ctx, st, &status, pclqs, pods); err != nil {
		return err
	}
	if err := r.setReadiness(ctx, st, &status, pclqs, gangs); err != nil {
		return err
	}
	r.recordConditionEvents(st, &status)
	status.PodGangStatutes = podGangStatuses(st.stored, gangs)
	if equality.Semantic.DeepEqual(status, st.stored.Status) {
		return nil
	}
	st.stored.Status = status
	return client.IgnoreNotFound(common.ApplyStatus(ctx, r.statusClient(), st.stored, apicommon.OperatorFieldManager))
}

// podGangStatuses summarises the PodCliqueSet's PodGangs (upstream Grove's
// status.podGangStatuses), sorted by name.
func podGangStatuses(pcs *corev1alpha1.PodCliqueSet, gangs []schedv1alpha1.PodGang) []corev1alpha1.PodGangStatus {
	var out []corev1alpha1.PodGangStatus
	for i := range gangs {
		g := &gangs[i]
		if !metav1.IsControlledBy(g, pcs) || common.IsTerminating(g) {
			continue
		}
		out = append(out, corev1alpha1.PodGangStatus{Name: g.Name, Phase: string(g.Status.Phase), Conditions: slices.Clone(g.Status.Conditions)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// computeStatus derives the PodCliqueSet status from its PodCliques and scaling groups. A
// replica is available when each of its standalone PodCliques has minAvailable pods ready and
// each of its scaling groups has minAvailable replicas available; it is updated when every
// PodClique of it has converged on the current generation hash.
func computeStatus(st *state, pclqs []corev1alpha1.PodClique, pcsgs []corev1alpha1.PodCliqueScalingGroup, syncErr error) corev1alpha1.PodCliqueSetStatus {
	pcs := st.pcs
	status := *st.stored.Status.DeepCopy()
	generationHash := st.templateHashes().Generation()
	type replicaState struct {
		// settled: every pod of every PodClique of the replica is ready.
		exists, available, updated, settled bool
		standalone, groups, cliques         int
	}
	replicas := map[int]*replicaState{}
	at := func(obj client.Object) *replicaState {
		i, ok := common.IntLabel(obj, apicommon.LabelPodCliqueSetReplicaIndex)
		if !ok || common.IsTerminating(obj) {
			return nil
		}
		if replicas[i] == nil {
			replicas[i] = &replicaState{available: true, updated: true, settled: true}
		}
		return replicas[i]
	}
	for i := range pclqs {
		p := &pclqs[i]
		rs := at(p)
		if rs == nil {
			continue
		}
		rs.cliques++
		rs.updated = rs.updated && ptr.Deref(p.Status.CurrentPodCliqueSetGenerationHash, "") == generationHash
		rs.settled = rs.settled && p.Status.ReadyReplicas >= p.Spec.Replicas
		if metav1.IsControlledBy(p, st.stored) {
			rs.exists = true
			rs.standalone++
			rs.available = rs.available && p.Status.ReadyReplicas >= corev1alpha1.MinAvailableOf(&p.Spec)
		}
	}
	for i := range pcsgs {
		g := &pcsgs[i]
		if !metav1.IsControlledBy(g, st.stored) {
			continue
		}
		rs := at(g)
		if rs == nil {
			continue
		}
		rs.exists = true
		rs.groups++
		rs.available = rs.available && g.Status.AvailableReplicas >= ptr.Deref(g.Spec.MinAvailable, 1)
	}
	standalone := len(pcs.Spec.Template.StandaloneCliques())
	groups := len(pcs.Spec.Template.PodCliqueScalingGroupConfigs)
	status.Replicas, status.AvailableReplicas, status.UpdatedReplicas = 0, 0, 0
	for i, rs := range replicas {
		if !rs.exists {
			continue
		}
		status.Replicas++
		if i >= int(pcs.Spec.Replicas) || rs.standalone != standalone || rs.groups != groups {
			continue
		}
		if rs.available {
			status.AvailableReplicas++
		}
		if rs.updated && rs.cliques > 0 {
			status.UpdatedReplicas++
		}
	}
	status.UpdateProgress = updateProgress(st, generationHash, func(i int) replicaUpdate {
		rs := replicas[i]
		if rs == nil || rs.standalone != standalone || rs.groups != groups {
			return replicaUpdate{}
		}
		return replicaUpdate{updated: rs.updated && rs.cliques > 0, available: rs.available, settled: rs.settled}
	}, pclqs, pcsgs)
	// A generation is observed once every component synced it; a failed sync leaves
	// observedGeneration behind (lastErrors says why) until a later reconcile succeeds.
	if syncErr == nil && !st.gangsPending {
		status.ObservedGeneration = ptr.To(st.stored.Generation)
	}
	status.CurrentGenerationHash = ptr.To(generationHash)
	status.Selector = ptr.To(common.PodCliqueSetSelector(pcs.Name).String())

	if st.topology == nil {
		meta.RemoveStatusCondition(&status.Conditions, apicommon.ConditionTopologyLevelsUnavailable)
	} else {
		c := packing.LevelsUnavailableCondition(!st.topology.disabled, st.topology.name, st.topology.found, st.topology.translated.MissingDomains)
		common.SetCondition(&status.Conditions, c, st.stored.Generation)
	}
	setGangSchedulingCondition(&status.Conditions, st)
	setPriorityClassCondition(&status.Conditions, st)
	setPodGangConflictCondition(&status.Conditions, st)
	setPodCreateFailedCondition(&status.Conditions, st, pclqs)
	setNameConflictCondition(&status.Conditions, st)
	if st.nodeFailuresSynced {
		status.NodeFailures = st.nodeFailures
	}
	if c := memberReplacingCondition(st, status.NodeFailures); c != nil {
		common.SetCondition(&status.Conditions, *c, st.stored.Generation)
	}
	status.LastErrors = lastErrors(status.LastErrors, st, syncErr)
	return status
}

// setGangSchedulingCondition reports, for a backend whose gang semantics depend on the cluster
// (backend.GangCapabilityReporter), whether the PodCliqueSet's PodGangs are placed
// all-or-nothing; other backends always are, and the condition is removed.
func setGangSchedulingCondition(conditions *[]metav1.Condition, st *state) {
	reporter, ok := st.backend.(backend.GangCapabilityReporter)
	if !ok {
		meta.RemoveStatusCondition(conditions, apicommon.ConditionGangSchedulingUnavailable)
		return
	}
	available, message := reporter.GangSchedulingAvailable()
	c := metav1.Condition{Type: apicommon.ConditionGangSchedulingUnavailable, Status: metav1.ConditionTrue,
		Reason: apicommon.ReasonGangSchedulingNotSupported, Message: message}
	if available {
		c.Status, c.Reason = metav1.ConditionFalse, apicommon.ReasonGangSchedulingSupported
	}
	common.SetCondition(conditions, c, st.stored.Generation)
}

// lastErrors reports the reconcile's problems; an unchanged problem keeps its first sighting so
// the status is not rewritten on every retry.
func lastErrors(previous []corev1alpha1.LastError, st *state, syncErr error) []corev1alpha1.LastError {
	var current []corev1alpha1.LastError
	if len(st.backendErrs) > 0 {
		current = append(current, corev1alpha1.LastError{Code: "SchedulerBackendUnresolved", Description: st.backendErrs.ToAggregate().Error()})
	}
	if syncErr != nil {
		code := "SyncFailed"
		var ce *component.Error
		if errors.As(syncErr, &ce) {
			code = fmt.Sprintf("SyncFailed/%s", ce.Component)
		}
		current = append(current, corev1alpha1.LastError{Code: code, Description: syncErr.Error()})
	}
	now := metav1.Now()
	for i := range current {
		current[i].ObservedAt = now
		for _, p := range previous {
			if p.Code == current[i].Code && p.Description == current[i].Description {
				current[i].ObservedAt = p.ObservedAt
			}
		}
	}
	return current
}

// updateProgress reports (and, for RollingRecreate, drives) the move of the replicas to the
// current generation hash. An update starts when the hash changes; a second change during an
// update starts a new one from where the replicas are, continuing with the replica being
// updated. RollingRecreate updates one replica at a time: the PodClique and scaling-group
// controllers replace the pods of status.updateProgress.currentlyUpdating only, and the next
// replica is picked (unavailable ones first: they have nothing to lose) once every pod of it is
// updated and ready again. Coherent updates as many replicas at a time as its budget allows
// (coherentReplicaBudget). OnDelete picks no replica and ends the update at once.
func updateProgress(st *state, generationHash string, replica func(i int) replicaUpdate,
	pclqs []corev1alpha1.PodClique, pcsgs []corev1alpha1.PodCliqueScalingGroup) *corev1alpha1.PodCliqueSetUpdateProgress {
	previousHash := st.stored.Status.CurrentGenerationHash
	if st.takenOver {
		previousHash = &generationHash // the relabelling is not an update
	}
	progress := st.stored.Status.UpdateProgress.DeepCopy()
	now := metav1.Now()
	if previousHash != nil && *previousHash != generationHash {
		var current []corev1alpha1.PodCliqueSetReplicaUpdateProgress
		if progress != nil && progress.UpdateEndedAt == nil {
			current = progress.CurrentlyUpdating
		}
		progress = &corev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now, CurrentlyUpdating: current}
		if st.pcs.Spec.UpdateStrategy.Type == corev1alpha1.OnDeleteStrategy {
			// As upstream: with OnDelete the operator replaces nothing itself, so the update
			// ends as soon as the new template is accepted (tools such as Dynamo wait for
			// updateEndedAt); pods are replaced as their owners delete them.
			progress.UpdateEndedAt = &now
		}
	}
	if progress == nil || progress.UpdateEndedAt != nil {
		return progress
	}
	progress.UpdatedPodCliques, progress.UpdatedPodCliqueScalingGroups = nil, nil
	for i := range pclqs {
		p := &pclqs[i]
		if metav1.IsControlledBy(p, st.stored) && !common.IsTerminating(p) && ptr.Deref(p.Status.CurrentPodCliqueSetGenerationHash, "") == generationHash {
			progress.UpdatedPodCliques = append(progress.UpdatedPodCliques, p.Name)
		}
	}
	for i := range pcsgs {
		g := &pcsgs[i]
		if metav1.IsControlledBy(g, st.stored) && !common.IsTerminating(g) && ptr.Deref(g.Status.CurrentPodCliqueSetGenerationHash, "") == generationHash {
			progress.UpdatedPodCliqueScalingGroups = append(progress.UpdatedPodCliqueScalingGroups, g.Name)
		}
	}
	sort.Strings(progress.UpdatedPodCliques)
	sort.Strings(progress.UpdatedPodCliqueScalingGroups)
	// The counts upstream Grove reports (and its printer columns show): the PodCliqueSet's own
	// PodCliques are its standalone cliques, one per replica, and one scaling group per group and replica.
	standalone := len(st.pcs.Spec.Template.StandaloneCliques())
	progress.UpdatedPodCliquesCount = int32(len(progress.UpdatedPodCliques))
	progress.TotalPodCliquesCount = st.pcs.Spec.Replicas * int32(standalone)
	progress.UpdatedPodCliqueScalingGroupsCount = int32(len(progress.UpdatedPodCliqueScalingGroups))
	progress.TotalPodCliqueScalingGroupsCount = st.pcs.Spec.Replicas * int32(len(st.pcs.Spec.Template.PodCliqueScalingGroupConfigs))

	var outdated, unavailable []int
	for i := range int(st.pcs.Spec.Replicas) {
		if r := replica(i); !r.updated {
			outdated = append(outdated, i)
			if !r.available {
				unavailable = append(unavailable, i)
			}
		}
	}
	progress.CurrentlyUpdating = nextReplicasToUpdate(st.pcs, progress.CurrentlyUpdating, outdated, unavailable, replica, now)
	// The update ends once every replica is updated and every PodClique and scaling group
	// reports it: the lists above are frozen when it ends, and a scaling group reports its
	// members' hash one status write after they do.
	reported := progress.UpdatedPodCliquesCount == progress.TotalPodCliquesCount &&
		progress.UpdatedPodCliqueScalingGroupsCount == progress.TotalPodCliqueScalingGroupsCount
	if len(progress.CurrentlyUpdating) == 0 && len(outdated) == 0 && reported {
		progress.UpdateEndedAt = &now
	}
	return progress
}

// replicaUpdate is how far a PodCliqueSet replica is with an update.
type replicaUpdate struct {
	// updated: every PodClique has all its pods built from the current template.
	updated bool
	// available: every PodClique and scaling group meets its minAvailable.
	available bool
	// settled: every pod is ready.
	settled bool
}

// nextReplicasToUpdate keeps the replicas still being updated (not yet updated and settled) and
// adds outdated ones, unavailable ones first (they have nothing to lose): one in all under
// RollingRecreate; under Coherent as many as coherentReplicaBudget leaves after the
// unavailable replicas not being updated.
func nextReplicasToUpdate(pcs *corev1alpha1.PodCliqueSet, previous []corev1alpha1.PodCliqueSetReplicaUpdateProgress, outdated, unavailable []int,
	replica func(i int) replicaUpdate, now metav1.Time) []corev1alpha1.PodCliqueSetReplicaUpdateProgress {
	strategy := corev1alpha1.StrategyOf(pcs)
	if !corev1alpha1.IsRollingStrategy(strategy) {
		return nil
	}
	var current []corev1alpha1.PodCliqueSetReplicaUpdateProgress
	updating := map[int]bool{}
	for _, c := range previous {
		i := int(c.ReplicaIndex)
		if r := replica(i); i < int(pcs.Spec.Replicas) && !(r.updated && r.settled) && !updating[i] {
			current = append(current, c)
			updating[i] = true
		}
	}
	add := func(i int) {
		current = append(current, corev1alpha1.PodCliqueSetReplicaUpdateProgress{ReplicaIndex: int32(i), UpdateStartedAt: now})
		updating[i] = true
	}
	if strategy != corev1alpha1.CoherentStrategy {
		if next := append(slices.Clone(unavailable), outdated...); len(current) == 0 && len(next) > 0 {
			add(next[0])
		}
		return current
	}
	// An unavailable replica is always taken: replacing it costs no availability.
	for _, i := range unavailable {
		if !updating[i] {
			add(i)
		}
	}
	down := 0
	for i := range int(pcs.Spec.Replicas) {
		if updating[i] || !replica(i).available {
			down++
		}
	}
	for _, i := range outdated {
		if down >= coherentReplicaBudget(pcs) {
			break
		}
		if !updating[i] {
			add(i)
			down++
		}
	}
	sort.Slice(current, func(a, b int) bool { return current[a].ReplicaIndex < current[b].ReplicaIndex })
	return current
}

// coherentReplicaBudget is how many PodCliqueSet replicas a Coherent update takes down at once:
// a replica moves as a whole, so each component's maxUnavailable is read against the
// PodCliqueSet's replicas, and the smallest wins.
func coherentReplicaBudget(pcs *corev1alpha1.PodCliqueSet) int {
	budget := int32(0)
	take := func(ru *corev1alpha1.RollingUpdateConfiguration) {
		if b := corev1alpha1.ResolveMaxUnavailable(ru, pcs.Spec.Replicas); budget == 0 || b < budget {
			budget = b
		}
	}
	for _, c := range pcs.Spec.Template.StandaloneCliques() {
		take(c.RollingUpdate)
	}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		take(pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].RollingUpdate)
	}
	return int(max(budget, 1))
}
