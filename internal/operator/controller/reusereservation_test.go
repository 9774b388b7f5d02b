package controller_test

import (
	"context"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	schedulerac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/podcliqueset"
)

// TestUpdateNamesTheEarlierPlacement: while an update replaces the pods of a PodGang that has been
// placed (status.lastPlacement, written here as grove-scheduler would), the operator points the
// PodGang's spec.reuseReservationRef at itself and carries the PodCliqueSet's reuseReservation
// policy; a PodGang never placed gets no reference. The reference is dropped with the next change
// of the gang's pods outside an update (a pod recreated after the update is placed afresh).
func TestUpdateNamesTheEarlierPlacement(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "reuse", 1)
	pcs.Spec.UpdateStrategy = &corev1alpha1.PodCliqueSetUpdateStrategy{ReuseReservation: corev1alpha1.ReuseReservationRequired}
	e.create(pcs)
	sched := e.startScheduler(e.kwokNode())
	e.eventually(func(c *assert.CollectT) {
		assert.EqualValues(c, 1, e.pcs(c, "reuse").Status.AvailableReplicas)
	})
	node := e.pods("reuse-0-router")[0].Spec.NodeName
	placed := schedulerac.PodGang("reuse-0", e.ns).WithStatus(schedulerac.PodGangStatus().
		WithLastPlacement(schedulerac.PodGangPlacement().WithNodes(node)))
	require.NoError(t, e.c.Status().Apply(e.ctx, placed, client.FieldOwner(apicommon.SchedulerFieldManager), client.ForceOwnership))
	require.Nil(t, e.podGang(t, "reuse-0").Spec.ReuseReservationRef, "no update yet")

	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "reuse-0")
		if assert.NotNil(c, pg.Spec.ReuseReservationRef) {
			assert.Equal(c, "reuse-0", pg.Spec.ReuseReservationRef.Name)
			assert.Equal(c, e.ns, pg.Spec.ReuseReservationRef.Namespace)
		}
		assert.Equal(c, "Required", pg.Annotations[apicommon.AnnotationReuseReservation])
	})
	assert.Nil(t, e.podGang(t, "reuse-0-workers-0").Spec.ReuseReservationRef, "a PodGang never placed has nothing to reuse")

	sched.pause(false)
	e.waitUpdated("reuse", 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Nil(c, e.pcs(c, "reuse").Status.UpdateProgress.CurrentlyUpdating, "the update ended")
	})
	router := e.pods("reuse-0-router")[0]
	require.NoError(t, e.c.Delete(e.ctx, &router))
	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "reuse-0")
		assert.Nil(c, pg.Spec.ReuseReservationRef, "outside an update nothing is reused")
		assert.NotContains(c, gangPods(pg), router.Name, "the replacement is listed in the same write")
	})
}

// gangPods lists the pods a PodGang references.
func gangPods(pg *schedv1alpha1.PodGang) []string {
	var out []string
	for _, g := range pg.Spec.PodGroups {
		for _, r := range g.PodReferences {
			out = append(out, r.Name)
		}
	}
	return out
}

// gangPatchCounter counts the gang writer's patches of PodGang objects (status writes excluded),
// per PodGang, and the distinct pod lists they wrote.
type gangPatchCounter struct {
	client.Client
	mu       sync.Mutex
	patches  map[string]int
	podLists map[string]map[string]bool
}

func (g *gangPatchCounter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if pg, ok := obj.(*schedv1alpha1.PodGang); ok {
		pods := gangPods(pg)
		sort.Strings(pods)
		g.mu.Lock()
		g.patches[pg.Name]++
		if g.podLists[pg.Name] == nil {
			g.podLists[pg.Name] = map[string]bool{}
		}
		g.podLists[pg.Name][strings.Join(pods, ",")] = true
		g.mu.Unlock()
	}
	return g.Client.Patch(ctx, obj, patch, opts...)
}

// reset returns the patches per PodGang and the number of distinct pod lists written per
// PodGang since the last reset.
func (g *gangPatchCounter) reset() (patches, podLists map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	patches, podLists = g.patches, map[string]int{}
	for name, lists := range g.podLists {
		podLists[name] = len(lists)
	}
	g.patches, g.podLists = map[string]int{}, map[string]map[string]bool{}
	return patches, podLists
}

// TestUpdateWritesOnlyGangsBeingReplaced: the reuse reference is written in the patch that lists
// a PodGang's replacement pods, not in an extra patch of every placed PodGang when the update
// starts: while replica 0 is replaced (its new pods held unscheduled), replica 1's PodGangs,
// placed and waiting their turn, are not written and carry no reference; they get it with the
// write that lists their own replacement pods.
func TestUpdateWritesOnlyGangsBeingReplaced(t *testing.T) {
	e := newNamespace(t)
	counter := &gangPatchCounter{patches: map[string]int{}, podLists: map[string]map[string]bool{}}
	e.writers = map[string]func(client.Client) client.Client{
		podcliqueset.GangWriterName: func(c client.Client) client.Client {
			counter.Client = c
			return counter
		},
	}
	e.startOperator()
	pcs := disaggregated(e.ns, "turn", 2)
	e.create(pcs)
	tr := e.trackPods(fullStrength("turn", 2, 2, 1))
	sched := e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "turn", 2, 14)
	gangs := e.names(&schedv1alpha1.PodGangList{})
	require.Len(t, gangs, 4, "a base and a scaled PodGang per replica")
	node := e.pods("turn-0-router")[0].Spec.NodeName
	for _, name := range gangs {
		placed := schedulerac.PodGang(name, e.ns).WithStatus(schedulerac.PodGangStatus().
			WithLastPlacement(schedulerac.PodGangPlacement().WithNodes(node)))
		require.NoError(t, e.c.Status().Apply(e.ctx, placed, client.FieldOwner(apicommon.SchedulerFieldManager), client.ForceOwnership))
	}
	counter.reset()

	sched.pause(true)
	e.update(pcs, func() { relabel(pcs, "v2") })
	// Replica 0's router is replaced and its replacement listed, with the reference.
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("turn-0-router")
		if assert.Len(c, pods, 1) {
			assert.Equal(c, "v2", pods[0].Labels["version"])
			pg := e.podGang(c, "turn-0")
			assert.Contains(c, gangPods(pg), pods[0].Name)
			assert.NotNil(c, pg.Spec.ReuseReservationRef)
		}
	})
	written, _ := counter.reset()
	for _, name := range []string{"turn-1", "turn-1-workers-0"} {
		assert.Zero(t, written[name], "%s: not written before its pods are replaced", name)
		assert.Nil(t, e.podGang(t, name).Spec.ReuseReservationRef, "%s: no reference before its pods are replaced", name)
	}

	sched.pause(false)
	e.waitUpdated("turn", 2)
	pg := e.podGang(t, "turn-1")
	if assert.NotNil(t, pg.Spec.ReuseReservationRef, "set with the write that listed replica 1's new pods") {
		assert.Equal(t, "turn-1", pg.Spec.ReuseReservationRef.Name)
	}
}

// TestReplacedGangPatchedOnce: a scaled PodGang whose three pods (one PodClique) an update
// replaces is patched once, listing all three replacements, not once as the old pods go and
// again as each new one appears; the base PodGang, whose router and group replica are replaced in
// separate steps, at most once per step.
func TestReplacedGangPatchedOnce(t *testing.T) {
	e := newNamespace(t)
	counter := &gangPatchCounter{patches: map[string]int{}, podLists: map[string]map[string]bool{}}
	e.writers = map[string]func(client.Client) client.Client{
		podcliqueset.GangWriterName: func(c client.Client) client.Client {
			counter.Client = c
			return counter
		},
	}
	e.startOperator()
	pcs := disaggregated(e.ns, "once", 1)
	pcs.Spec.Template.Cliques = []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("router", 1), cliqueTemplate("prefill", 3)}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"prefill"}
	e.create(pcs)
	tr := e.trackPods(map[string]cliqueInfo{
		"once-0-router":            {pods: 1},
		"once-0-workers-0-prefill": {pods: 3, group: "once-0-workers", groupIndex: 0},
		"once-0-workers-1-prefill": {pods: 3, group: "once-0-workers", groupIndex: 1},
	})
	e.startScheduler(e.kwokNode())
	e.waitRunning(tr, "once", 1, 7)
	counter.reset()

	e.update(pcs, func() { relabel(pcs, "v2") })
	e.waitUpdated("once", 1)
	// Pod lists, not patches: a pass may repeat a patch the cache does not show yet; what is
	// counted is each intermediate list a PodGang went through (each one a status round for
	// grove-scheduler and a trigger for the readiness writes).
	patches, lists := counter.reset()
	t.Logf("PodGang patches: %v, distinct pod lists: %v", patches, lists)
	assert.Equal(t, 1, lists["once-0-workers-0"], "the scaled PodGang: one pod list, with its three replacement pods")
	assert.LessOrEqual(t, lists["once-0"], 2, "the base PodGang: one pod list per replacement step (router, group replica 0)")
	pods := gangPods(e.podGang(t, "once-0-workers-0"))
	assert.Len(t, pods, 3)
	for _, name := range pods {
		p := &corev1.Pod{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, p))
		assert.Equal(t, "v2", p.Labels["version"], "%s: the PodGang lists the replacements", name)
	}
}
