package charts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/internal/helmchart"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	configvalidation "github.com/ai-dynamo/grove/pkg/api/config/validation"
)

const namespace = "grove-system"

func chartDir(t *testing.T) string {
	t.Helper()
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	return filepath.Join(root, helmchart.Dir)
}

func render(t *testing.T, values map[string]any) map[string]*unstructured.Unstructured {
	t.Helper()
	objs, err := helmchart.Render(chartDir(t), "grove", namespace, values)
	require.NoError(t, err)
	byKey := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		k := key(o)
		require.NotContains(t, byKey, k, "rendered twice")
		byKey[k] = o
	}
	return byKey
}

func key(o *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
}

func values(t *testing.T, y string) map[string]any {
	t.Helper()
	v := map[string]any{}
	require.NoError(t, yaml.Unmarshal([]byte(y), &v))
	return v
}

// everything turns on every optional part of the chart.
const everything = `
imageRegistry: registry.example.com/ml
imagePullSecrets: [{name: pull}]
image: {tag: v9.9.9, pullPolicy: Always}
replicaCount: 3
nodeSelector: {node-role.kubernetes.io/control-plane: ""}
tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}]}}}
priorityClassName: system-cluster-critical
config:
  leaderElection: {enabled: false, resourceName: my-lease}
  logLevel: debug
  logFormat: text
  server:
    webhooks: {certProvisionMode: manual, secretName: my-cert}
  scheduler:
    profiles: [{name: kai-scheduler}, {name: grove-scheduler}]
    defaultProfileName: kai-scheduler
  topologyAwareScheduling: {enabled: false}
  nodeFailure: {grace: 5s, forceDeletePods: false, maxReplacements: 3}
  debugging: {enableProfiling: true, pprofBindPort: 2754}
  network: {autoMNNVLEnabled: false}
serviceMonitor: {enable: true, labels: {release: prom}}
podDisruptionBudget: {enable: true}
scheduler:
  replicaCount: 1
  logLevel: 4
  logFormat: json
  nodeSelector: {pool: system}
  config:
    leaderElection: {leaderElect: false, resourceName: my-scheduler-lease}
`

func TestChartLintsStrictly(t *testing.T) {
	for name, v := range map[string]string{"defaults": "", "everything": everything} {
		t.Run(name, func(t *testing.T) {
			assert.Empty(t, helmchart.Lint(chartDir(t), namespace, values(t, v)))
		})
	}
}

// TestChartMatchesConfigDefault keeps the two install paths one: the chart with its default
// values renders exactly the objects of `kustomize build config/default` (labels, annotations
// and the Namespace, which helm leaves to --create-namespace, aside).
func TestChartMatchesConfigDefault(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	kustomized, err := cluster.ReadManifests(filepath.Join(root, "config", "default"))
	require.NoError(t, err)
	want := map[string]*unstructured.Unstructured{}
	for _, o := range kustomized {
		if o.GetKind() == "Namespace" {
			continue
		}
		want[key(o)] = o
	}
	got := render(t, nil)
	assert.ElementsMatch(t, sortedKeys(want), sortedKeys(got), "the same objects")
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			continue
		}
		wn, gn := normalize(t, w), normalize(t, g)
		if !equality.Semantic.DeepEqual(wn, gn) {
			wy, _ := yaml.Marshal(wn)
			gy, _ := yaml.Marshal(gn)
			t.Errorf("%s differs between config/default and the chart:\n--- config/default\n%s\n--- chart\n%s", k, wy, gy)
		}
	}
}

func sortedKeys(m map[string]*unstructured.Unstructured) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// normalize drops what only one install path adds (helm's labels, annotations) and parses
// ConfigMap data, so comments and key order in config/ do not count.
func normalize(t *testing.T, o *unstructured.Unstructured) map[string]any {
	t.Helper()
	// Round-trip through JSON first: kustomize yields ints, helm's parser int64s.
	b, err := json.Marshal(o.Object)
	require.NoError(t, err)
	c := map[string]any{}
	require.NoError(t, json.Unmarshal(b, &c))
	unstructured.RemoveNestedField(c, "metadata", "labels")
	unstructured.RemoveNestedField(c, "metadata", "annotations")
	unstructured.RemoveNestedField(c, "spec", "template", "metadata")
	if o.GetKind() == "ConfigMap" {
		data, _, _ := unstructured.NestedStringMap(c, "data")
		parsed := map[string]any{}
		for k, v := range data {
			m := map[string]any{}
			require.NoError(t, yaml.Unmarshal([]byte(v), &m), "%s data %s", key(o), k)
			parsed[k] = m
		}
		b, err := json.Marshal(parsed)
		require.NoError(t, err)
		roundTripped := map[string]any{}
		require.NoError(t, json.Unmarshal(b, &roundTripped))
		c["data"] = roundTripped
	}
	return c
}

func TestValuesReachTheObjects(t *testing.T) {
	got := render(t, values(t, everything))
	op := got["Deployment/grove-system/grove-operator"]
	require.NotNil(t, op)
	spec := op.Object["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	assert.EqualValues(t, 3, spec["replicas"])
	container := pod["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "registry.example.com/ml/grove-operator:v9.9.9", container["image"])
	assert.Equal(t, "Always", container["imagePullPolicy"])
	assert.Equal(t, []any{map[string]any{"name": "pull"}}, pod["imagePullSecrets"])
	assert.Equal(t, map[string]any{"node-role.kubernetes.io/control-plane": ""}, pod["nodeSelector"])
	assert.Len(t, pod["tolerations"], 1)
	assert.Contains(t, pod["affinity"], "nodeAffinity")
	assert.Equal(t, "system-cluster-critical", pod["priorityClassName"])
	assert.Contains(t, fmt.Sprint(pod["volumes"]), "secretName:my-cert", "manual certificates come from the Secret")

	// The rendered OperatorConfiguration is one the operator accepts, with the chosen values.
	cm := got["ConfigMap/grove-system/grove-operator-config"]
	require.NotNil(t, cm)
	data, _, _ := unstructured.NestedString(cm.Object, "data", "operator-config.yaml")
	cfg, err := configv1alpha1.Decode([]byte(data))
	require.NoError(t, err)
	require.Empty(t, configvalidation.ValidateOperatorConfiguration(cfg))
	assert.False(t, cfg.LeaderElection.Enabled)
	assert.Equal(t, "my-lease", cfg.LeaderElection.ResourceName)
	assert.Equal(t, namespace, cfg.LeaderElection.ResourceNamespace)
	assert.EqualValues(t, "debug", cfg.LogLevel)
	assert.EqualValues(t, "text", cfg.LogFormat)
	assert.EqualValues(t, "kai-scheduler", cfg.Scheduler.DefaultProfileName)
	var profiles []string
	for _, p := range cfg.Scheduler.Profiles {
		profiles = append(profiles, string(p.Name))
	}
	// The two chosen, plus default-scheduler, which the operator always enables.
	assert.ElementsMatch(t, []string{"kai-scheduler", "grove-scheduler", "default-scheduler"}, profiles)
	assert.False(t, cfg.TopologyAwareScheduling.Enabled)
	assert.Equal(t, 5*time.Second, cfg.NodeFailure.Grace.Duration)
	assert.Equal(t, ptr.To(false), cfg.NodeFailure.ForceDeletePods)
	assert.Equal(t, ptr.To[int32](3), cfg.NodeFailure.MaxReplacements)
	if assert.NotNil(t, cfg.Debugging, "config.debugging reaches the operator") {
		assert.Equal(t, ptr.To(true), cfg.Debugging.EnableProfiling)
		assert.Equal(t, ptr.To(2754), cfg.Debugging.PprofBindPort)
	}
	assert.NotNil(t, cfg.Network, "config.network reaches the operator")
	assert.Equal(t, "registry.example.com/ml/grove-operator:v9.9.9", cfg.StartupWaiter.Image, "the startup waiter is the operator's image")
	assert.Equal(t, namespace, cfg.Server.Webhooks.Namespace)
	assert.Equal(t, "grove-operator", cfg.Server.Webhooks.ServiceName)

	// RBAC follows the renamed lease and certificate Secret.
	role := got["Role/grove-system/grove-operator"]
	require.NotNil(t, role)
	assert.Contains(t, fmt.Sprint(role.Object["rules"]), "my-lease")
	assert.Contains(t, fmt.Sprint(role.Object["rules"]), "my-cert")

	sched := got["Deployment/grove-system/grove-scheduler"]
	require.NotNil(t, sched)
	spod, _, _ := unstructured.NestedMap(sched.Object, "spec", "template", "spec")
	sc := spod["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, "registry.example.com/ml/grove-scheduler:v0.1.0", sc["image"], "the scheduler's tag defaults to appVersion")
	assert.Contains(t, sc["args"], "--v=4")
	assert.Contains(t, sc["args"], "--logging-format=json")
	assert.Equal(t, map[string]any{"pool": "system"}, spod["nodeSelector"])
	scm := got["ConfigMap/grove-system/grove-scheduler-config"]
	require.NotNil(t, scm)
	sdata, _, _ := unstructured.NestedString(scm.Object, "data", "scheduler-config.yaml")
	assert.Contains(t, sdata, "resourceName: my-scheduler-lease")
	assert.Contains(t, sdata, "leaderElect: false")
	srole := got["Role/grove-system/grove-scheduler-leader-election"]
	require.NotNil(t, srole)
	assert.Contains(t, fmt.Sprint(srole.Object["rules"]), "my-scheduler-lease")

	for _, k := range []string{"ServiceMonitor/grove-system/grove-operator", "PodDisruptionBudget/grove-system/grove-operator", "PodDisruptionBudget/grove-system/grove-scheduler"} {
		assert.Contains(t, got, k)
	}
	defaults := render(t, nil)
	for _, k := range []string{"ServiceMonitor/grove-system/grove-operator", "PodDisruptionBudget/grove-system/grove-operator"} {
		assert.NotContains(t, defaults, k, "optional and off by default")
	}

	// CRDs are kept by helm uninstall and upgraded by helm upgrade (they are templates).
	crd := got["CustomResourceDefinition//podcliquesets.grove.io"]
	require.NotNil(t, crd)
	assert.Equal(t, "keep", crd.GetAnnotations()["helm.sh/resource-policy"])
}

func TestSchedulerCanBeLeftOut(t *testing.T) {
	got := render(t, values(t, "scheduler: {enable: false}"))
	for k := range got {
		assert.NotContains(t, k, "grove-scheduler", "nothing of grove-scheduler is rendered")
	}
	assert.Contains(t, got, "Deployment/grove-system/grove-operator")
}

func TestSchemaRejectsBadValues(t *testing.T) {
	cases := map[string]struct{ values, want string }{
		"pull policy":       {"image: {pullPolicy: Sometimes}", "pullPolicy"},
		"unknown backend":   {"config: {scheduler: {profiles: [{name: lpx-scheduler}]}}", "name"},
		"unknown value":     {"replicas: 2", "replicas"},
		"negative replicas": {"scheduler: {replicaCount: -1}", "replicaCount"},
		"cert mode":         {"config: {server: {webhooks: {certProvisionMode: sometimes}}}", "certProvisionMode"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := helmchart.Render(chartDir(t), "grove", namespace, values(t, tc.values))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// The schema's backend names are the operator's: a backend added to the operator must be
// selectable in the chart.
func TestSchemaKnowsEveryBackend(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir(t), "values.schema.json"))
	require.NoError(t, err)
	var schema struct {
		Properties struct {
			Config struct {
				Properties struct {
					Scheduler struct {
						Properties struct {
							Profiles struct {
								Items struct {
									Properties struct {
										Name struct {
											Enum []string `json:"enum"`
										} `json:"name"`
									} `json:"properties"`
								} `json:"items"`
							} `json:"profiles"`
						} `json:"properties"`
					} `json:"scheduler"`
				} `json:"properties"`
			} `json:"config"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(raw, &schema))
	var want []string
	for _, n := range configv1alpha1.SupportedSchedulerNames {
		want = append(want, string(n))
	}
	assert.ElementsMatch(t, want, schema.Properties.Config.Properties.Scheduler.Properties.Profiles.Items.Properties.Name.Enum)
}

// The chart's CRDs are copies of config/crd (make generate copies them).
func TestChartCRDsAreConfigCRDs(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	src, err := filepath.Glob(filepath.Join(root, "config", "crd", "*_*.yaml"))
	require.NoError(t, err)
	copies, err := filepath.Glob(filepath.Join(chartDir(t), "files", "crds", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, copies, len(src))
	for _, s := range src {
		a, err := os.ReadFile(s)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(chartDir(t), "files", "crds", filepath.Base(s)))
		require.NoError(t, err)
		assert.True(t, strings.TrimSpace(string(a)) == strings.TrimSpace(string(b)), "%s: run make generate", filepath.Base(s))
	}
}
