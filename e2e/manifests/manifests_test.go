// Package manifests checks that what a cluster admin applies is accepted by a real apiserver.
package manifests

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

func TestMain(m *testing.M) {
	// Grove's CRDs are not pre-installed: the kustomization must bring them.
	os.Exit(cluster.RunShared(m, cluster.Options{WithoutControllerManager: true, SkipGroveCRDs: true}))
}

// build renders a kustomization the way `kubectl apply -k` does.
func build(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := cluster.ReadManifests(dir)
	require.NoError(t, err)
	return objs
}

// TestDefaultInstallIsAcceptedByTheAPIServer applies config/default with server-side apply,
// first as a dry run of every object (namespaced objects need their namespace and kinds their
// CRDs, so those go first for real), then checks every kind the admin gets.
func TestDefaultInstallIsAcceptedByTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	objs := build(t, root+"/config/default")
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	assert.Equal(t, 6, kinds["CustomResourceDefinition"], "five Grove kinds and ClusterTopologyBinding, upstream's name for ClusterTopology")
	assert.Equal(t, 2, kinds["Deployment"], "grove-operator and grove-scheduler")
	for _, k := range []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service", "ConfigMap", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
		assert.NotZero(t, kinds[k], "config/default has no %s", k)
	}

	cfg := cluster.Shared.Config
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	ctx := context.Background()

	apply := func(o *unstructured.Unstructured, dryRun bool) error {
		mapping, err := mapper.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
		if err != nil {
			return err
		}
		data, err := o.MarshalJSON()
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if ns := o.GetNamespace(); ns != "" {
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		opts := metav1PatchOptions(dryRun)
		_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
		return err
	}
	// Cluster-wide prerequisites for real: the namespace and the CRDs.
	for _, o := range objs {
		if o.GetKind() == "Namespace" || o.GetKind() == "CustomResourceDefinition" {
			require.NoError(t, apply(o, false), "%s %s", o.GetKind(), o.GetName())
		}
	}
	mapper.Reset()
	for _, o := range objs {
		require.NoError(t, apply(o, true), "server-side dry-run of %s %s", o.GetKind(), o.GetName())
	}
}

// TestDeploymentsReadTheirShippedConfig: each program's Deployment passes --config naming a
// file of the ConfigMap it mounts, and that ConfigMap carries the shipped configuration file
// unchanged - a renamed key or mount path would otherwise only show when a pod crash-loops.
func TestDeploymentsReadTheirShippedConfig(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	objs := build(t, root+"/config/default")
	configMaps := map[string]map[string]any{}
	deployments := map[string]*appsv1.Deployment{}
	for _, o := range objs {
		switch o.GetKind() {
		case "ConfigMap":
			data, _, _ := unstructured.NestedMap(o.Object, "data")
			configMaps[o.GetName()] = data
		case "Deployment":
			d := &appsv1.Deployment{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d))
			deployments[d.Name] = d
		}
	}
	for _, tc := range []struct{ deployment, configMap, shipped string }{
		{"grove-operator", "grove-operator-config", "config/operator/operator-config.yaml"},
		{"grove-scheduler", "grove-scheduler-config", "config/scheduler/scheduler-config.yaml"},
	} {
		t.Run(tc.deployment, func(t *testing.T) {
			d := deployments[tc.deployment]
			require.NotNil(t, d, "config/default has no Deployment %s", tc.deployment)
			spec := d.Spec.Template.Spec
			require.Len(t, spec.Containers, 1)
			var configFile string
			for _, a := range spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--config="); ok {
					configFile = v
				}
			}
			require.NotEmpty(t, configFile, "%s passes no --config", tc.deployment)
			mountedConfigMap := ""
			for _, m := range spec.Containers[0].VolumeMounts {
				if filepath.Dir(configFile) != m.MountPath {
					continue
				}
				for _, v := range spec.Volumes {
					if v.Name == m.Name && v.ConfigMap != nil {
						mountedConfigMap = v.ConfigMap.Name
					}
				}
			}
			require.Equal(t, tc.configMap, mountedConfigMap, "the directory of --config=%s is not the mounted ConfigMap", configFile)
			shipped, err := os.ReadFile(filepath.Join(root, tc.shipped))
			require.NoError(t, err)
			assert.Equal(t, string(shipped), configMaps[tc.configMap][filepath.Base(configFile)],
				"ConfigMap %s key %s is not %s", tc.configMap, filepath.Base(configFile), tc.shipped)
		})
	}
}
