package framework

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
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

	// The operator process serves its webhooks: an invalid PodCliqueSet is refused with a field path.
	bad := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: ns}}
	bad.Spec.Replicas = 1
	bad.Spec.Template.Cliques = []*corev1alpha1.PodCliqueTemplateSpec{
		{Name: "a", Spec: corev1alpha1.PodCliqueSpec{RoleName: "r", Replicas: 1, PodSpec: pod.Spec}},
		{Name: "b", Spec: corev1alpha1.PodCliqueSpec{RoleName: "r", Replicas: 1, PodSpec: pod.Spec}},
	}
	err = env.Client.Create(ctx, bad)
	require.Error(t, err)
	require.True(t, apierrors.IsInvalid(err), "want 422 from the webhook, got %v", err)
	require.Contains(t, err.Error(), "spec.template.cliques[1]")

	// ... and reconciles a valid one into pods.
	good := bad.DeepCopy()
	good.Name = "good"
	good.Spec.Template.Cliques[1].Spec.RoleName = "s"
	require.NoError(t, env.Client.Create(ctx, good))
	require.Eventually(t, func() bool {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{common.LabelPartOfKey: "good"}); err != nil {
			return false
		}
		return len(pods.Items) == 2
	}, time.Minute, 200*time.Millisecond, "grove-operator did not create the PodCliqueSet's pods")

	// Both programs authenticate as their ServiceAccounts, and the shipped RBAC refused none of
	// their requests.
	for _, tc := range []struct{ kubeconfig, serviceAccount string }{
		{env.operatorKubeconfig, OperatorServiceAccount},
		{env.schedulerKubeconfig, SchedulerServiceAccount},
	} {
		cfg, err := clientcmd.BuildConfigFromFlags("", tc.kubeconfig)
		require.NoError(t, err)
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, serviceaccount.MakeUsername(Namespace, tc.serviceAccount), review.Status.UserInfo.Username)
	}
	forbidden, err := env.ForbiddenRequests()
	require.NoError(t, err)
	assert.Empty(t, forbidden)
}
