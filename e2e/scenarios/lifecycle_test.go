//go:build e2e

package scenarios

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
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

// A PodCliqueSet scaled 0 → 3 → 0 creates and removes exactly its replicas' objects, and
// deleting it leaves nothing behind. Its cliques start in order, so it also has a
// startup-waiter token Secret, which the operator writes under the shipped RBAC.
func TestScaleZeroToNToZeroAndCascadeDelete(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 6, twoCPUNode)
	ctx := context.Background()
	p := pcs(ns, "elastic", 0, clique("a", 2, "1"), clique("b", 1, "1"))
	p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	require.NoError(t, env.Client.Create(ctx, p))
	tokenKey := client.ObjectKey{Namespace: ns, Name: common.StartupWaiterTokenSecretName("elastic")}
	require.Eventually(t, func() bool {
		return env.Client.Get(ctx, tokenKey, &corev1.Secret{}) == nil
	}, time.Minute, 500*time.Millisecond, "no startup-waiter token Secret")

	setReplicas := func(n int32) { scaleTo(t, env, p, n) }
	expect := func(pclqs, gangs, pods, bound int) {
		require.Eventually(t, func() bool {
			a, b, c := countGrove(t, ctx, env.Client, ns, "elastic")
			return a == pclqs && b == gangs && c == pods && countBound(podsOf(t, env, ns, "elastic")) == bound
		}, 2*time.Minute, 500*time.Millisecond, "want %d PodCliques, %d PodGangs, %d pods (%d bound)", pclqs, gangs, pods, bound)
	}
	setReplicas(3)
	expect(6, 3, 9, 9)
	setReplicas(0)
	expect(0, 0, 0, 0)
	setReplicas(2)
	expect(4, 2, 6, 6)

	require.NoError(t, env.Client.Delete(ctx, p))
	expect(0, 0, 0, 0)
	require.Eventually(t, func() bool {
		var svcs corev1.ServiceList
		require.NoError(t, env.Client.List(ctx, &svcs, client.InNamespace(ns), client.MatchingLabels{common.LabelPartOfKey: "elastic"}))
		return len(svcs.Items) == 0
	}, time.Minute, 500*time.Millisecond, "headless services left behind")
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, tokenKey, &corev1.Secret{}))
	}, time.Minute, 500*time.Millisecond, "startup-waiter token Secret left behind")
	w.assertNoPartialGang()
}
