package apitest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
	schedac "github.com/ai-dynamo/grove/pkg/client/applyconfiguration/scheduler/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/client/clientset/versioned"
	"github.com/ai-dynamo/grove/pkg/client/informers/externalversions"
)

func newClientset(t *testing.T) versioned.Interface {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	cs, err := versioned.NewForConfig(cluster.Shared.Config)
	require.NoError(t, err)
	return cs
}

// The generated clients against the real CRDs: a PodCliqueSet created through the typed
// clientset is seen by the generated informer and lister and scales through its /scale; a
// cluster-scoped ClusterTopology is reached without a namespace; and PodGang status is
// server-side applied with the generated apply configurations by two field managers that each
// keep, and own, only their own fields.
func TestGeneratedClientsRoundTrip(t *testing.T) {
	cs := newClientset(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	grove := cs.GroveV1alpha1()

	created, err := grove.PodCliqueSets(ns).Create(ctx, minimalPCS(ns, "typed"), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(2), created.Spec.Template.Cliques[0].Spec.Replicas, "decoded from the apiserver's answer")

	factory := externalversions.NewSharedInformerFactoryWithOptions(cs, 0, externalversions.WithNamespace(ns))
	pcsInformer := factory.Grove().V1alpha1().PodCliqueSets()
	lister := pcsInformer.Lister()
	informer := pcsInformer.Informer()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	factory.Start(stop)
	require.True(t, cache.WaitForCacheSync(stop, informer.HasSynced))
	listed, err := lister.PodCliqueSets(ns).Get("typed")
	require.NoError(t, err)
	assert.Equal(t, created.UID, listed.UID)

	scale, err := grove.PodCliqueSets(ns).GetScale(ctx, "typed", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, int32(1), scale.Spec.Replicas)
	scale.Spec.Replicas = 3
	_, err = grove.PodCliqueSets(ns).UpdateScale(ctx, "typed", scale, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pcs, err := lister.PodCliqueSets(ns).Get("typed")
		return err == nil && pcs.Spec.Replicas == 3
	}, 30*time.Second, 50*time.Millisecond, "the lister never showed the scaled PodCliqueSet")

	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "example.com/rack"}}}}
	_, err = grove.ClusterTopologies().Create(ctx, ct, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = grove.ClusterTopologies().Delete(context.Background(), ct.Name, metav1.DeleteOptions{}) })
	got, err := grove.ClusterTopologies().Get(ctx, ct.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "example.com/rack", got.Spec.Levels[0].Key)

	gangs := cs.SchedulerV1alpha1().PodGangs(ns)
	_, err = gangs.Create(ctx, &schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: "typed-0"},
		Spec: schedv1alpha1.PodGangSpec{PodGroups: []schedv1alpha1.PodGroup{{Name: "typed-0-a", MinReplicas: 2,
			PodReferences: []schedv1alpha1.NamespacedName{{Namespace: ns, Name: "typed-0-a-0"}, {Namespace: ns, Name: "typed-0-a-1"}}}}}},
		metav1.CreateOptions{})
	require.NoError(t, err)

	apply := func(manager string, status *schedac.PodGangStatusApplyConfiguration) *schedv1alpha1.PodGang {
		t.Helper()
		pg, err := gangs.ApplyStatus(ctx, schedac.PodGang("typed-0", ns).WithStatus(status),
			metav1.ApplyOptions{FieldManager: manager, Force: true})
		require.NoError(t, err)
		return pg
	}
	condition := func(typ, reason string, status metav1.ConditionStatus) *metav1ac.ConditionApplyConfiguration {
		return metav1ac.Condition().WithType(typ).WithStatus(status).WithReason(reason).WithMessage(reason).
			WithLastTransitionTime(metav1.Now())
	}
	// The operator's first status write names no phase: the schema defaults it to Pending and
	// leaves it unowned, so the scheduler becomes its one owner.
	pg := apply(apicommon.OperatorFieldManager, schedac.PodGangStatus().
		WithConditions(condition(schedv1alpha1.PodGangConditionInitialized, apicommon.ReasonPodGangPodsCreated, metav1.ConditionTrue)))
	assert.Equal(t, schedv1alpha1.PodGangPhasePending, pg.Status.Phase)
	assert.Equal(t, sets.New(`.conditions[type="Initialized"]`), statusFieldsByManager(t, pg)[apicommon.OperatorFieldManager])
	apply(apicommon.SchedulerFieldManager, schedac.PodGangStatus().WithPhase(schedv1alpha1.PodGangPhaseStarting).WithPlacementScore(0.5).
		WithConditions(condition(schedv1alpha1.PodGangConditionScheduled, apicommon.ReasonSufficientScheduledPods, metav1.ConditionTrue)))
	apply(apicommon.PreemptionFieldManager, schedac.PodGangStatus().
		WithConditions(condition(schedv1alpha1.PodGangConditionDisruptionTarget, apicommon.ReasonPreempted, metav1.ConditionTrue)))
	// The scheduler's next write drops the score: SSA removes what this manager alone owned and
	// no longer applies, and leaves the preemption's condition, which it never applied.
	pg = apply(apicommon.SchedulerFieldManager, schedac.PodGangStatus().WithPhase(schedv1alpha1.PodGangPhaseRunning).
		WithConditions(condition(schedv1alpha1.PodGangConditionScheduled, apicommon.ReasonSufficientScheduledPods, metav1.ConditionTrue)))

	assert.Equal(t, schedv1alpha1.PodGangPhaseRunning, pg.Status.Phase)
	assert.Nil(t, pg.Status.PlacementScore, "a field its only owner stopped applying is removed")
	var types []string
	for _, c := range pg.Status.Conditions {
		types = append(types, c.Type)
	}
	assert.ElementsMatch(t, []string{schedv1alpha1.PodGangConditionInitialized, schedv1alpha1.PodGangConditionScheduled,
		schedv1alpha1.PodGangConditionDisruptionTarget}, types)
	assert.Len(t, pg.Spec.PodGroups[0].PodReferences, 2, "a status apply leaves the spec alone")

	owned := statusFieldsByManager(t, pg)
	assert.Equal(t, sets.New(".phase", `.conditions[type="Scheduled"]`), owned[apicommon.SchedulerFieldManager])
	assert.Equal(t, sets.New(`.conditions[type="DisruptionTarget"]`), owned[apicommon.PreemptionFieldManager])
}

// statusFieldsByManager lists, per field manager of the status subresource, the top-level
// status fields and condition entries it owns.
func statusFieldsByManager(t *testing.T, pg *schedv1alpha1.PodGang) map[string]sets.Set[string] {
	t.Helper()
	out := map[string]sets.Set[string]{}
	for _, e := range pg.ManagedFields {
		if e.Subresource != "status" || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		require.NoError(t, set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)))
		status := set.WithPrefix(fieldpath.MakePathOrDie("status")[0])
		fields := sets.New[string]()
		status.Leaves().Iterate(func(p fieldpath.Path) {
			// .conditions[type="X"].reason counts as .conditions[type="X"]
			top := p[:1]
			if len(p) > 1 && p[0].FieldName != nil && *p[0].FieldName == "conditions" {
				top = p[:2]
			}
			fields.Insert(top.String())
		})
		out[e.Manager] = fields
	}
	return out
}
