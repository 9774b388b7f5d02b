package webhook_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestUnrunnablePodCliqueSetsAreRejected: every case here was admitted before and left a
// PodCliqueSet whose PodCliques or pods the apiserver refuses (or that the operator
// mis-attributes), so it never ran. Each must now be refused with the field path.
func TestUnrunnablePodCliqueSetsAreRejected(t *testing.T) {
	e := sharedEnv(t)
	ns := cluster.Shared.TestNamespace(t)
	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"invalid label key", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{"bad key!": "v"}
		},
			[]string{"spec.template.cliques[0].labels"}},
		{"64-character label value", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Labels = map[string]string{"team": strings.Repeat("a", 64)}
		}, []string{"spec.template.cliques[1].labels"}},
		{"invalid annotation key", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Annotations = map[string]string{"-x/": "v"}
		}, []string{"spec.template.cliques[2].annotations"}},
		{"300 KiB of annotations", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Annotations = map[string]string{"big": strings.Repeat("a", 300<<10)}
		}, []string{"spec.template.cliques[0].annotations"}},
		{"scaling-group annotation key", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations = map[string]string{"a b": "v"}
		}, []string{"spec.template.podCliqueScalingGroups[0].annotations"}},
		{"reserved label base-podgang", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{apicommon.LabelBasePodGang: "x"}
		}, []string{"spec.template.cliques[0].labels[grove.io/base-podgang]"}},
		{"reserved label scaling group", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{apicommon.LabelPodCliqueScalingGroup: "workers"}
		}, []string{"spec.template.cliques[0].labels[grove.io/podcliquescalinggroup]"}},
		{"no containers", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.PodSpec.Containers = nil },
			[]string{"spec.template.cliques[1].spec.podSpec.containers"}},
		{"invalid container name", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Name = "Main_1"
		},
			[]string{"spec.template.cliques[0].spec.podSpec.containers[0].name"}},
		{"duplicate container names", func(p *corev1alpha1.PodCliqueSet) {
			ps := &p.Spec.Template.Cliques[2].Spec.PodSpec
			ps.Containers = append(ps.Containers, ps.Containers[0])
		}, []string{"spec.template.cliques[2].spec.podSpec.containers[1]"}},
		{"container without image", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "" },
			[]string{"spec.template.cliques[0].spec.podSpec.containers[0].image"}},
		{"mount of a missing volume", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}, []string{"spec.template.cliques[0].spec.podSpec.containers[0].volumeMounts[0].name"}},
		{"reserved init container name", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.InitContainers = []corev1.Container{{Name: apicommon.StartupWaiterContainerName, Image: "busybox"}}
		}, []string{"spec.template.cliques[0].spec.podSpec.initContainers[0].name"}},
		{"replicas above the bound", func(p *corev1alpha1.PodCliqueSet) { p.Spec.Replicas = apicommon.MaxReplicas + 1 },
			[]string{"spec.replicas"}},
		{"group replicas above the bound", func(p *corev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = new(int32(apicommon.MaxReplicas + 1))
		}, []string{"spec.template.podCliqueScalingGroups[0].replicas"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := newPCS(ns, "unrunnable-"+string(rune('a'+i)))
			tc.mutate(pcs)
			requireInvalid(t, e.client.Create(context.Background(), pcs), tc.paths...)
		})
	}
	require.NoError(t, e.client.Create(context.Background(), newPCS(ns, "runnable")))
}

// createRaw creates a PodCliqueSet from JSON, as kubectl would send a manifest: fields left
// out stay out (a typed client would send replicas: 0 for an unset field).
func createRaw(t *testing.T, c client.Client, ns, name string, mutate func(map[string]any)) error {
	t.Helper()
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(newPCS(ns, name))
	require.NoError(t, err)
	mutate(obj)
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(corev1alpha1.SchemeGroupVersion.String())
	u.SetKind("PodCliqueSet")
	return c.Create(context.Background(), u)
}

func cliqueSpecs(obj map[string]any) []map[string]any {
	var out []map[string]any
	for _, c := range obj["spec"].(map[string]any)["template"].(map[string]any)["cliques"].([]any) {
		out = append(out, c.(map[string]any)["spec"].(map[string]any))
	}
	return out
}

func TestCliqueReplicas(t *testing.T) {
	e := sharedEnv(t)
	ns := cluster.Shared.TestNamespace(t)

	t.Run("explicit 0 is refused, not turned into 1", func(t *testing.T) {
		err := createRaw(t, e.client, ns, "zero", func(o map[string]any) { cliqueSpecs(o)[1]["replicas"] = int64(0) })
		requireInvalid(t, err, "spec.template.cliques[1].spec.replicas")
	})
	t.Run("left out defaults to 1", func(t *testing.T) {
		require.NoError(t, createRaw(t, e.client, ns, "unset", func(o map[string]any) { delete(cliqueSpecs(o)[1], "replicas") }))
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, e.client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "unset"}, got))
		assert.EqualValues(t, 1, got.Spec.Template.Cliques[1].Spec.Replicas)
		assert.EqualValues(t, 1, *got.Spec.Template.Cliques[1].Spec.MinAvailable)
	})
}

func TestTerminationDelayErrorsNameTheField(t *testing.T) {
	e := sharedEnv(t)
	ns := cluster.Shared.TestNamespace(t)
	for i, v := range []string{"forever", "-5m", "0s", "1d", "99999999999h"} {
		t.Run(v, func(t *testing.T) {
			err := createRaw(t, e.client, ns, "delay-"+string(rune('a'+i)), func(o map[string]any) {
				o["spec"].(map[string]any)["template"].(map[string]any)["terminationDelay"] = v
			})
			requireInvalid(t, err, "spec.template.terminationDelay")
		})
	}
	require.NoError(t, createRaw(t, e.client, ns, "delay-ok", func(o map[string]any) {
		o["spec"].(map[string]any)["template"].(map[string]any)["terminationDelay"] = "1h30m"
	}))
}

// TestRemovingARequiredTopologyLevelWarns: removing a level that a PodCliqueSet packs by is
// allowed (its constraints degrade), but the admission warning names the PodCliqueSet.
func TestRemovingARequiredTopologyLevelWarns(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "levels-" + ns}, Spec: corev1alpha1.ClusterTopologySpec{
		Levels: []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "example.com/zone"}, {Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"}},
	}}
	require.NoError(t, e.client.Create(ctx, ct))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })
	pcs := newPCS(ns, "packed")
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct.Name, PackDomain: "rack"}
	require.NoError(t, e.client.Create(ctx, pcs))

	// Removing a level nobody uses says nothing about this PodCliqueSet.
	ct.Spec.Levels = []corev1alpha1.TopologyLevel{ct.Spec.Levels[1], ct.Spec.Levels[2]}
	require.NoError(t, e.client.Update(ctx, ct))
	for _, w := range e.warnings.Take() {
		assert.NotContains(t, w, ns+"/packed")
	}

	ct.Spec.Levels = []corev1alpha1.TopologyLevel{ct.Spec.Levels[1]}
	require.NoError(t, e.client.Update(ctx, ct), "removing a level is allowed")
	var found bool
	for _, w := range e.warnings.Take() {
		if strings.Contains(w, "PodCliqueSet "+ns+"/packed packs by rack") {
			found = true
		}
	}
	assert.True(t, found, "the warning names the PodCliqueSet and the level")
}

// TestDeletingARequiredClusterTopologyWarns: deleting a ClusterTopology that a PodCliqueSet
// packs by is allowed (its constraints degrade), but the admission warning names the
// PodCliqueSet; a PodCliqueSet of another ClusterTopology is not named.
func TestDeletingARequiredClusterTopologyWarns(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	topology := func(name string) *corev1alpha1.ClusterTopology {
		return &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + ns}, Spec: corev1alpha1.ClusterTopologySpec{
			Levels: []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "example.com/zone"}, {Domain: "rack", Key: "example.com/rack"}}}}
	}
	gone, kept := topology("gone"), topology("kept")
	for _, ct := range []*corev1alpha1.ClusterTopology{gone, kept} {
		require.NoError(t, e.client.Create(ctx, ct))
		t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })
	}
	for name, ct := range map[string]string{"packed": gone.Name, "elsewhere": kept.Name} {
		pcs := newPCS(ns, name)
		pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: ct, PackDomain: "rack"}
		require.NoError(t, e.client.Create(ctx, pcs))
	}
	e.warnings.Take()

	require.NoError(t, e.client.Delete(ctx, gone), "deleting a ClusterTopology is allowed")
	var found bool
	for _, w := range e.warnings.Take() {
		assert.NotContains(t, w, ns+"/elsewhere", "a PodCliqueSet of another ClusterTopology is not named")
		if strings.Contains(w, "PodCliqueSet "+ns+"/packed packs by rack of ClusterTopology "+gone.Name) &&
			strings.Contains(w, "no longer be enforced") {
			found = true
		}
	}
	assert.True(t, found, "the warning names the PodCliqueSet, the level and the ClusterTopology")
}
