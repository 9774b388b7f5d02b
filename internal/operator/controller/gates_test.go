package controller_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
	"github.com/ai-dynamo/grove/internal/operator/controller/podcliqueset"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestSchedulingGatesOpenInGangOrder: pods of the base PodGang are ungated as soon as their
// gang lists them; pods of a scaled PodGang stay gated until every group of the base gang has
// minReplicas pods scheduled (pods are "scheduled" here by binding them to a Node). The pods
// are default-scheduler's, a backend whose pods are gated (grove-scheduler's are not:
// TestGroveSchedulerPodsAreCreatedWithoutTheGate).
func TestSchedulingGatesOpenInGangOrder(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "order", 1)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = string(configv1alpha1.SchedulerNameKube)
	}
	e.create(pcs)
	base := []string{"order-0-router", "order-0-workers-0-prefill", "order-0-workers-0-decode"}
	scaled := []string{"order-0-workers-1-prefill", "order-0-workers-1-decode"}

	e.eventually(func(c *assert.CollectT) {
		for _, pclq := range base {
			for _, p := range e.pods(pclq) {
				assert.False(c, gated(&p), "base gang pod %s", p.Name)
			}
		}
		scaledGang := e.podGang(c, "order-0-workers-0")
		for i, pclq := range scaled {
			pods := e.pods(pclq)
			assert.Equal(c, podNames(pods), refNames(scaledGang.Spec.PodGroups[i]), "the scaled gang lists its pods")
			// The PodClique controller has seen those pods (and the gang) and left them gated.
			pc := &corev1alpha1.PodClique{}
			if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: pclq}, pc)) {
				assert.EqualValues(c, pc.Spec.Replicas, pc.Status.ScheduleGatedReplicas)
			}
		}
	})
	for _, pclq := range scaled {
		for _, p := range e.pods(pclq) {
			assert.True(t, gated(&p), "scaled gang pod %s must wait for the base gang", p.Name)
		}
	}

	node := e.node()
	// Schedule the base gang except its prefill group: still below minReplicas there.
	for _, pclq := range []string{"order-0-router", "order-0-workers-0-decode"} {
		for _, p := range e.pods(pclq) {
			e.bind(&p, node)
		}
	}
	e.eventually(func(c *assert.CollectT) {
		pc := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "order-0-workers-0-decode"}, pc))
		assert.EqualValues(c, 1, pc.Status.ScheduledReplicas)
	})
	assert.Never(t, func() bool {
		for _, pclq := range scaled {
			for _, p := range e.pods(pclq) {
				if !gated(&p) {
					return true
				}
			}
		}
		return false
	}, 2*time.Second, tick, "a base group below minReplicas keeps the scaled gang gated")

	prefill := e.pods("order-0-workers-0-prefill")
	require.Len(t, prefill, 2)
	for _, p := range prefill {
		e.bind(&p, node)
	}
	e.eventually(func(c *assert.CollectT) {
		for _, pclq := range scaled {
			pods := e.pods(pclq)
			assert.NotEmpty(c, pods)
			for _, p := range pods {
				assert.False(c, gated(&p), "scaled gang pod %s once the base gang is scheduled", p.Name)
			}
		}
	})
}

// heldCreates is a writer's client whose creation of some objects waits until released, the way
// creations wait on a saturated client-side rate limiter.
type heldCreates struct {
	client.Client
	// podsOf holds the pods of this PodClique; podClique holds the PodClique of this name.
	podsOf, podClique string
	release           chan struct{}
	held              chan struct{} // closed when the first creation is held
	once              sync.Once

	releaseOnce sync.Once
}

// newHeldCreates holds the creations that hold selects until releaseAll or the end of the test.
func newHeldCreates(t *testing.T, hold *heldCreates) *heldCreates {
	hold.release, hold.held = make(chan struct{}), make(chan struct{})
	t.Cleanup(hold.releaseAll)
	return hold
}

// releaseAll lets the held creations (and any later one) through.
func (h *heldCreates) releaseAll() { h.releaseOnce.Do(func() { close(h.release) }) }

// waitHeld waits until the first creation is held.
func (h *heldCreates) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-h.held:
	case <-time.After(waitFor):
		t.Fatal("the held creation never started")
	}
}

// writer wraps the client of one writer with h.
func (h *heldCreates) writer(name string) map[string]func(client.Client) client.Client {
	return map[string]func(client.Client) client.Client{name: func(c client.Client) client.Client {
		h.Client = c
		return h
	}}
}

func (h *heldCreates) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	_, isPod := obj.(*corev1.Pod)
	_, isPodClique := obj.(*corev1alpha1.PodClique)
	if isPod && h.podsOf != "" && obj.GetLabels()[apicommon.LabelPodClique] == h.podsOf ||
		isPodClique && h.podClique != "" && obj.GetName() == h.podClique {
		h.once.Do(func() { close(h.held) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Client.Create(ctx, obj, opts...)
}

// TestGatesOpenWhileOtherCliquesAreStillCreatingPods: a gang whose pods exist and are listed is
// ungated even while the PodClique controller's every worker is busy creating other cliques'
// pods. Its one worker is held in replica 1's pod creation here; before the gates had a
// controller of their own, replica 0's gate waited in the same queue until that creation ended.
func TestGatesOpenWhileOtherCliquesAreStillCreatingPods(t *testing.T) {
	e := newNamespace(t)
	hold := newHeldCreates(t, &heldCreates{podsOf: "busy-1-w"})
	e.writers = hold.writer(podclique.ControllerName)
	e.startOperator(withConfig(func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.Controllers.PodClique.ConcurrentSyncs = ptr.To(1)
	}))
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "busy"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 1)}}}})

	hold.waitHeld(t)
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("busy-0-w")
		if assert.Len(c, pods, 1) {
			assert.Equal(c, podNames(pods), refNames(e.podGang(c, "busy-0").Spec.PodGroups[0]), "the gang lists its pod")
			assert.False(c, gated(&pods[0]), "replica 0's pod is ungated while replica 1's creation is held")
		}
	})
	assert.Empty(t, e.pods("busy-1-w"), "replica 1's creation was still held")

	hold.releaseAll()
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("busy-1-w")
		if assert.Len(c, pods, 1) {
			assert.False(c, gated(&pods[0]), "replica 1's pod once created and listed")
		}
	})
}

// TestPodGangsAreWrittenWhileThePodCliqueSetIsStillCreatingPodCliques: a replica whose pods exist
// gets its PodGang (and its pods their gates lifted) while the PodCliqueSet controller is still
// creating the PodCliques of other replicas. The controller's creation of replica 1's PodClique
// is held here; before the PodGangs had a writer of their own, they came in a later pass of the
// same reconcile, so none was written until that creation ended.
func TestPodGangsAreWrittenWhileThePodCliqueSetIsStillCreatingPodCliques(t *testing.T) {
	e := newNamespace(t)
	hold := newHeldCreates(t, &heldCreates{podClique: "early-1-w"})
	e.writers = hold.writer(podcliqueset.ControllerName)
	e.startOperator()
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "early"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 1)}}}})

	hold.waitHeld(t)
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("early-0-w")
		if assert.Len(c, pods, 1) {
			assert.Equal(c, podNames(pods), refNames(e.podGang(c, "early-0").Spec.PodGroups[0]), "the gang lists its pod")
			assert.False(c, gated(&pods[0]), "replica 0's pod is ungated while replica 1's PodClique is held")
		}
	})
	pclq := &corev1alpha1.PodClique{}
	require.True(t, apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "early-1-w"}, pclq)),
		"replica 1's PodClique creation was still held")

	hold.releaseAll()
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("early-1-w")
		if assert.Len(c, pods, 1) {
			assert.False(c, gated(&pods[0]), "replica 1's pod once created and listed")
		}
	})
}

// TestPodCliqueSetStatusIsWrittenOnAClientOfItsOwn: the PodCliqueSet controller writes its status
// through the podcliqueset-status client, so status writes never take a share of the rate
// limiter its children's creates wait on (with 100 PodCliqueSets applied at once they were a
// fifth of it).
func TestPodCliqueSetStatusIsWrittenOnAClientOfItsOwn(t *testing.T) {
	e := newNamespace(t)
	writes := &statusWrites{by: map[string]int{}}
	e.writers = map[string]func(client.Client) client.Client{
		podcliqueset.ControllerName: writes.counted(podcliqueset.ControllerName), podcliqueset.StatusWriterName: writes.counted(podcliqueset.StatusWriterName),
	}
	e.startOperator()
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "own"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 1)}}}})

	e.eventually(func(c *assert.CollectT) {
		pcs := e.pcs(c, "own")
		assert.Equal(c, ptr.To(pcs.Generation), pcs.Status.ObservedGeneration, "the status is written")
	})
	assert.Positive(t, writes.of(podcliqueset.StatusWriterName), "status writes through %s", podcliqueset.StatusWriterName)
	assert.Zero(t, writes.of(podcliqueset.ControllerName), "status writes through the children's client")
}

// statusWrites counts the PodCliqueSet status writes (patches and applies) each wrapped client
// makes.
type statusWrites struct {
	mu sync.Mutex
	by map[string]int
}

func (w *statusWrites) of(name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.by[name]
}

func (w *statusWrites) counted(name string) func(client.Client) client.Client {
	return func(c client.Client) client.Client {
		count := func(kind string) {
			if kind == "PodCliqueSet" {
				w.mu.Lock()
				w.by[name]++
				w.mu.Unlock()
			}
		}
		return &statusHooked{Client: c,
			beforePatch: func(obj client.Object) {
				if _, ok := obj.(*corev1alpha1.PodCliqueSet); ok {
					count("PodCliqueSet")
				}
			},
			applied: func(obj runtime.ApplyConfiguration) {
				if u, ok := obj.(interface{ GetKind() string }); ok {
					count(u.GetKind())
				}
			}}
	}
}

// statusHooked is a client whose status writes pass through hooks first: beforePatch sees each
// status patch, applied each status apply, and beforeApply may answer a status apply itself (a
// non-nil error, unsent).
type statusHooked struct {
	client.Client
	beforePatch func(obj client.Object)
	applied     func(obj runtime.ApplyConfiguration)
	beforeApply func() error
}

func (c *statusHooked) Status() client.SubResourceWriter { return c.SubResource("status") }

func (c *statusHooked) SubResource(sub string) client.SubResourceClient {
	if sub != "status" {
		return c.Client.SubResource(sub)
	}
	return &hookedStatusWriter{SubResourceClient: c.Client.SubResource(sub), c: c}
}

type hookedStatusWriter struct {
	client.SubResourceClient
	c *statusHooked
}

func (s *hookedStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if s.c.beforePatch != nil {
		s.c.beforePatch(obj)
	}
	return s.SubResourceClient.Patch(ctx, obj, patch, opts...)
}

func (s *hookedStatusWriter) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	if s.c.applied != nil {
		s.c.applied(obj)
	}
	if s.c.beforeApply != nil {
		if err := s.c.beforeApply(); err != nil {
			return err
		}
	}
	return s.SubResourceClient.Apply(ctx, obj, opts...)
}

// TestAConflictingPodGangStatusWriteIsRetriedNotReported: the gang writer's status write of a
// PodGang is conditional on the resourceVersion it read; when another writer came between (the
// scheduler's phase) or its cache did not show its own last write yet, the apiserver answers
// Conflict. That is a stale read, not a failure: the writer reads again and writes, and the
// PodCliqueSet never reports it in status.lastErrors. Here the first status write answers
// Conflict; before, the pass failed and the PodCliqueSet reported SyncFailed/podgang.
func TestAConflictingPodGangStatusWriteIsRetriedNotReported(t *testing.T) {
	e := newNamespace(t)
	conflicts := &conflictOnce{}
	e.writers = map[string]func(client.Client) client.Client{podcliqueset.GangWriterName: conflicts.wrap}
	events, _ := e.watchAll(&corev1alpha1.PodCliqueSetList{})
	e.startOperator()
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stale"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 1)}}}})

	e.eventually(func(c *assert.CollectT) {
		cond := meta.FindStatusCondition(e.podGang(c, "stale-0").Status.Conditions, schedv1alpha1.PodGangConditionInitialized)
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
		}
		pcs := e.pcs(c, "stale")
		assert.Equal(c, ptr.To(pcs.Generation), pcs.Status.ObservedGeneration)
	})
	require.True(t, conflicts.answered.Load(), "the first status write answered Conflict")
	// Every version of the PodCliqueSet up to the one just read, as the watch delivered them.
	last := e.pcs(t, "stale").ResourceVersion
	timeout := time.After(waitFor)
	for seen := ""; seen != last; {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the watch ended")
			pcs, isPCS := ev.Object.(*corev1alpha1.PodCliqueSet)
			if !isPCS {
				continue
			}
			seen = pcs.ResourceVersion
			for _, le := range pcs.Status.LastErrors {
				assert.NotContains(t, le.Code, "SyncFailed", "status.lastErrors at resourceVersion %s: %s", seen, le.Description)
			}
		case <-timeout:
			require.Fail(t, "the watch did not reach the last resourceVersion", last)
		}
	}
}

// conflictOnce answers the first status write through its client with Conflict, unsent.
type conflictOnce struct {
	answered atomic.Bool
}

func (o *conflictOnce) wrap(c client.Client) client.Client {
	return &statusHooked{Client: c, beforeApply: func() error {
		if o.answered.CompareAndSwap(false, true) {
			return apierrors.NewConflict(schema.GroupResource{Group: schedv1alpha1.SchemeGroupVersion.Group, Resource: "podgangs"}, "", errors.New("injected: the object has been modified"))
		}
		return nil
	}}
}

// TestAPodGangDeletedBySomeoneElseIsCreatedAgain: the gang writer's record of its own last write
// (for caches that do not show it yet) never keeps it from creating a PodGang again that someone
// else deleted, even right after the writer wrote it.
func TestAPodGangDeletedBySomeoneElseIsCreatedAgain(t *testing.T) {
	e := newNamespace(t)
	e.startOperator()
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "again"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", 2)}}}})
	var first *schedv1alpha1.PodGang
	e.eventually(func(c *assert.CollectT) {
		first = e.podGang(c, "again-0")
		assert.True(c, meta.IsStatusConditionTrue(first.Status.Conditions, schedv1alpha1.PodGangConditionInitialized))
	})
	require.NoError(t, e.c.Delete(e.ctx, first, client.Preconditions{UID: &first.UID}))

	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "again-0")
		assert.NotEqual(c, first.UID, pg.UID, "a new PodGang")
		assert.Len(c, refNames(pg.Spec.PodGroups[0]), 2, "listing the clique's pods")
		assert.True(c, meta.IsStatusConditionTrue(pg.Status.Conditions, schedv1alpha1.PodGangConditionInitialized))
	})
}

// TestOnlyGrovesGateIsLifted: a gate of the user's own in the pod template (here ahead of
// Grove's, which the operator appends) stays on the pods when their PodGang lists them; only
// grove.io/podgang-pending-creation goes.
func TestOnlyGrovesGateIsLifted(t *testing.T) {
	e := newEnv(t)
	tmpl := cliqueTemplate("w", 2)
	tmpl.Spec.PodSpec.SchedulerName = string(configv1alpha1.SchedulerNameKube) // a gated backend
	tmpl.Spec.PodSpec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "usergate"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{tmpl}}}})

	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("usergate-0-w")
		if assert.Len(c, pods, 2) {
			assert.Equal(c, podNames(pods), refNames(e.podGang(c, "usergate-0").Spec.PodGroups[0]), "the gang lists its pods")
			for _, p := range pods {
				assert.Equal(c, []corev1.PodSchedulingGate{{Name: "example.com/quota"}}, p.Spec.SchedulingGates, "pod %s", p.Name)
			}
		}
	})
}

// TestGroveSchedulerPodsAreCreatedWithoutTheGate: grove-scheduler holds a pod until its PodGang
// lists it (and a scaled gang's until the base gang is placed), so its pods are created without
// Grove's gate and never written again (generation 1: no gate-removal PATCH), while the same
// PodCliqueSet on default-scheduler gets gated pods. Both gangs list their pods.
func TestGroveSchedulerPodsAreCreatedWithoutTheGate(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "free", 1))
	onKube := disaggregated(e.ns, "held", 1)
	for _, c := range onKube.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = string(configv1alpha1.SchedulerNameKube)
	}
	e.create(onKube)
	e.eventually(func(c *assert.CollectT) {
		for _, pcs := range []string{"free", "held"} {
			for _, gang := range []string{pcs + "-0", pcs + "-0-workers-0"} {
				pg := e.podGang(c, gang)
				for _, g := range pg.Spec.PodGroups {
					assert.Equal(c, podNames(e.pods(g.Name)), refNames(g), "PodGang %s lists the pods of %s", gang, g.Name)
				}
			}
		}
	})
	// Nothing is bound here: default-scheduler's scaled gang keeps its gate (TestSchedulingGatesOpenInGangOrder).
	for _, p := range e.pods("") {
		switch p.Labels[apicommon.LabelPartOfKey] {
		case "free":
			assert.Equal(t, "grove-scheduler", p.Spec.SchedulerName)
			assert.Empty(t, p.Spec.SchedulingGates, "pod %s", p.Name)
			assert.EqualValues(t, 1, p.Generation, "pod %s was never written after its create", p.Name)
		case "held":
			if p.Labels[apicommon.LabelBasePodGang] != "" {
				assert.True(t, gated(&p), "pod %s waits for its base gang under its gate", p.Name)
			}
		default:
			t.Errorf("pod %s of no PodCliqueSet of the test", p.Name)
		}
	}
	for _, pclq := range []string{"free-0-router", "free-0-workers-1-prefill"} {
		pc := &corev1alpha1.PodClique{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: pclq}, pc))
		assert.Zero(t, pc.Status.ScheduleGatedReplicas, pclq)
	}
}
