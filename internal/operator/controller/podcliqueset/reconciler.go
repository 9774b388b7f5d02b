// Package podcliqueset is the PodCliqueSet controller. It keeps, in dependency order, the
// objects a PodCliqueSet is made of: the pods' ServiceAccount, Role and RoleBinding, one
// headless Service per replica, the standalone PodCliques, the PodCliqueScalingGroups, their
// HorizontalPodAutoscalers and the PodGangs, and reports the PodCliqueSet's status.
package podcliqueset

import (
	"cmp"
	"context"
	"errors"
	"sync"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	grovemetrics "github.com/ai-dynamo/grove/internal/operator/metrics"
	"github.com/ai-dynamo/grove/internal/operator/packing"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/common"
	"github.com/ai-dynamo/grove/internal/operator/controller/component"
	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
	"github.com/ai-dynamo/grove/internal/operator/resourceclaim"
)

// Reconciler reconciles PodCliqueSets.
type Reconciler struct {
	Client client.Client
	// GangClient writes the PodGangs and their Initialized condition (Client when nil). A
	// client of its own keeps a PodGang's create, on which its pods' gates wait, from queueing
	// on one client-side rate limiter behind the PodCliques, Services and other children of
	// hundreds of replicas.
	GangClient client.Client
	// StatusClient writes the PodCliqueSet's status (Client when nil). Status is written at the
	// end of every reconcile that changed it; on the children's client, 100 PodCliqueSets
	// applied at once spent a fifth of its rate limiter on status, and the children of the
	// later ones waited for it.
	StatusClient client.Client
	Registry     *backend.Registry
	Recorder     events.EventRecorder
	// TopologyAwareScheduling decides whether constraints are translated at all.
	TopologyAwareScheduling configv1alpha1.TopologyAwareSchedulingConfiguration
	// Claims keeps the ResourceClaims of the PodCliqueSet's resourceSharing entries.
	Claims *resourceclaim.Syncer
	// PartialBindingTimeout bounds how long a PodGang may stay partly bound
	// (podGang.partialBindingTimeout); 0 means the default.
	PartialBindingTimeout time.Duration
	// NodeFailure configures the replacement of pods on failed nodes (nodefailure.go); unset
	// keys take their defaults.
	NodeFailure configv1alpha1.NodeFailureConfiguration

	// syncedPodGangs remembers the generation and metadata of each PodGang the backend last
	// synced, so SyncPodGang runs once per create, spec or metadata change and again after a
	// failure. It is a memo of the backend's work, not of this controller's writes.
	syncedPodGangs sync.Map // types.UID -> syncedGang
	// replacingSince remembers when the gang writer first held back the pod-list patch of a
	// PodGang whose pods an update replaces (replacementPending), to bound the wait.
	replacingSince sync.Map // types.UID -> time.Time
	// generationSince remembers when the readiness writer first put off a PodGang's Ready
	// write that would only have advanced observedGeneration (gangreadiness.go).
	generationSince sync.Map // types.UID -> time.Time
	// nodeFailureMemo keeps the status.nodeFailures each PodCliqueSet's last reconcile computed
	// (nodefailure.go).
	nodeFailureMemo sync.Map // types.UID -> []corev1alpha1.ReplicaNodeFailureStatus
	// writes records the PodCliqueSet controller's writes (its children, their deletes, the
	// status), gangWrites those of the gang writer and its fast path (common.Writes): a
	// reconcile starts only once the cache shows the last writes made for its PodCliqueSet. At
	// 500 replicas, passes on a cache that did not show them made duplicate creates and
	// conflicting status writes, and acted twice on a gang breach or a partly bound gang.
	writes, gangWrites *common.Writes
	writesSet          sync.Once
	// gangCreator: the gang creator runs (SetupWithManager), so passes leave it the gangs
	// that just became complete.
	gangCreator bool
	// clock is the real clock unless a test sets it.
	clock clock.PassiveClock
	// gangs writes the PodGangs (gangwriter.go); SetupWithManager starts it.
	gangs *gangWriter
}

func (r *Reconciler) now() time.Time {
	if r.clock == nil {
		return time.Now()
	}
	return r.clock.Now()
}

// state is what one reconcile of a PodCliqueSet works from.
type state struct {
	// pcs has the defaults of the defaulting webhook applied, for objects that bypassed it.
	pcs *corev1alpha1.PodCliqueSet
	// stored is the PodCliqueSet as read, the base of the status patch.
	stored *corev1alpha1.PodCliqueSet
	// backend is the scheduler backend of the PodCliqueSet; nil when backendErrs explains why.
	backend     backend.Backend
	backendErrs field.ErrorList
	// topology is set when topology-aware scheduling applies to this PodCliqueSet.
	topology *topologyState
	// missingPriorityClasses are the PriorityClasses the pods name that do not exist.
	missingPriorityClasses []string
	// podGangConflicts describe PodGangs whose names are held by objects not owned by this
	// PodCliqueSet.
	podGangConflicts []string
	// nameConflicts are the children whose names are held by objects Grove did not create.
	nameConflicts []*common.NameConflict
	// serviceAccountTaken: the pods' ServiceAccount name is held by one Grove did not create.
	serviceAccountTaken bool
	// takenOver: this reconcile adopted objects another Grove operator wrote (adopt.go).
	takenOver bool
	// gangsPending: the gang writer has not written this generation's PodGangs yet, so the
	// generation is not observed.
	gangsPending bool
	// requeue is when the reconcile must run again without an event (a pending breach expires).
	requeue time.Duration
	// children: the PodCliqueSet's children as this reconcile observed them.
	children *children
	// hashes of pcs's template, computed on first use (templateHashes).
	hashesOnce sync.Once
	hashes     *hash.Templates
	// nodeFailures is status.nodeFailures as the node-failure component computed it (set when
	// nodeFailuresSynced); backOffs are the replicas whose next replacement waits, until when.
	nodeFailures       []corev1alpha1.ReplicaNodeFailureStatus
	nodeFailuresSynced bool
	backOffs           map[int]time.Time
	// mu guards requeue, podGangConflicts and nameConflicts, which the PodGang writes of one slow-start
	// batch report concurrently.
	mu sync.Mutex
}

// conflict records err when it is a name conflict, to be reported on the PodCliqueSet, and
// returns nil for it: the other children are kept as usual. The foreign object's deletion sends
// no event this controller sees, so the name is looked at again shortly.
func (s *state) conflict(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var rest []error
		for _, e := range joined.Unwrap() {
			rest = append(rest, s.conflict(e))
		}
		return errors.Join(rest...)
	}
	nc, ok := common.AsNameConflict(err)
	if !ok {
		return err
	}
	s.mu.Lock()
	s.nameConflicts = append(s.nameConflicts, nc)
	s.mu.Unlock()
	s.requeueAfter(common.NameConflictRecheck)
	return nil
}

// requeueAfter asks for the reconcile to run again within d.
func (s *state) requeueAfter(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.requeue == 0 || d < s.requeue {
		s.requeue = d
	}
}

// setBackOff records that replica i's next replacement waits until t.
func (s *state) setBackOff(i int, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backOffs == nil {
		s.backOffs = map[int]time.Time{}
	}
	s.backOffs[i] = t
}

// backOff is when replica i's next replacement may be made (zero when it need not wait).
func (s *state) backOff(i int) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backOffs[i]
}

// updatingReplica reports whether a rolling update is replacing the pods of replica i.
func (s *state) updatingReplica(i int) bool {
	return common.IsReplicaBeingUpdated(s.stored, i)
}

type topologyState struct {
	name  string
	found bool
	// disabled: topology-aware scheduling is off; the constraints are not translated.
	disabled   bool
	translated packing.Translated
}

// translated is the translation to apply to PodGangs (empty when there is none).
func (s *state) translated() packing.Translated {
	if s.topology == nil {
		return packing.Translated{}
	}
	return s.topology.translated
}

func (r *Reconciler) components() []component.Component[*state] {
	return []component.Component[*state]{
		&serviceAccounts{r}, &roles{r}, &roleBindings{r}, &resourceClaims{r},
		&gangTermination{r}, &nodeFailures{r}, &podCliques{r}, &scalingGroups{r}, &horizontalPodAutoscalers{r},
		// The PodGangs have a controller of their own (gangwriter.go). Pods need not wait for
		// their replica's Service: it comes after what gates them.
		&headlessServices{r}, &partialGangs{r}, &gangReadiness{r},
	}
}

// deletionOrder lists the components in the order a deleted PodCliqueSet's objects go: the
// PodCliques first (their controller deletes the pods, which is what frees the nodes), then
// the PodGangs and what the pods used, the Services, claims and RBAC last.
func (r *Reconciler) deletionOrder() []component.Component[*state] {
	return []component.Component[*state]{
		&podCliques{r}, &scalingGroups{r}, &horizontalPodAutoscalers{r}, &podGangs{r}, &partialGangs{r}, &gangTermination{r}, &nodeFailures{r},
		&headlessServices{r}, &resourceClaims{r}, &roleBindings{r}, &roles{r}, &serviceAccounts{r},
	}
}

// Reconcile syncs the components of a PodCliqueSet in order and reports its status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r.initWrites(nil)
	if !r.writes.CaughtUp(ctx, &corev1alpha1.PodCliqueSet{}, req.NamespacedName) {
		return common.Requeue(), nil
	}
	stored := &corev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, stored); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.Forget(stored, req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = r.writes.For(ctx, stored)
	st := r.newState(stored)
	if common.IsTerminating(stored) {
		if err := component.DeleteAll(ctx, st, r.deletionOrder()...); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, common.RemoveFinalizer(ctx, r.Client, stored, apicommon.FinalizerPodCliqueSet)
	}
	if err := common.EnsureFinalizer(ctx, r.Client, stored, apicommon.FinalizerPodCliqueSet); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.adoptForeignHashes(ctx, st); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.resolveTopology(ctx, st); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.resolvePriorityClasses(ctx, st); err != nil {
		return reconcile.Result{}, err
	}
	syncErr := component.SyncAll(ctx, st, r.components()...)
	// The status reports the gang writer's error too; the writer retries it itself.
	statusErr := r.updateStatus(ctx, st, cmp.Or(syncErr, r.gangsOutcome(req.NamespacedName, st)))
	grovemetrics.ObserveReconcileError(ControllerName, errors.Join(syncErr, statusErr))
	return reconcile.Result{RequeueAfter: st.requeue}, errors.Join(syncErr, statusErr)
}

// newState is what a reconcile of the PodCliqueSet starts from: the stored object, a copy with
// the webhook's defaults, its children (listed on first use) and its scheduler backend.
func (r *Reconciler) newState(stored *corev1alpha1.PodCliqueSet) *state {
	st := &state{pcs: stored.DeepCopy(), stored: stored, children: newChildren(r.Client, stored)}
	corev1alpha1.SetDefaultsPodCliqueSet(st.pcs)
	st.backend, st.backendErrs = r.Registry.ForPodCliqueSet(st.pcs)
	return st
}

// templateHashes are the hashes of the (defaulted) template, computed once per reconcile.
func (st *state) templateHashes() *hash.Templates {
	st.hashesOnce.Do(func() { st.hashes = hash.NewTemplates(&st.pcs.Spec.Template) })
	return st.hashes
}

// gangsOutcome is the gang writer's last sync of the PodCliqueSet, for its status: the PodGang
// names foreign objects hold go into st, a generation not written yet marks st.gangsPending, and
// the error is the writer's sync error.
func (r *Reconciler) gangsOutcome(key types.NamespacedName, st *state) error {
	if r.gangs == nil {
		return nil
	}
	err := r.gangs.outcome(key, st)
	if errors.Is(err, errGangsPending) {
		st.gangsPending = true
		return nil
	}
	return err
}

// resolveTopology reads the ClusterTopology the constraints refer to, when topology-aware
// scheduling is enabled and the PodCliqueSet has constraints.
func (r *Reconciler) resolveTopology(ctx context.Context, st *state) error {
	t := &st.pcs.Spec.Template
	if !packing.HasConstraints(t) {
		return nil
	}
	ts := &topologyState{name: packing.NameOf(t), disabled: !r.TopologyAwareScheduling.Enabled}
	if ts.disabled {
		st.topology = ts // reported in status; nothing is translated
		return nil
	}
	var levels []corev1alpha1.TopologyLevel
	if ts.name != "" {
		ct := &corev1alpha1.ClusterTopology{}
		err := r.Client.Get(ctx, client.ObjectKey{Name: ts.name}, ct)
		switch {
		case err == nil:
			ts.found, levels = true, ct.Spec.Levels
		case !apierrors.IsNotFound(err):
			return err
		}
	}
	ts.translated = packing.Translate(t, levels)
	st.topology = ts
	return nil
}

func (r *Reconciler) gangClient() client.Client {
	return cmp.Or(r.GangClient, r.Client) // the manager's client when no writer has its own
}

func (r *Reconciler) statusClient() client.Client { return cmp.Or(r.StatusClient, r.Client) }

// forgetPodGang drops what is kept of a PodGang deleted on purpose.
func (r *Reconciler) forgetPodGang(pg client.Object) {
	r.syncedPodGangs.Delete(pg.GetUID())
	r.replacingSince.Delete(pg.GetUID())
	r.generationSince.Delete(pg.GetUID())
}

// initWrites makes the records of writes and routes each client's writes through its own;
// informers is the manager's cache (nil when the Reconciler is driven by hand).
func (r *Reconciler) initWrites(informers cache.Informers) {
	r.writesSet.Do(func() {
		scheme, base := r.Client.Scheme(), r.Client
		// A record a test set is kept.
		if r.writes == nil {
			r.writes = common.NewWrites(scheme, informers, base, &corev1alpha1.PodCliqueSet{}, &corev1alpha1.PodClique{},
				&corev1alpha1.PodCliqueScalingGroup{}, &schedv1alpha1.PodGang{}, &corev1.Pod{}, &corev1.Service{},
				&corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}, &autoscalingv2.HorizontalPodAutoscaler{})
		}
		if r.gangWrites == nil {
			r.gangWrites = common.NewWrites(scheme, informers, base, &schedv1alpha1.PodGang{})
			r.gangWrites.RememberCreates(&schedv1alpha1.PodGang{})
		}
		r.Client = r.writes.Client(base)
		if r.StatusClient != nil {
			r.StatusClient = r.writes.Client(r.StatusClient)
		}
		r.GangClient = r.gangWrites.Client(cmp.Or(r.GangClient, base))
	})
}
