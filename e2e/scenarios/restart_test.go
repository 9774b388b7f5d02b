//go:build e2e

package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

var fourCPUNode = map[corev1.ResourceName]string{corev1.ResourceCPU: "4", corev1.ResourceMemory: "16Gi"}

// Killing grove-operator (SIGKILL) in the middle of a 100-pod scale-out and starting it again
// loses nothing and creates no duplicate: exactly 100 pods are ever created for the clique (a
// watch counts every creation, so a duplicate deleted again still counts), with distinct
// indices, all bound.
func TestOperatorKilledDuringScaleOut(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 26, fourCPUNode)
	ctx := context.Background()
	const want = 100
	require.NoError(t, env.Client.Create(ctx, pcs(ns, "big", 1, clique("w", 1, "1", minAvailable(1)))))
	require.Eventually(t, func() bool { return countBound(podsOf(t, env, ns, "big")) == 1 }, 2*time.Minute, 200*time.Millisecond)

	pclq := common.StandalonePodCliqueName("big", 0, "w")
	created := watchPodCreations(t, env, ns, common.LabelPodClique+"="+pclq)
	scaleTo(t, env, pclqRef(ns, pclq), want)
	// Kill as soon as the watch sees the scale-out under way: the operator creates pods in
	// doubling batches, so most of them are still to come.
	require.Eventually(t, func() bool { return created.count() > 1 }, time.Minute, 5*time.Millisecond)
	require.NoError(t, env.Operator.Kill())
	atKill := len(podsOf(t, env, ns, "big"))
	t.Logf("grove-operator killed with %d of %d pods created", atKill, want)
	require.True(t, atKill > 1 && atKill < want, "the kill did not land mid scale-out: %d of %d pods existed", atKill, want)

	require.NoError(t, env.StartOperator(ctx))
	require.Eventually(t, func() bool {
		pods := podsOf(t, env, ns, "big")
		return len(pods) == want && countBound(pods) == want
	}, 4*time.Minute, 500*time.Millisecond)
	waitScheduled(t, env, ns, common.BasePodGangName("big", 0))

	pods := podsOf(t, env, ns, "big")
	require.Len(t, pods, want, "pods were duplicated or lost")
	ever := created.stop()
	live := map[types.UID]string{}
	indices := map[string]bool{}
	for _, p := range pods {
		live[p.UID] = p.Name
		indices[p.Labels[common.LabelPodCliquePodIndex]] = true
	}
	assert.Equal(t, live, ever, "pods ever created for the clique are exactly the %d that run", want)
	assert.Len(t, indices, want, "pod indices are not distinct")
	refs := 0
	for _, g := range podGang(env, ns, common.BasePodGangName("big", 0)).Spec.PodGroups {
		refs += len(g.PodReferences)
	}
	assert.Equal(t, want, refs, "the PodGang does not list exactly the %d pods", want)
	w.assertNoPartialGang()
}

// Killing grove-scheduler while two gangs wait at the Permit barrier binds no partial gang;
// restarted, it places both whole once they can complete. Each gang has a member held back
// by a PersistentVolumeClaim that does not exist yet: VolumeBinding turns it away before the
// Gang plugin admits it, so it counts as neither placed nor failed, and the other members hold
// their nodes at the barrier (for up to permitWaitTimeout) — where the kill finds them.
func TestSchedulerKilledWhileGangWaitsInPermit(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 10, fourCPUNode)
	ctx := context.Background()
	const workers = 15
	gangs := []string{"a", "b"}
	for _, name := range gangs {
		require.NoError(t, env.Client.Create(ctx, pcs(ns, name, 1, clique("w", workers, "1"), clique("held", 1, "1", withClaim(heldClaim(name))))))
	}
	// A pod's binding cycle starts by waiting at Permit: every worker of both gangs in one, and
	// no pod bound, is both gangs waiting at their barriers.
	inBinding := func() float64 {
		v, err := env.SchedulerMetric(ctx, "scheduler_goroutines", map[string]string{"operation": "binding"})
		if err != nil {
			t.Logf("reading grove-scheduler's metrics: %v", err)
			return -1
		}
		return v
	}
	if !assert.Eventually(t, func() bool { return inBinding() == 2*workers }, 2*time.Minute, 100*time.Millisecond,
		"the workers of both gangs never all waited at Permit") {
		t.Fatalf("%v pods in a binding cycle\n%s%s", inBinding(), describe(env, ns, "a", common.BasePodGangName("a", 0)), describe(env, ns, "b", common.BasePodGangName("b", 0)))
	}
	require.NoError(t, env.Scheduler.Kill())
	for _, name := range gangs {
		require.Zero(t, countBound(podsOf(t, env, ns, name)), "gang %s had pods bound at the kill", name)
	}

	require.NoError(t, env.StartScheduler(ctx))
	for _, name := range gangs {
		createBoundClaim(t, env, ns, heldClaim(name))
	}
	require.Eventually(t, func() bool {
		return countBound(podsOf(t, env, ns, "a")) == workers+1 && countBound(podsOf(t, env, ns, "b")) == workers+1
	}, 3*time.Minute, 500*time.Millisecond)
	waitScheduled(t, env, ns, common.BasePodGangName("a", 0), common.BasePodGangName("b", 0))
	w.assertNoPartialGang()
}

// heldClaim names the PersistentVolumeClaim a gang's held member mounts.
func heldClaim(gang string) string { return gang + "-data" }

// withClaim mounts a PersistentVolumeClaim into the clique's pods.
func withClaim(name string) cliqueOpt {
	return func(c *corev1alpha1.PodCliqueTemplateSpec) {
		c.Spec.PodSpec.Volumes = append(c.Spec.PodSpec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

// createBoundClaim creates a PersistentVolume and a claim bound to it, as the PV controller
// (which the local control plane does not run) would leave them.
func createBoundClaim(t *testing.T, env *framework.Env, ns, name string) {
	t.Helper()
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	rwo := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name}, Spec: corev1.PersistentVolumeSpec{
		Capacity: size, AccessModes: rwo, ClaimRef: &corev1.ObjectReference{Namespace: ns, Name: name},
		PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}}}}
	require.NoError(t, env.Client.Create(context.Background(), pv))
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{volume.AnnBindCompleted: "yes"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwo, VolumeName: pv.Name, StorageClassName: ptr.To(""),
			Resources: corev1.VolumeResourceRequirements{Requests: size}}}
	require.NoError(t, env.Client.Create(context.Background(), pvc))
}
