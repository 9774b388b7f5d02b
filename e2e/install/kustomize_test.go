//go:build e2einstall

package install

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestKustomizeInstall installs with `kubectl apply --server-side -k config/default` instead
// of Helm (after TestInstallLifecycle left the cluster as it found it): the programs come up
// as pods from the images config/default pins, ordered startup works through them, and the
// README's kustomize uninstall leaves nothing behind.
func TestKustomizeInstall(t *testing.T) {
	e := suite
	ctx := context.Background()
	require.NoError(t, e.c.CreateNamespace(ctx, workloadNS))
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "config", "default")
	objs, err := cluster.ReadManifests(dir)
	require.NoError(t, err)

	// config/default pins <registry>/<program>:<tag>; those names are given to the images of
	// version N, as pushing them to that registry would.
	tag := ""
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		var dep appsv1.Deployment
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &dep))
		image := dep.Spec.Template.Spec.Containers[0].Image
		name, v, ok := strings.Cut(strings.TrimPrefix(image, registry+"/"), ":")
		require.True(t, ok && name == dep.Name, "%s runs %s, not %s/%s:<tag>", dep.Name, image, registry, dep.Name)
		tag = v
		require.NoError(t, e.node.TagImage(ctx, registry+"/"+name+":"+e.versions[0], image))
	}
	require.NotEmpty(t, tag)

	// config/default places the programs anywhere; kwok nodes run no containers, so they are
	// cordoned while the programs are scheduled.
	setKwokUnschedulable(t, e, true)
	t.Cleanup(func() { setKwokUnschedulable(t, e, false) })

	before := e.snapshot(t)
	require.NoError(t, e.c.Apply(ctx, dir))
	e.requireProgramsRunning(t, tag)
	e.requireWebhookRefusesInvalid(t)
	e.testStartupOrder(t)

	// The README's kustomize uninstall: workloads first, then `kubectl delete -k config/default`.
	for _, list := range []client.ObjectList{&corev1alpha1.PodCliqueSetList{}, &corev1alpha1.ClusterTopologyList{}} {
		require.NoError(t, e.deleteAllAndWait(ctx, list))
	}
	for _, o := range objs {
		require.NoError(t, client.IgnoreNotFound(e.cl.Delete(ctx, o)))
	}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, o := range objs {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(o.GroupVersionKind())
			if err := e.cl.Get(ctx, client.ObjectKeyFromObject(o), u); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	}), "`kubectl delete -k config/default` did not finish")
	e.requireNothingLeft(t, before)
}

func setKwokUnschedulable(t *testing.T, e *env, unschedulable bool) {
	t.Helper()
	var nodes corev1.NodeList
	require.NoError(t, e.cl.List(context.Background(), &nodes, client.MatchingLabels{"type": "kwok"}))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Unschedulable = unschedulable
		require.NoError(t, e.cl.Patch(context.Background(), n, patch))
	}
}
