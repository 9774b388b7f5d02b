package framework

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLocalGroveRunsAndSchedules starts the whole local stack and checks that grove-scheduler,
// as a secondary scheduler, binds a pod to a kwok node where it becomes Running.
func TestLocalGroveRunsAndSchedules(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control plane and the grove binaries")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := Start(ctx, Options{})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(env.Cluster.LogTail(40))
		}
		require.NoError(t, env.Stop())
	})
	nodes, err := env.CreateNodes(ctx, Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 1, HostsPerRack: 2}, NodeShape)
	require.NoError(t, err)
	require.Len(t, nodes, 2)
	ns := env.Cluster.TestNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns},
		Spec: corev1.PodSpec{SchedulerName: "grove-scheduler", Containers: []corev1.Container{{Name: "c", Image: "x",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *cpu("1")}}}}},
	}
	require.NoError(t, env.Client.Create(ctx, pod))
	require.Eventually(t, func() bool {
		got := &corev1.Pod{}
		if err := env.Client.Get(ctx, clientKey(pod), got); err != nil {
			return false
		}
		return got.Spec.NodeName != "" && got.Status.Phase == corev1.PodRunning
	}, time.Minute, 200*time.Millisecond, "grove-scheduler did not bind the pod or kwok did not run it")
}
