//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// prefillDecode is a PodCliqueSet of prefill and decode cliques (two one-CPU pods each) whose
// roles are kept together (anti false) or apart (anti true) at rack level.
func prefillDecode(ns, name string, replicas int32, anti bool, when corev1alpha1.SpreadAction) *corev1alpha1.PodCliqueSet {
	p := pcs(ns, name, replicas, clique("prefill", 2, "1"), clique("decode", 2, "1"))
	g := []corev1alpha1.RoleAffinityGroup{{Name: "pd", Members: []string{"prefill", "decode"}, Domain: "rack", WhenUnsatisfiable: when}}
	tc := &corev1alpha1.TopologyConstraint{TopologyName: "fabric"}
	if anti {
		tc.AntiAffinityGroups = g
	} else {
		tc.AffinityGroups = g
	}
	p.Spec.Template.TopologyConstraint = tc
	return p
}

// roleRacks maps "<replica>/<role>" to the sorted racks of that role's bound pods.
func roleRacks(t *testing.T, env *framework.Env, ns, name string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range podsOf(t, env, ns, name) {
		replica := p.Labels[common.LabelPodCliqueSetReplicaIndex]
		key := replica + "/" + strings.TrimPrefix(p.Labels[common.LabelPodClique], name+"-"+replica+"-")
		for rack := range labelsOfBoundPods(env, []corev1.Pod{p}, framework.RackKey) {
			if !slices.Contains(out[key], rack) {
				out[key] = append(out[key], rack)
				sort.Strings(out[key])
			}
		}
	}
	return out
}

// Required affinity: 4 racks of 2 two-CPU hosts, 2 replicas of prefill (2 one-CPU pods) and
// decode (2 one-CPU pods). Nothing packs the replicas; the group alone keeps each replica's
// prefill and decode in one rack, which they fill, so the replicas take two different racks.
func TestRoleAffinityRequired(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2})
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, prefillDecode(ns, "pd", 2, false, corev1alpha1.SpreadDoNotSchedule)))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "pd")) == 8 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "pd", "pd-0"))

	placed := roleRacks(t, env, ns, "pd")
	for replica := range 2 {
		r := itoa(replica)
		require.Len(t, placed[r+"/prefill"], 1, "prefill of replica %s in one rack: %v", r, placed)
		assert.Equal(t, placed[r+"/prefill"], placed[r+"/decode"], "prefill and decode of replica %s share a rack: %v", r, placed)
	}
	assert.NotEqual(t, placed["0/prefill"], placed["1/prefill"], "each replica fills its rack: %v", placed)
	w.assertNoPartialGang()
}

// Required anti-affinity with racks short: one rack of 2 two-CPU hosts holds the replica's 4
// pods, but prefill and decode may not share it, so the replica waits whole, saying why
// (RoleAffinityUnsatisfiable). A second rack appears: prefill and decode take one rack each.
func TestRoleAntiAffinityRequired(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 2})
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, prefillDecode(ns, "apart", 1, true, corev1alpha1.SpreadDoNotSchedule)))

	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		cond = apimeta.FindStatusCondition(podGang(env, ns, "apart-0").Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return cond != nil && cond.Status == "False" && cond.Reason == common.ReasonRoleAffinityUnsatisfiable
	}, 2*time.Minute, 500*time.Millisecond, describe(env, ns, "apart", "apart-0"))
	assert.Contains(t, cond.Message, `anti-affinity group "pd" (rack)`)
	assert.Zero(t, countBound(podsOf(t, env, ns, "apart")), "the gang waits whole")

	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 2, Prefix: "new"}, twoCPUNode)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "apart")) == 4 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "apart", "apart-0"))
	placed := roleRacks(t, env, ns, "apart")
	assert.ElementsMatch(t, []string{"z0-b0-r0", "new-z0-b0-r0"}, append(append([]string{}, placed["0/prefill"]...), placed["0/decode"]...),
		"prefill and decode in one rack each, different ones: %v", placed)
	w.assertNoPartialGang()
}

// Preferred anti-affinity with racks short: the same replica on one rack is placed anyway,
// prefill and decode sharing the rack, and its PodGang is Scheduled.
func TestRoleAntiAffinityPreferredFallsBack(t *testing.T) {
	env, w, ns := fabricEnv(t, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 2})
	ctx := context.Background()
	require.NoError(t, env.Client.Create(ctx, prefillDecode(ns, "soft", 1, true, corev1alpha1.SpreadScheduleAnyway)))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "soft")) == 4 }, 2*time.Minute, 500*time.Millisecond,
		describe(env, ns, "soft", "soft-0"))
	placed := roleRacks(t, env, ns, "soft")
	assert.Equal(t, map[string][]string{"0/prefill": {"z0-b0-r0"}, "0/decode": {"z0-b0-r0"}}, placed)
	require.Eventually(t, func() bool {
		c := apimeta.FindStatusCondition(podGang(env, ns, "soft-0").Status.Conditions, schedv1alpha1.PodGangConditionScheduled)
		return c != nil && c.Status == "True"
	}, time.Minute, 500*time.Millisecond, fmt.Sprintf("racks %v", placed))
	w.assertNoPartialGang()
}
