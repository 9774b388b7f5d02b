package controller_test

import (
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func podNames(pods []corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

func refNames(g schedv1alpha1.PodGroup) []string {
	var out []string
	for _, r := range g.PodReferences {
		out = append(out, r.Name)
	}
	return out
}

// TestPodGangContents checks the base and scaled PodGangs of a replica: one PodGroup per
// PodClique with minReplicas = its minAvailable, sorted references to exactly its pods, the
// priority class, labels, and Initialized once every pod exists.
func TestPodGangContents(t *testing.T) {
	e := newEnv(t)
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "grove-test-" + rand.String(6)}, Value: 1000}
	e.create(pc)
	t.Cleanup(func() { _ = e.c.Delete(e.ctx, pc) })
	pcs := disaggregated(e.ns, "gangs", 1)
	pcs.Spec.Template.PriorityClassName = pc.Name
	pcs.Spec.Template.Clique("prefill").Spec.MinAvailable = ptrInt32(1)
	e.create(pcs)

	wantGroups := map[string][]string{
		"gangs-0":           {"gangs-0-router", "gangs-0-workers-0-prefill", "gangs-0-workers-0-decode"},
		"gangs-0-workers-0": {"gangs-0-workers-1-prefill", "gangs-0-workers-1-decode"},
	}
	wantMin := map[string]int32{"router": 1, "prefill": 1, "decode": 1}
	e.eventually(func(c *assert.CollectT) {
		for gang, groups := range wantGroups {
			pg := &schedv1alpha1.PodGang{}
			if !assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: gang}, pg)) {
				return
			}
			var names []string
			for _, g := range pg.Spec.PodGroups {
				names = append(names, g.Name)
				role := g.Name[strings.LastIndex(g.Name, "-")+1:]
				assert.Equal(c, wantMin[role], g.MinReplicas, g.Name)
				assert.Equal(c, podNames(e.pods(g.Name)), refNames(g), "references exactly the pods of "+g.Name)
				assert.IsIncreasing(c, refNames(g))
			}
			assert.Equal(c, groups, names)
			assert.Equal(c, pc.Name, pg.Spec.PriorityClassName)
			init := condition(pg.Status.Conditions, schedv1alpha1.PodGangConditionInitialized)
			if assert.NotNil(c, init) {
				assert.Equal(c, metav1.ConditionTrue, init.Status)
				assert.Equal(c, apicommon.ReasonPodGangPodsCreated, init.Reason)
			}
		}
	})
	base, scaled := e.podGang(t, "gangs-0"), e.podGang(t, "gangs-0-workers-0")
	assert.Equal(t, "grove-scheduler", base.Labels[apicommon.LabelSchedulerName])
	assert.Equal(t, "0", base.Labels[apicommon.LabelPodCliqueSetReplicaIndex])
	assert.NotContains(t, base.Labels, apicommon.LabelBasePodGang)
	assert.Equal(t, "gangs-0", scaled.Labels[apicommon.LabelBasePodGang])
	assert.Equal(t, "gangs-0-workers", scaled.Labels[apicommon.LabelPodCliqueScalingGroup])
	assert.Equal(t, schedv1alpha1.PodGangPhasePending, base.Status.Phase)
	// The operator's entries in PodGang status: Initialized under its own field manager, and
	// (once its readiness writer has run) Ready with lastScheduled/lastReady under another.
	assert.Subset(t, []string{apicommon.OperatorFieldManager, apicommon.PodGangReadinessFieldManager}, statusManagers(base))
	owners := conditionOwners(t, base)
	assert.Equal(t, []string{apicommon.OperatorFieldManager}, owners[schedv1alpha1.PodGangConditionInitialized])
	delete(owners, schedv1alpha1.PodGangConditionInitialized)
	if len(owners) > 0 {
		assert.Equal(t, map[string][]string{schedv1alpha1.PodGangConditionReady: {apicommon.PodGangReadinessFieldManager}}, owners)
	}
	for _, p := range e.pods("") {
		assert.Equal(t, pc.Name, p.Spec.PriorityClassName, "pods get the PodCliqueSet's priority class")
	}
}

// TestPodGangInitializedOnlyOnceEveryPodExists holds pod creation back with a ResourceQuota:
// the PodGang lists the pods that exist and stays Initialized=False until the last one exists.
func TestPodGangInitializedOnlyOnceEveryPodExists(t *testing.T) {
	e := newEnv(t)
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}}}
	e.create(quota)
	// No quota controller runs: seed the status the admission plugin enforces against.
	quota.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	require.NoError(t, e.c.Status().Update(e.ctx, quota))

	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "held"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("workers", 3)}}}}
	e.create(pcs)
	e.eventually(func(c *assert.CollectT) {
		pg := &schedv1alpha1.PodGang{}
		if !assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "held-0"}, pg)) {
			return
		}
		assert.Len(c, refNames(pg.Spec.PodGroups[0]), 2, "the two pods the quota admitted are listed")
		init := condition(pg.Status.Conditions, schedv1alpha1.PodGangConditionInitialized)
		if assert.NotNil(c, init) {
			assert.Equal(c, metav1.ConditionFalse, init.Status)
			assert.Equal(c, apicommon.ReasonPodGangPodsCreationPending, init.Reason)
		}
	})
	assert.Len(t, e.pods("held-0-workers"), 2)

	require.NoError(t, e.c.Delete(e.ctx, quota))
	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "held-0")
		assert.Len(c, refNames(pg.Spec.PodGroups[0]), 3)
		init := condition(pg.Status.Conditions, schedv1alpha1.PodGangConditionInitialized)
		if assert.NotNil(c, init) {
			assert.Equal(c, metav1.ConditionTrue, init.Status)
		}
	})
}

func ptrInt32(v int32) *int32 { return &v }

// TestPodGangIsCreatedWithItsPods: when a gang's pods are created together, its PodGang is
// written once, complete — its first version (as a watch sees it) lists every pod — and its
// Initialized condition is never False. It failed before: the PodGang was created empty with
// Initialized=False and patched as its pods appeared.
func TestPodGangIsCreatedWithItsPods(t *testing.T) {
	e := newEnv(t)
	events, _ := e.watchAll(&schedv1alpha1.PodGangList{})
	var (
		mu        sync.Mutex
		firstRefs = map[string]int{}
		sawTrue   = map[string]bool{}
		sawFalse  []string
	)
	go func() {
		for ev := range events {
			pg, ok := ev.Object.(*schedv1alpha1.PodGang)
			if !ok {
				continue
			}
			mu.Lock()
			if ev.Type == watch.Added {
				firstRefs[pg.Name] = len(refNames(pg.Spec.PodGroups[0]))
			}
			if c := condition(pg.Status.Conditions, schedv1alpha1.PodGangConditionInitialized); c != nil {
				if c.Status == metav1.ConditionFalse {
					sawFalse = append(sawFalse, pg.Name)
				}
				sawTrue[pg.Name] = sawTrue[pg.Name] || c.Status == metav1.ConditionTrue
			}
			mu.Unlock()
		}
	}()

	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "together"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 3, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("workers", 4)}}}}
	e.create(pcs)
	names := []string{"together-0", "together-1", "together-2"}
	e.eventually(func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		for _, name := range names {
			assert.True(c, sawTrue[name], "%s: the watch saw it Initialized", name)
		}
	})
	mu.Lock()
	defer mu.Unlock()
	for _, name := range names {
		assert.Equal(t, 4, firstRefs[name], "%s: its first version lists all its pods", name)
	}
	assert.Empty(t, sawFalse, "no PodGang was ever Initialized=False")
}
