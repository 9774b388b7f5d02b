package controller_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// upstreamBinding is a ClusterTopologyBinding as upstream Grove's manifests (and Dynamo) write
// it, built as raw JSON fields so no Go type of this project shapes it.
func upstreamBinding(name string, domains ...string) *unstructured.Unstructured {
	keys := map[string]string{"zone": zoneKey, "rack": rackKey, "host": hostKey}
	var lv []any
	for _, d := range domains {
		lv = append(lv, map[string]any{"domain": d, "key": keys[d]})
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "grove.io/v1alpha1", "kind": "ClusterTopologyBinding",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"levels": lv,
			// Names an externally managed topology object of a backend this operator does
			// not run: the entry is ignored (as upstream ignores it), said so in the Translated
			// condition, and not put into the ClusterTopology, whose admission would refuse it.
			"schedulerTopologyBindings": []any{map[string]any{"schedulerName": "kai-scheduler", "topologyReference": "kai-" + name}},
		},
	}}
	return u
}

// constraints is what the PodGangs of a PodCliqueSet say about topology, with names
// stripped of the PodCliqueSet's own name so two PodCliqueSets compare.
func constraints(pg *schedv1alpha1.PodGang) []any {
	out := []any{pg.Spec.TopologyConstraint, len(pg.Spec.TopologyConstraintGroupConfigs)}
	for _, gc := range pg.Spec.TopologyConstraintGroupConfigs {
		out = append(out, gc.TopologyConstraint)
	}
	for _, g := range pg.Spec.PodGroups {
		out = append(out, g.TopologyConstraint)
	}
	return out
}

// TestClusterTopologyBinding: a PodCliqueSet naming a topology that exists only as upstream's
// ClusterTopologyBinding gets the same PodGang constraints as one naming an equal
// ClusterTopology, follows edits of the binding, and loses them when the binding is deleted;
// the binding's status is written in upstream's shape. A binding whose name an unowned
// ClusterTopology holds leaves that ClusterTopology alone and says so.
func TestClusterTopologyBinding(t *testing.T) {
	e := newEnv(t)
	suffix := rand.String(6)
	bindingName, ctName := "binding-"+suffix, "plain-"+suffix
	e.create(upstreamBinding(bindingName, "zone", "rack", "host"))
	e.create(&corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ctName}, Spec: corev1alpha1.ClusterTopologySpec{
		Levels:              levels("zone", "rack", "host"),
		SchedulerReferences: []corev1alpha1.SchedulerReference{{SchedulerName: "kai-scheduler", Reference: "kai-" + ctName}}}})
	t.Cleanup(func() {
		_ = e.c.Delete(e.ctx, &corev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: bindingName}})
		_ = e.c.Delete(e.ctx, &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ctName}})
	})
	// The translation exists before a PodCliqueSet names it (admission reads ClusterTopologies).
	e.eventually(func(c *assert.CollectT) {
		ct := &corev1alpha1.ClusterTopology{}
		if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Name: bindingName}, ct)) {
			assert.Equal(c, levels("zone", "rack", "host"), ct.Spec.Levels)
			assert.Empty(c, ct.Spec.SchedulerReferences, "kai-scheduler is not enabled here: its entry is ignored")
		}
		b := &corev1alpha1.ClusterTopologyBinding{}
		if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Name: bindingName}, b)) {
			cond := condition(b.Status.Conditions, apicommon.ConditionTranslated)
			if assert.NotNil(c, cond) {
				assert.Contains(c, cond.Message, `spec.schedulerTopologyBindings[0]: scheduler "kai-scheduler" is not an enabled topology-aware scheduler backend`)
			}
		}
	})

	withTopology := func(name, topology string) *corev1alpha1.PodCliqueSet {
		pcs := disaggregated(e.ns, name, 1)
		pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: topology, Pack: &corev1alpha1.TopologyPackConstraint{Required: "zone"}}
		pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}}
		pcs.Spec.Template.Clique("prefill").TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}}
		return pcs
	}
	e.create(withTopology("viabinding", bindingName))
	e.create(withTopology("viact", ctName))
	e.eventually(func(c *assert.CollectT) {
		viaBinding, viaCT := e.podGang(c, "viabinding-0"), e.podGang(c, "viact-0")
		assert.Equal(c, zoneKey, viaBinding.Spec.TopologyConstraint.Required())
		assert.Equal(c, hostKey, viaBinding.Spec.PodGroups[1].TopologyConstraint.Preferred())
		assert.Equal(c, constraints(viaCT), constraints(viaBinding), "same constraints as with a ClusterTopology")
		assert.Equal(c, constraints(e.podGang(c, "viact-0-workers-0")), constraints(e.podGang(c, "viabinding-0-workers-0")))
		assert.Equal(c, bindingName, viaBinding.Annotations[apicommon.AnnotationTopologyName])
		cond := topologyCondition(c, e, "viabinding")
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonAllTopologyLevelsAvailable, cond.Reason)
		}
	})

	// The drift controller's report on the translation (it runs only with a topology-aware
	// backend such as kai-scheduler, which this operator has not: written here as it writes it)
	// reaches the binding in upstream's shape, read raw, by upstream's field names.
	translation := &corev1alpha1.ClusterTopology{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Name: bindingName}, translation))
	reported := translation.DeepCopy()
	reported.Status.ObservedGeneration = translation.Generation
	reported.Status.SchedulerTopologyStatuses = []corev1alpha1.SchedulerTopologyStatus{{SchedulerName: "kai-scheduler",
		Reference: "kai-" + bindingName, SchedulerBackendTopologyObservedVersion: 3, Message: "levels differ"}}
	reported.Status.Conditions = []metav1.Condition{{Type: apicommon.ConditionSchedulerTopologyDrift, Status: metav1.ConditionTrue,
		Reason: apicommon.ReasonSchedulerTopologyDrift, Message: "kai-scheduler: levels differ", LastTransitionTime: metav1.Now()}}
	require.NoError(t, e.c.Status().Patch(e.ctx, reported, client.MergeFrom(translation)))
	e.eventually(func(c *assert.CollectT) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("grove.io/v1alpha1")
		u.SetKind("ClusterTopologyBinding")
		if !assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Name: bindingName}, u)) {
			return
		}
		gen, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		assert.Equal(c, u.GetGeneration(), gen)
		statuses, _, _ := unstructured.NestedSlice(u.Object, "status", "schedulerTopologyStatuses")
		if assert.Len(c, statuses, 1) {
			s := statuses[0].(map[string]any)
			assert.Equal(c, "kai-scheduler", s["schedulerName"])
			assert.Equal(c, "kai-"+bindingName, s["topologyReference"])
			assert.Equal(c, false, s["inSync"])
			assert.EqualValues(c, 3, s["schedulerBackendTopologyObservedGeneration"])
			assert.Equal(c, "levels differ", s["message"])
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		byType := map[string]string{}
		for _, x := range conds {
			m := x.(map[string]any)
			byType[m["type"].(string)] = m["status"].(string)
		}
		assert.Equal(c, "True", byType[apicommon.ConditionTranslated])
		assert.Equal(c, "True", byType[apicommon.ConditionSchedulerTopologyDrift])
	})

	// Editing the binding edits the translation: without host the prefill preference drops,
	// exactly as when a ClusterTopology loses the level.
	b := &corev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: bindingName}}
	e.update(b, func() { b.Spec.Levels = levels("zone", "rack") })
	e.eventually(func(c *assert.CollectT) {
		cond := topologyCondition(c, e, "viabinding")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, apicommon.ReasonTopologyLevelsUnavailable, cond.Reason)
		}
		assert.Nil(c, e.podGang(c, "viabinding-0").Spec.PodGroups[1].TopologyConstraint)
	})

	// Deleting the binding deletes the translation (owner reference).
	require.NoError(t, e.c.Delete(e.ctx, b))
	e.eventually(func(c *assert.CollectT) {
		err := e.c.Get(e.ctx, client.ObjectKey{Name: bindingName}, &corev1alpha1.ClusterTopology{})
		assert.True(c, apierrors.IsNotFound(err), "translation gone: %v", err)
		cond := topologyCondition(c, e, "viabinding")
		if assert.NotNil(c, cond) {
			assert.Equal(c, apicommon.ReasonClusterTopologyNotFound, cond.Reason)
		}
	})

	// A binding named like an unowned ClusterTopology changes nothing and reports why.
	e.create(upstreamBinding(ctName, "zone"))
	t.Cleanup(func() {
		_ = e.c.Delete(e.ctx, &corev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: ctName}})
	})
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.ClusterTopologyBinding{}
		if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Name: ctName}, got)) {
			cond := condition(got.Status.Conditions, apicommon.ConditionTranslated)
			if assert.NotNil(c, cond) {
				assert.Equal(c, metav1.ConditionFalse, cond.Status)
				assert.Equal(c, apicommon.ReasonClusterTopologyNameTaken, cond.Reason)
			}
		}
	})
	ct := &corev1alpha1.ClusterTopology{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Name: ctName}, ct))
	assert.Equal(t, levels("zone", "rack", "host"), ct.Spec.Levels, "the admin's ClusterTopology is untouched")

	// A binding its ClusterTopology's admission would refuse (a node label whose name part is
	// longer than 63 characters, which the binding's schema lets through; admitted while the
	// webhook was off) is reported and not translated, not retried forever.
	invalid := upstreamBinding("invalid-"+suffix, "zone", "rack")
	levelsOf, _, _ := unstructured.NestedSlice(invalid.Object, "spec", "levels")
	levelsOf[1].(map[string]any)["key"] = "example.com/" + strings.Repeat("k", 70)
	require.NoError(t, unstructured.SetNestedSlice(invalid.Object, levelsOf, "spec", "levels"))
	e.create(invalid)
	t.Cleanup(func() {
		_ = e.c.Delete(e.ctx, &corev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: invalid.GetName()}})
	})
	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.ClusterTopologyBinding{}
		if assert.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Name: invalid.GetName()}, got)) {
			cond := condition(got.Status.Conditions, apicommon.ConditionTranslated)
			if assert.NotNil(c, cond) {
				assert.Equal(c, metav1.ConditionFalse, cond.Status)
				assert.Equal(c, apicommon.ReasonClusterTopologyBindingInvalid, cond.Reason)
				assert.Contains(c, cond.Message, "spec.levels[1].key")
			}
		}
		err := e.c.Get(e.ctx, client.ObjectKey{Name: invalid.GetName()}, &corev1alpha1.ClusterTopology{})
		assert.True(c, apierrors.IsNotFound(err), "no translation of an invalid binding: %v", err)
	})
}
