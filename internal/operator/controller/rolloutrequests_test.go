package controller_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	groveclient "github.com/ai-dynamo/grove/pkg/client"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
	"github.com/ai-dynamo/grove/internal/operator/controller/podcliquescalinggroup"
	"github.com/ai-dynamo/grove/internal/operator/controller/podcliqueset"
)

// requestCounter wraps a controller's client and counts what an update costs: dry-run creates,
// patches of a scaling group's own object (not its status), and how many pod deletions are in
// flight at once. A deletion waits, up to a bound, for `together` deletions to be in flight:
// deletions sent together all get there, deletions sent one after another never do.
type requestCounter struct {
	client.Client
	together int

	mu                    sync.Mutex
	counting              bool
	dryRuns, pcsgPatches  int
	inFlight, maxInFlight int
	deletionsSeen         int
	arrived               *sync.Cond
}

func newRequestCounter(c client.Client, together int) *requestCounter {
	rc := &requestCounter{Client: c, together: together}
	rc.arrived = sync.NewCond(&rc.mu)
	return rc
}

func (rc *requestCounter) start() {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.counting, rc.dryRuns, rc.pcsgPatches, rc.maxInFlight, rc.deletionsSeen = true, 0, 0, 0, 0
}

func (rc *requestCounter) snapshot() (dryRuns, pcsgPatches, maxInFlight, deletions int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.dryRuns, rc.pcsgPatches, rc.maxInFlight, rc.deletionsSeen
}

func (rc *requestCounter) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	o := &client.CreateOptions{}
	o.ApplyOptions(opts)
	if len(o.DryRun) > 0 {
		rc.mu.Lock()
		if rc.counting {
			rc.dryRuns++
		}
		rc.mu.Unlock()
	}
	return rc.Client.Create(ctx, obj, opts...)
}

func (rc *requestCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*corev1alpha1.PodCliqueScalingGroup); ok {
		rc.mu.Lock()
		if rc.counting {
			rc.pcsgPatches++
		}
		rc.mu.Unlock()
	}
	return rc.Client.Patch(ctx, obj, patch, opts...)
}

func (rc *requestCounter) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*corev1.Pod); !ok {
		return rc.Client.Delete(ctx, obj, opts...)
	}
	rc.mu.Lock()
	counting := rc.counting
	if counting {
		rc.deletionsSeen++
		rc.inFlight++
		rc.maxInFlight = max(rc.maxInFlight, rc.inFlight)
		rc.arrived.Broadcast()
		deadline := time.Now().Add(2 * time.Second)
		timer := time.AfterFunc(2*time.Second, func() { rc.mu.Lock(); rc.arrived.Broadcast(); rc.mu.Unlock() })
		for rc.inFlight < rc.together && time.Now().Before(deadline) {
			rc.arrived.Wait()
		}
		timer.Stop()
	}
	rc.mu.Unlock()
	err := rc.Client.Delete(ctx, obj, opts...)
	if counting {
		rc.mu.Lock()
		rc.inFlight--
		rc.mu.Unlock()
	}
	return err
}

// TestRolloutStepRequests counts the requests a rolling update of four scaling-group replicas
// (three pods each) and a router of three pods costs the controllers: the new template is
// dry-run once per template, not once per replica or pod replaced (a live pod of it shows the
// apiserver creates them); a group replica's pods are deleted together, not one round trip
// after another; and the scaling group's update progress is written without patching the
// group's own object (a merge patch of the status made the status two managers', and every
// status apply after it first patched managedFields).
func TestRolloutStepRequests(t *testing.T) {
	e := newNamespace(t)
	groupClient, cliqueClient := &requestCounter{}, &requestCounter{}
	e.writers = map[string]func(client.Client) client.Client{
		podcliquescalinggroup.ControllerName: func(c client.Client) client.Client {
			groupClient = newRequestCounter(c, 3)
			return groupClient
		},
		podclique.ControllerName: func(c client.Client) client.Client {
			cliqueClient = newRequestCounter(c, 1)
			return cliqueClient
		},
	}
	e.startOperator()
	pcs := disaggregated(e.ns, "steps", 1)
	pcs.Spec.Template.Clique("router").Spec.Replicas = 3
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
	e.create(pcs)
	tr := e.trackPods(fullStrength("steps", 1, 4, 3))
	e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "steps", 1, 15)

	groupClient.start()
	cliqueClient.start()
	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitUpdated("steps", 1)

	dryRuns, patches, together, deletions := groupClient.snapshot()
	assert.Equal(t, 12, deletions, "every group pod replaced once")
	assert.LessOrEqual(t, dryRuns, 2, "scaling group: one dry run per member template (prefill, decode), not one per replica replaced")
	assert.Equal(t, 3, together, "a group replica's three pods deleted together")
	assert.Zero(t, patches, "no patch of the scaling group's own object")
	cliqueDryRuns, _, _, routerDeletions := cliqueClient.snapshot()
	assert.Equal(t, 3, routerDeletions, "every router pod replaced once")
	assert.LessOrEqual(t, cliqueDryRuns, 1, "router: one dry run, not one per pod replaced")

	_, _, shortGroupReplicas, _ := tr.snapshot()
	assert.Equal(t, 1, shortGroupReplicas["steps-0-workers"], "the budget (1) still holds")
}

// gangStatusCounter wraps the PodCliqueSet controller's client and measures how many PodGang
// status applies are in flight at once; an apply waits, up to a bound, for `together` of them.
type gangStatusCounter struct {
	client.Client
	together int

	mu                    sync.Mutex
	counting              bool
	inFlight, maxInFlight int
	arrived               *sync.Cond
}

func (g *gangStatusCounter) Status() client.SubResourceWriter { return g.SubResource("status") }

func (g *gangStatusCounter) SubResource(sub string) client.SubResourceClient {
	if sub != "status" {
		return g.Client.SubResource(sub)
	}
	return &gangStatusApplies{SubResourceClient: g.Client.SubResource(sub), g: g}
}

type gangStatusApplies struct {
	client.SubResourceClient
	g *gangStatusCounter
}

func (s *gangStatusApplies) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	g := s.g
	_, gang := obj.(*schedulerac.PodGangApplyConfiguration)
	g.mu.Lock()
	counting := g.counting && gang
	if counting {
		g.inFlight++
		g.maxInFlight = max(g.maxInFlight, g.inFlight)
		g.arrived.Broadcast()
		deadline := time.Now().Add(2 * time.Second)
		timer := time.AfterFunc(2*time.Second, func() { g.mu.Lock(); g.arrived.Broadcast(); g.mu.Unlock() })
		for g.inFlight < g.together && time.Now().Before(deadline) {
			g.arrived.Wait()
		}
		timer.Stop()
	}
	g.mu.Unlock()
	err := s.SubResourceClient.Apply(ctx, obj, opts...)
	if counting {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}
	return err
}

// TestGangReadinessWritesGoOutTogether: when the Ready condition of several PodGangs is due in
// one pass of the PodCliqueSet controller, the writes go out together, not one round trip after
// another (at 166 gangs, one after another held the pass, and the status write after it, for
// about 9 s). Here the operator is stopped once the gangs are ready, their Ready conditions are
// set False behind its back, and the restarted operator's first pass finds all of them due.
func TestGangReadinessWritesGoOutTogether(t *testing.T) {
	e := newNamespace(t)
	stop := e.startOperator()
	e.runGroupOfFour("ready")
	gangs := &schedv1alpha1.PodGangList{}
	allReady := func(c *assert.CollectT) {
		require.NoError(c, e.c.List(e.ctx, gangs, client.InNamespace(e.ns)))
		assert.Len(c, gangs.Items, 4)
		for _, pg := range gangs.Items {
			assert.True(c, meta.IsStatusConditionTrue(pg.Status.Conditions, apicommon.ConditionReady), "%s ready", pg.Name)
		}
	}
	e.eventually(allReady)
	stop()

	for i := range gangs.Items {
		pg := &gangs.Items[i]
		stale := schedulerac.PodGangStatus().WithConditions(groveclient.Condition(metav1.Condition{
			Type: apicommon.ConditionReady, Status: metav1.ConditionFalse, Reason: "Stale", Message: "written by the test",
			ObservedGeneration: pg.Generation, LastTransitionTime: metav1.Now()}))
		require.NoError(t, e.c.Status().Apply(e.ctx, schedulerac.PodGang(pg.Name, pg.Namespace).WithStatus(stale),
			client.FieldOwner(apicommon.PodGangReadinessFieldManager), client.ForceOwnership))
	}

	counter := &gangStatusCounter{}
	e.writers = map[string]func(client.Client) client.Client{
		podcliqueset.ControllerName: func(c client.Client) client.Client {
			counter = &gangStatusCounter{Client: c, together: 2, counting: true}
			counter.arrived = sync.NewCond(&counter.mu)
			return counter
		},
	}
	e.startOperator()
	e.eventually(allReady)
	counter.mu.Lock()
	defer counter.mu.Unlock()
	assert.GreaterOrEqual(t, counter.maxInFlight, 2, "PodGang Ready writes in flight at once")
}

// readinessWriteCounter wraps the PodCliqueSet controller's client and counts the PodGang
// readiness applies that change nothing but the Ready condition's observedGeneration, compared
// with the PodGang as the apiserver has it when the apply goes out.
type readinessWriteCounter struct {
	client.Client
	direct client.Client

	mu             sync.Mutex
	counting       bool
	all            int
	generationOnly map[string]int
}

func (g *readinessWriteCounter) Status() client.SubResourceWriter { return g.SubResource("status") }

func (g *readinessWriteCounter) SubResource(sub string) client.SubResourceClient {
	if sub != "status" {
		return g.Client.SubResource(sub)
	}
	return &readinessApplies{SubResourceClient: g.Client.SubResource(sub), g: g}
}

type readinessApplies struct {
	client.SubResourceClient
	g *readinessWriteCounter
}

func (s *readinessApplies) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	g := s.g
	g.mu.Lock()
	counting := g.counting
	g.mu.Unlock()
	if ac, ok := obj.(*schedulerac.PodGangApplyConfiguration); counting && ok && ac.Status != nil && len(ac.Status.Conditions) == 1 &&
		ptr.Deref(ac.Status.Conditions[0].Type, "") == schedv1alpha1.PodGangConditionReady {
		stored := &schedv1alpha1.PodGang{}
		if err := g.direct.Get(ctx, client.ObjectKey{Namespace: *ac.Namespace, Name: *ac.Name}, stored); err == nil {
			want, c := ac.Status.Conditions[0], meta.FindStatusCondition(stored.Status.Conditions, schedv1alpha1.PodGangConditionReady)
			sameTime := func(a, b *metav1.Time) bool {
				return (a == nil) == (b == nil) && (a == nil || a.Truncate(time.Second).Equal(b.Truncate(time.Second)))
			}
			g.mu.Lock()
			g.all++
			// A repeat of what is stored (a pass on a cache behind its own last write) is not
			// what this counts: only a write whose sole change is observedGeneration.
			if c != nil && c.ObservedGeneration != ptr.Deref(want.ObservedGeneration, 0) &&
				c.Status == *want.Status && c.Reason == *want.Reason && c.Message == *want.Message &&
				sameTime(stored.Status.LastScheduled, ac.Status.LastScheduled) && sameTime(stored.Status.LastReady, ac.Status.LastReady) {
				g.generationOnly[stored.Name]++
			}
			g.mu.Unlock()
		}
	}
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}

// TestReplacedGangReadinessNotRewrittenForGenerationAlone: an update patches the pod list of each
// PodGang whose pods it replaces, while the gang is still down; its Ready condition (False,
// InsufficientReadyPods) is right for the new generation too, and is not written again only to
// advance observedGeneration: that comes with the next write the gang needs anyway, once its
// replacements are placed.
func TestReplacedGangReadinessNotRewrittenForGenerationAlone(t *testing.T) {
	e := newNamespace(t)
	counter := &readinessWriteCounter{direct: e.c, generationOnly: map[string]int{}}
	e.writers = map[string]func(client.Client) client.Client{
		podcliqueset.ControllerName: func(c client.Client) client.Client {
			counter.Client = c
			return counter
		},
	}
	e.startOperator()
	pcs := e.runGroupOfFour("gen")
	counter.mu.Lock()
	counter.counting = true
	counter.mu.Unlock()

	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitUpdated("gen", 1)
	counter.mu.Lock()
	defer counter.mu.Unlock()
	t.Logf("readiness applies: %d, of which only observedGeneration: %v", counter.all, counter.generationOnly)
	assert.Positive(t, counter.all, "the replaced gangs' readiness is written")
	assert.Empty(t, counter.generationOnly, "PodGang readiness applies that only advance observedGeneration")
}

// runGroupOfFour creates the disaggregated PodCliqueSet name with 4 scaling-group replicas (the
// base gang and 3 scaled ones) and waits until every pod is ready.
func (e *env) runGroupOfFour(name string) *corev1alpha1.PodCliqueSet {
	e.t.Helper()
	pcs := disaggregated(e.ns, name, 1)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](4)
	e.create(pcs)
	tr := e.trackPods(fullStrength(name, 1, 4, 1))
	e.startScheduler(e.kwokNode())
	e.waitRunning(tr, name, 1, 13)
	return pcs
}
