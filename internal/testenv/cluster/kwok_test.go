package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// TestKwokRunsPodsOnFakeNodes: a pod bound to a kwok node becomes Running and Ready, its
// container fails when the pod is annotated so, and a deleted pod disappears (kwok plays the
// kubelet's part).
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

	// Annotated, the named container fails: exit code 1, not ready; the pod stays Running there.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"c"}}}`, KwokFailContainerAnnotation)
	_, err = cs.CoreV1().Pods(ns).Patch(ctx, "p", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	var failed *corev1.Pod
	require.Eventually(t, func() bool {
		failed, err = cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		return err == nil && len(failed.Status.ContainerStatuses) == 1 && failed.Status.ContainerStatuses[0].State.Terminated != nil
	}, 30*time.Second, 100*time.Millisecond, "kwok did not fail the container")
	st := failed.Status.ContainerStatuses[0]
	assert.Equal(t, int32(1), st.State.Terminated.ExitCode)
	assert.False(t, st.Ready)
	assert.Equal(t, corev1.PodRunning, failed.Status.Phase)
	assert.Equal(t, "kwok-0", failed.Spec.NodeName)
	conds := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, cond := range failed.Status.Conditions {
		conds[cond.Type] = cond.Status
	}
	// Conditions merge by type: Initialized, which only the ready stage set, is kept.
	assert.Equal(t, map[corev1.PodConditionType]corev1.ConditionStatus{corev1.PodInitialized: corev1.ConditionTrue,
		corev1.PodReady: corev1.ConditionFalse, corev1.ContainersReady: corev1.ConditionFalse}, conds)

	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "p", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "p", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, 30*time.Second, 100*time.Millisecond, "the deleted pod stayed Terminating")
}
