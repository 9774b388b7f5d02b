package apitest

import (
	"testing"

	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

type autoscalingScale struct{ autoscalingv1.Scale }

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}
}

func mustGVK(t *testing.T, c client.Client, obj client.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	require.NoError(t, err)
	return gvk
}
