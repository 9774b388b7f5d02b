package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestStatusAndCascadeDelete runs the base gang of a replica on a kwok node (Running and
// Ready), checks the status it leads to at every level, then deletes the PodCliqueSet and
// checks that nothing it created is left.
func TestStatusAndCascadeDelete(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "life", 1))
	base := []string{"life-0-router", "life-0-workers-0-prefill", "life-0-workers-0-decode"}
	e.eventually(func(c *assert.CollectT) {
		for _, pclq := range base {
			pods := e.pods(pclq)
			assert.NotEmpty(c, pods)
			for _, p := range pods {
				assert.False(c, gated(&p))
			}
		}
	})
	node := e.kwokNode()
	for _, pclq := range base {
		for _, p := range e.pods(pclq) {
			e.bind(&p, node)
		}
	}

	e.eventually(func(c *assert.CollectT) {
		router := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "life-0-router"}, router))
		assert.EqualValues(c, 1, router.Status.Replicas)
		assert.EqualValues(c, 1, router.Status.ReadyReplicas)
		assert.EqualValues(c, 1, router.Status.ScheduledReplicas)
		assert.EqualValues(c, 0, router.Status.ScheduleGatedReplicas)
		assert.EqualValues(c, 1, router.Status.UpdatedReplicas)
		if cond := condition(router.Status.Conditions, apicommon.ConditionPodCliqueScheduled); assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
		}
		if cond := condition(router.Status.Conditions, apicommon.ConditionMinAvailableBreached); assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonSufficientReadyPods, cond.Reason)
		}

		scaledMember := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "life-0-workers-1-prefill"}, scaledMember))
		assert.EqualValues(c, 2, scaledMember.Status.Replicas)
		assert.EqualValues(c, 0, scaledMember.Status.ScheduledReplicas)
		if cond := condition(scaledMember.Status.Conditions, apicommon.ConditionPodCliqueScheduled); assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
		}

		group := &corev1alpha1.PodCliqueScalingGroup{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "life-0-workers"}, group))
		assert.EqualValues(c, 2, group.Status.Replicas)
		assert.EqualValues(c, 1, group.Status.ScheduledReplicas)
		assert.EqualValues(c, 1, group.Status.AvailableReplicas)
		if cond := condition(group.Status.Conditions, apicommon.ConditionMinAvailableBreached); assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonSufficientAvailableReplicas, cond.Reason)
		}

		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "life"}, pcs))
		assert.EqualValues(c, 1, pcs.Status.Replicas)
		assert.EqualValues(c, 1, pcs.Status.AvailableReplicas, "the base gang is ready")
		assert.EqualValues(c, 1, pcs.Status.UpdatedReplicas, "every pod of the replica is built from the current template")
		assert.Equal(c, "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=life", *pcs.Status.Selector)
		assert.Equal(c, pcs.Generation, *pcs.Status.ObservedGeneration)
		assert.NotEmpty(c, *pcs.Status.CurrentGenerationHash)
		assert.Nil(c, condition(pcs.Status.Conditions, apicommon.ConditionTopologyLevelsUnavailable), "no topology constraints")
	})

	require.NoError(t, e.c.Delete(e.ctx, &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "life"}}))
	e.eventually(func(c *assert.CollectT) {
		err := e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "life"}, &corev1alpha1.PodCliqueSet{})
		assert.True(c, apierrors.IsNotFound(err), "PodCliqueSet gone: %v", err)
		all := &corev1.PodList{}
		require.NoError(c, e.c.List(e.ctx, all, client.InNamespace(e.ns)))
		assert.Empty(c, all.Items, "pods, terminating ones included")
		assert.Empty(c, e.names(&corev1alpha1.PodCliqueList{}))
		assert.Empty(c, e.names(&corev1alpha1.PodCliqueScalingGroupList{}))
		assert.Empty(c, e.names(&schedv1alpha1.PodGangList{}))
		assert.Empty(c, e.names(&corev1.ServiceList{}))
		assert.Equal(c, []string{"default"}, e.names(&corev1.ServiceAccountList{}))
		assert.Empty(c, e.names(&rbacv1.RoleList{}))
		assert.Empty(c, e.names(&rbacv1.RoleBindingList{}))
	})
}

// TestDefaultSchedulerBackend: cliques that name default-scheduler get pods for it, and their
// PodGangs say which backend they belong to.
func TestDefaultSchedulerBackend(t *testing.T) {
	e := newEnv(t)
	pcs := disaggregated(e.ns, "kube", 1)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "default-scheduler"
	}
	e.create(pcs)
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("")
		assert.Len(c, pods, 7)
		for _, p := range pods {
			assert.Equal(c, "default-scheduler", p.Spec.SchedulerName)
		}
		assert.Equal(c, "default-scheduler", e.podGang(c, "kube-0").Labels[apicommon.LabelSchedulerName])
	})
}

// TestUnknownSchedulerCreatesNoPods: a PodCliqueSet that bypassed admission and names a
// scheduler without an enabled profile gets no pods, and its status says why.
func TestUnknownSchedulerCreatesNoPods(t *testing.T) {
	e := newEnv(t)
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "unknown"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("a", 1)}}}}
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.SchedulerName = "lpx-scheduler"
	e.create(pcs)
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "unknown"}, got))
		if assert.NotEmpty(c, got.Status.LastErrors) {
			assert.Equal(c, "SchedulerBackendUnresolved", got.Status.LastErrors[0].Code)
			assert.Contains(c, got.Status.LastErrors[0].Description, "spec.template.cliques[0].spec.podSpec.schedulerName")
		}
		assert.Equal(c, []string{"unknown-0-a"}, e.names(&corev1alpha1.PodCliqueList{}))
		events := &corev1.EventList{}
		require.NoError(c, e.c.List(e.ctx, events, client.InNamespace(e.ns)))
		found := false
		for _, ev := range events.Items {
			found = found || (ev.Reason == "SchedulerNotEnabled" && ev.InvolvedObject.Name == "unknown-0-a")
		}
		assert.True(c, found, "a warning event on the PodClique")
	})
	assert.Empty(t, e.pods(""))
}

// TestForeignObjectsAreLeftAlone: objects that carry a PodCliqueSet's labels but are not
// controlled by it (a user's Service, a pod someone made by hand) survive reconciles and
// scale-in, and a stray pod never joins a PodGang.
func TestForeignObjectsAreLeftAlone(t *testing.T) {
	e := newEnv(t)
	labels := map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "mine",
		apicommon.LabelComponentKey: apicommon.ComponentHeadlessService, apicommon.LabelPodCliqueSetReplicaIndex: "1"}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "mine-1", Labels: labels},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone}}
	e.create(svc)
	stray := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "stray", Labels: map[string]string{
		apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "mine",
		apicommon.LabelPodClique: "mine-0-a", apicommon.LabelPodGang: "mine-0",
	}}, Spec: podSpec()}
	e.create(stray)

	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "mine"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("a", 2)}}}}
	pcs.Spec.Template.Cliques[0].Spec.MinAvailable = ptrInt32(1)
	e.create(pcs)
	e.eventually(func(c *assert.CollectT) {
		pg := e.podGang(c, "mine-0")
		assert.Len(c, pg.Spec.PodGroups[0].PodReferences, 2)
		assert.NotContains(c, refNames(pg.Spec.PodGroups[0]), "stray")
		assert.Len(c, e.pods("mine-0-a"), 3, "two of ours and the stray one")
		assert.ElementsMatch(c, []string{"mine-0", "mine-1"}, e.names(&corev1.ServiceList{}))
	})
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "mine-0-a"}}, 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, refNames(e.podGang(c, "mine-0").Spec.PodGroups[0]), 1)
	})
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(stray), &corev1.Pod{}), "the stray pod survives scale-in")
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}), "the user's Service survives")
}

// TestFinishedPodIsReplaced: a pod that failed (evicted, say) no longer counts: the PodClique
// creates a replacement with the failed pod's index (as upstream: only active pods hold an
// index) and the PodGang swaps the references.
func TestFinishedPodIsReplaced(t *testing.T) {
	e := newEnv(t)
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "evict"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("a", 2)}}}}
	e.create(pcs)
	e.eventually(func(c *assert.CollectT) { assert.Len(c, refNames(e.podGang(c, "evict-0").Spec.PodGroups[0]), 2) })

	failed := e.pods("evict-0-a")[0]
	// The operator may still be ungating the pod: re-read on conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(&failed), &failed); err != nil {
			return err
		}
		failed.Status.Phase = corev1.PodFailed
		failed.Status.Reason = "Evicted"
		return e.c.Status().Update(e.ctx, &failed)
	}))
	e.eventually(func(c *assert.CollectT) {
		var replacement []string
		for _, p := range e.pods("evict-0-a") {
			if p.Status.Phase != corev1.PodFailed {
				replacement = append(replacement, p.Spec.Hostname)
			}
		}
		assert.Equal(c, []string{"evict-0-a-0", "evict-0-a-1"}, replacement, "the replacement takes the failed pod's index")
		refs := refNames(e.podGang(c, "evict-0").Spec.PodGroups[0])
		assert.Len(c, refs, 2)
		assert.NotContains(c, refs, failed.Name)
	})
}
