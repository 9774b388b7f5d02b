package controller_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	rackKey = "network.grove.io/rack"
	hostKey = "kubernetes.io/hostname"
)

func levels(domains ...string) []corev1alpha1.TopologyLevel {
	keys := map[string]string{"zone": zoneKey, "rack": rackKey, "host": hostKey}
	var out []corev1alpha1.TopologyLevel
	for _, d := range domains {
		out = append(out, corev1alpha1.TopologyLevel{Domain: corev1alpha1.TopologyDomain(d), Key: keys[d]})
	}
	return out
}

func topologyCondition(t require.TestingT, e *env, name string) *metav1.Condition {
	pcs := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, pcs))
	return condition(pcs.Status.Conditions, apicommon.ConditionTopologyLevelsUnavailable)
}

// TestTopologyTranslationAndConditionLifecycle translates PodCliqueSet, scaling-group and
// clique constraints into node-label keys on the PodGangs, then deletes the ClusterTopology,
// recreates it without a level, and restores it: the PodGangs carry only what resolves and the
// TopologyLevelsUnavailable condition follows.
func TestTopologyTranslationAndConditionLifecycle(t *testing.T) {
	e := newEnv(t)
	ctName := "fabric-" + rand.String(6)
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ctName}, Spec: corev1alpha1.ClusterTopologySpec{Levels: levels("zone", "rack", "host")}}
	e.create(ct)
	t.Cleanup(func() {
		_ = e.c.Delete(e.ctx, &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ctName}})
	})

	pcs := disaggregated(e.ns, "tas", 1)
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ctName, PackDomain: "zone"}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}}
	pcs.Spec.Template.Clique("prefill").TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}}
	e.create(pcs)

	resolved := func(c *assert.CollectT) {
		base, scaled := e.podGang(c, "tas-0"), e.podGang(c, "tas-0-workers-0")
		assert.Equal(c, zoneKey, base.Spec.TopologyConstraint.Required())
		if assert.Len(c, base.Spec.TopologyConstraintGroupConfigs, 1) {
			gc := base.Spec.TopologyConstraintGroupConfigs[0]
			assert.Equal(c, "tas-0-workers-0", gc.Name)
			assert.Equal(c, []string{"tas-0-workers-0-prefill", "tas-0-workers-0-decode"}, gc.PodGroupNames)
			assert.Equal(c, rackKey, gc.TopologyConstraint.Required())
		}
		assert.Nil(c, base.Spec.PodGroups[0].TopologyConstraint, "router")
		assert.Equal(c, hostKey, base.Spec.PodGroups[1].TopologyConstraint.Preferred(), "prefill")
		assert.Equal(c, "", base.Spec.PodGroups[1].TopologyConstraint.Required())
		assert.Equal(c, rackKey, scaled.Spec.TopologyConstraint.Required(), "scaled gang takes the group's constraint")
		assert.Equal(c, hostKey, scaled.Spec.PodGroups[0].TopologyConstraint.Preferred())
		assert.Equal(c, ctName, base.Annotations[apicommon.AnnotationTopologyName])
		cond := topologyCondition(c, e, "tas")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionFalse, cond.Status)
			assert.Equal(c, apicommon.ReasonAllTopologyLevelsAvailable, cond.Reason)
		}
	}
	e.eventually(resolved)

	require.NoError(t, e.c.Delete(e.ctx, ct))
	e.eventually(func(c *assert.CollectT) {
		cond := topologyCondition(c, e, "tas")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, apicommon.ReasonClusterTopologyNotFound, cond.Reason)
			assert.Contains(c, cond.Message, ctName)
		}
		base, scaled := e.podGang(c, "tas-0"), e.podGang(c, "tas-0-workers-0")
		assert.Nil(c, base.Spec.TopologyConstraint)
		assert.Empty(c, base.Spec.TopologyConstraintGroupConfigs)
		assert.Nil(c, base.Spec.PodGroups[1].TopologyConstraint)
		assert.Nil(c, scaled.Spec.TopologyConstraint)
		assert.NotContains(c, base.Annotations, apicommon.AnnotationTopologyName)
	})
	assert.Len(t, e.pods(""), 7, "running pods are never evicted for this")
	assert.Positive(t, e.eventCount(apicommon.ReasonClusterTopologyNotFound), "an event says the constraints are no longer enforced")

	e.create(&corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ctName}, Spec: corev1alpha1.ClusterTopologySpec{Levels: levels("zone", "rack")}})
	e.eventually(func(c *assert.CollectT) {
		cond := topologyCondition(c, e, "tas")
		if assert.NotNil(c, cond) {
			assert.Equal(c, metav1.ConditionTrue, cond.Status)
			assert.Equal(c, apicommon.ReasonTopologyLevelsUnavailable, cond.Reason)
			assert.Contains(c, cond.Message, "host")
		}
		base := e.podGang(c, "tas-0")
		assert.Equal(c, zoneKey, base.Spec.TopologyConstraint.Required())
		if assert.Len(c, base.Spec.TopologyConstraintGroupConfigs, 1) {
			assert.Equal(c, rackKey, base.Spec.TopologyConstraintGroupConfigs[0].TopologyConstraint.Required())
		}
		assert.Nil(c, base.Spec.PodGroups[1].TopologyConstraint, "host does not resolve: the prefill constraint is dropped")
	})
	assert.Positive(t, e.eventCount(apicommon.ReasonTopologyLevelsUnavailable), "an event names the missing level")

	current := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: ctName}}
	e.update(current, func() { current.Spec.Levels = levels("zone", "rack", "host") })
	e.eventually(resolved)
}

// TestManagedClusterTopologies: the ClusterTopologies of topologyAwareScheduling.profiles are
// created at start-up and kept equal to the configuration.
func TestManagedClusterTopologies(t *testing.T) {
	name := "managed-" + rand.String(6)
	e := newEnv(t, withConfig(func(cfg *configv1alpha1.OperatorConfiguration) {
		cfg.TopologyAwareScheduling.Profiles = []configv1alpha1.TopologyProfile{{Name: name, Levels: levels("zone", "host")}}
	}))
	t.Cleanup(func() {
		_ = e.c.Delete(e.ctx, &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	get := func(c require.TestingT) *corev1alpha1.ClusterTopology {
		ct := &corev1alpha1.ClusterTopology{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Name: name}, ct))
		return ct
	}
	e.eventually(func(c *assert.CollectT) {
		ct := get(c)
		assert.Equal(c, levels("zone", "host"), ct.Spec.Levels)
		assert.Equal(c, apicommon.LabelManagedByValue, ct.Labels[apicommon.LabelManagedByKey])
	})

	ct := get(t)
	e.update(ct, func() { ct.Spec.Levels = levels("rack") })
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, levels("zone", "host"), get(c).Spec.Levels, "edits are reverted")
	})

	uid := get(t).UID
	require.NoError(t, e.c.Delete(e.ctx, get(t)))
	e.eventually(func(c *assert.CollectT) {
		ct := get(c)
		assert.NotEqual(c, uid, ct.UID, "recreated after deletion")
		assert.Equal(c, levels("zone", "host"), ct.Spec.Levels)
	})
}

// TestTopologyLevelsUnknownWithoutAResolvableTopology: constraints that cannot be resolved at
// all (topology-aware scheduling off, or no ClusterTopology named) make the condition Unknown,
// and nothing reaches the PodGangs.
func TestTopologyLevelsUnknownWithoutAResolvableTopology(t *testing.T) {
	cases := []struct {
		name   string
		tas    bool
		tc     *corev1alpha1.TopologyConstraint
		reason string
	}{
		{"tas disabled", false, &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "zone"}, apicommon.ReasonTopologyAwareSchedulingDisabled},
		{"no topology name", true, &corev1alpha1.TopologyConstraint{PackDomain: "zone"}, apicommon.ReasonTopologyNameMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withConfig(func(cfg *configv1alpha1.OperatorConfiguration) { cfg.TopologyAwareScheduling.Enabled = tc.tas }))
			pcs := disaggregated(e.ns, "unknown", 1)
			pcs.Spec.Template.TopologyConstraint = tc.tc
			e.create(pcs)
			e.eventually(func(c *assert.CollectT) {
				cond := topologyCondition(c, e, "unknown")
				if assert.NotNil(c, cond) {
					assert.Equal(c, metav1.ConditionUnknown, cond.Status)
					assert.Equal(c, tc.reason, cond.Reason)
				}
				assert.Nil(c, e.podGang(c, "unknown-0").Spec.TopologyConstraint)
			})
		})
	}
}
