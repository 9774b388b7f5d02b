//go:build e2e

package scenarios

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func itoa(i int) string { return strconv.Itoa(i) }

func clientKeyOf(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

func countGrove(t *testing.T, ctx context.Context, c client.Client, ns, pcsName string) (pclqs, gangs, pods int) {
	t.Helper()
	sel := client.MatchingLabels{common.LabelPartOfKey: pcsName}
	var pl corev1alpha1.PodCliqueList
	require.NoError(t, c.List(ctx, &pl, client.InNamespace(ns), sel))
	var gl schedv1alpha1.PodGangList
	require.NoError(t, c.List(ctx, &gl, client.InNamespace(ns), sel))
	var podl corev1.PodList
	require.NoError(t, c.List(ctx, &podl, client.InNamespace(ns), sel))
	return len(pl.Items), len(gl.Items), len(podl.Items)
}

// ownedCounts counts, by kind, the other objects grove-operator keeps for a PodCliqueSet (by
// its part-of label; objects being deleted count: gone means gone).
func ownedCounts(t require.TestingT, ctx context.Context, c client.Client, ns, pcsName string) map[string]int {
	lists := map[string]client.ObjectList{
		"PodCliqueScalingGroup":   &corev1alpha1.PodCliqueScalingGroupList{},
		"Service":                 &corev1.ServiceList{},
		"ServiceAccount":          &corev1.ServiceAccountList{},
		"Role":                    &rbacv1.RoleList{},
		"RoleBinding":             &rbacv1.RoleBindingList{},
		"Secret":                  &corev1.SecretList{},
		"HorizontalPodAutoscaler": &autoscalingv2.HorizontalPodAutoscalerList{},
		"ResourceClaim":           &resourcev1.ResourceClaimList{},
	}
	out := map[string]int{}
	for kind, l := range lists {
		require.NoError(t, c.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{common.LabelPartOfKey: pcsName}))
		out[kind] = apimeta.LenList(l)
	}
	return out
}

// A PodCliqueSet scaled 0 → 3 → 0 creates and removes exactly its replicas' objects, and
// deleting it leaves nothing behind: no PodClique, PodGang, pod, scaling group, headless
// Service, ServiceAccount, Role, RoleBinding, HPA or ResourceClaim (and no Secret ever: the
// startup waiter's token is projected by the kubelet). The
// workload uses each of them (a scaling group with an HPA, ordered startup, a claim per pod).
func TestScaleZeroToNToZeroAndCascadeDelete(t *testing.T) {
	// The resourceclaim controller lets allocated claims of deleted pods go.
	env, w, ns := nodesEnv(t, framework.Options{Cluster: cluster.Options{ExtraControllers: []string{"resourceclaim-controller"}}}, 6, twoCPUNode)
	ctx := context.Background()
	publishDevices(t, env, "gpu.e2e.grove.io", "e2e-gpu", []string{"n-0", "n-1", "n-2", "n-3", "n-4", "n-5"}, 2)
	p := pcs(ns, "elastic", 0, clique("a", 2, "1"), clique("b", 1, "1", cliqueSharing(corev1alpha1.ResourceSharingScopePerReplica, "gpu")))
	withClaimTemplate(withGroup(p, "g", 1, 1, "b"), "gpu", "e2e-gpu")
	group(p, "g").ScaleConfig = &corev1alpha1.AutoScalingConfig{MaxReplicas: 2}
	p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	require.NoError(t, env.Client.Create(ctx, p))

	setReplicas := func(n int32) { scaleTo(t, env, p, n) }
	expect := func(pclqs, gangs, pods, bound int) {
		require.Eventually(t, func() bool {
			a, b, c := countGrove(t, ctx, env.Client, ns, "elastic")
			return a == pclqs && b == gangs && c == pods && countBound(podsOf(t, env, ns, "elastic")) == bound
		}, 2*time.Minute, 500*time.Millisecond, "want %d PodCliques, %d PodGangs, %d pods (%d bound)", pclqs, gangs, pods, bound)
	}
	// Per replica: PodCliques a and g-0-b, one PodGang, three pods.
	setReplicas(3)
	expect(6, 3, 9, 9)
	setReplicas(0)
	expect(0, 0, 0, 0)
	setReplicas(2)
	expect(4, 2, 6, 6)
	// Per replica: a scaling group, its HPA, a headless Service and b's pod's claim; once: the
	// pods' ServiceAccount, Role and RoleBinding; no Secret.
	perPCS := map[string]int{"PodCliqueScalingGroup": 2, "HorizontalPodAutoscaler": 2, "Service": 2, "ResourceClaim": 2,
		"ServiceAccount": 1, "Role": 1, "RoleBinding": 1, "Secret": 0}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, perPCS, ownedCounts(c, ctx, env.Client, ns, "elastic"))
	}, time.Minute, 500*time.Millisecond, "the objects of 2 replicas")

	require.NoError(t, env.Client.Delete(ctx, p))
	expect(0, 0, 0, 0)
	none := map[string]int{}
	for kind := range perPCS {
		none[kind] = 0
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, none, ownedCounts(c, ctx, env.Client, ns, "elastic"))
	}, time.Minute, 500*time.Millisecond, "objects of the deleted PodCliqueSet left behind")
	w.assertNoPartialGang()
}
