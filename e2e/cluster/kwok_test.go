package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestKwokRunsPodsOnFakeNodes: a pod bound to a kwok node becomes Running and Ready, and a
// deleted pod disappears (kwok plays the kubelet's part).
func TestKwokRunsPodsOnFakeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control-plane binaries")
	}
	c := StartForTest(t, Options{SkipGroveCRDs: true})
	ctx := context.Background()
	require.NoError(t, c.StartKwok(ctx))
	cs, err := kubernetes.NewForConfig(c.Config)
	require.NoError(t, err)
	_, err = cs.CoreV1().Nodes().Create(ctx, FakeNode("kwok-0", map[string]string{"rack": "r0"},
		map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "32Gi"}), metav1.CreateOptions{})
	require.NoError(t, err)
	ns := c.TestNamespace(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       corev1.PodSpec{NodeName: "kwok-0", Containers: []corev1.Container{{Name: "c", Image: "x"}}},
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady {
				return cond.Status == corev1.ConditionTrue
			}
		}
		return false
	}, 30*time.Second, 100*time.Millisecond, "kwok did not run the pod")

	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "p", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "the deleted pod stayed Terminating")
}
