package koordinator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/operator/backend/internal/thirdparty"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, cluster.Options{WithThirdPartyCRDs: true}))
}

// threeLayers maps the test topology's block, rack and host keys to Koordinator layers.
const threeLayers = `{"scheduleTimeoutSeconds":60,"qosClass":"LS","topologyLayers":{
  "rack":{"key":"example.com/rack","layer":"RackLayer"},"block":{"key":"example.com/block","layer":"BlockLayer"}}}`

func newBackend(t *testing.T, c client.Client, rawConfig string) *Backend {
	t.Helper()
	b := &Backend{}
	require.NoError(t, b.Init(context.Background(), backend.InitContext{Client: c, APIReader: c, Logger: testr.New(t), Config: []byte(rawConfig)}))
	return b
}

func listPodGroups(t *testing.T, c client.Client, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(PodGroupGVK.GroupVersion().WithKind("PodGroupList"))
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(ns)))
	out := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		out[list.Items[i].GetName()] = &list.Items[i]
	}
	return out
}

// expectedPodGroup is the Koordinator PodGroup Grove should write, as YAML.
func expectedPodGroup(ns, gang, name string, members []string, minMember, total int, topologySpec string) string {
	groups := "["
	for i, m := range members {
		if i > 0 {
			groups += ","
		}
		groups += fmt.Sprintf(`"%s/%s"`, ns, m)
	}
	groups += "]"
	y := fmt.Sprintf(`
metadata:
  name: %s
  namespace: %s
  labels: {app.kubernetes.io/managed-by: grove-operator, grove.io/podgang: %s}
  annotations:
    gang.scheduling.koordinator.sh/groups: '%s'
    gang.scheduling.koordinator.sh/mode: Strict
    gang.scheduling.koordinator.sh/match-policy: once-satisfied
    gang.scheduling.koordinator.sh/total-number: "%d"
`, name, ns, gang, groups, total)
	if topologySpec != "" {
		y += fmt.Sprintf("    gang.scheduling.koordinator.sh/network-topology-spec: '%s'\n", topologySpec)
	}
	return y + fmt.Sprintf("spec: {minMember: %d, scheduleTimeoutSeconds: 60}\n", minMember)
}

// comparablePart keeps the parts of a written PodGroup that Grove sets.
func comparablePart(u *unstructured.Unstructured) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": u.GetName(), "namespace": u.GetNamespace(), "labels": u.GetLabels(), "annotations": u.GetAnnotations()},
		"spec":     u.Object["spec"],
	}
}

func TestPodGangsOfAReplicaBecomeKoordinatorGangGroupsAcceptedByTheRealCRD(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := backendtest.CreateClusterTopology(t, c)
	b := newBackend(t, c, threeLayers)

	base, scaled := backendtest.ReplicaGangs(ns, ct.Name)
	require.NoError(t, c.Create(ctx, base))
	err := b.SyncPodGang(ctx, base)
	require.ErrorContains(t, err, "topologyConstraintGroupConfigs", "a gang that packs a subset of its groups must fail closed")
	assert.Empty(t, listPodGroups(t, c, ns), "nothing is written for a gang Koordinator cannot express")

	// Admission rejects scaling-group constraints for koord-scheduler, so the gangs it sees have none.
	base.Spec.TopologyConstraintGroupConfigs = nil
	require.NoError(t, c.Update(ctx, base))
	require.NoError(t, c.Create(ctx, scaled[0]))
	require.NoError(t, b.SyncPodGang(ctx, base))
	require.NoError(t, b.SyncPodGang(ctx, scaled[0]))

	const blockMust = `{"gatherStrategy":[{"layer":"BlockLayer","strategy":"MustGather"}]}`
	const blockMustHostPrefer = `{"gatherStrategy":[{"layer":"BlockLayer","strategy":"MustGather"},{"layer":"NodeTopologyLayer","strategy":"PreferGather"}]}`
	const rackMust = `{"gatherStrategy":[{"layer":"RackLayer","strategy":"MustGather"}]}`
	const rackMustHostPrefer = `{"gatherStrategy":[{"layer":"RackLayer","strategy":"MustGather"},{"layer":"NodeTopologyLayer","strategy":"PreferGather"}]}`
	baseMembers := []string{"inf-0-inf-0-router", "inf-0-inf-0-workers-0-prefill", "inf-0-inf-0-workers-0-decode"}
	scaledMembers := []string{"inf-0-workers-0-inf-0-workers-1-prefill", "inf-0-workers-0-inf-0-workers-1-decode"}
	want := map[string]string{
		baseMembers[0]:   expectedPodGroup(ns, "inf-0", baseMembers[0], baseMembers, 1, 2, blockMust),
		baseMembers[1]:   expectedPodGroup(ns, "inf-0", baseMembers[1], baseMembers, 2, 2, blockMustHostPrefer),
		baseMembers[2]:   expectedPodGroup(ns, "inf-0", baseMembers[2], baseMembers, 1, 1, blockMust),
		scaledMembers[0]: expectedPodGroup(ns, "inf-0-workers-0", scaledMembers[0], scaledMembers, 2, 2, rackMustHostPrefer),
		scaledMembers[1]: expectedPodGroup(ns, "inf-0-workers-0", scaledMembers[1], scaledMembers, 1, 1, rackMust),
	}
	got := listPodGroups(t, c, ns)
	require.Len(t, got, len(want))
	for name, y := range want {
		require.Contains(t, got, name)
		backendtest.JSONEqYAML(t, y, comparablePart(got[name]), name)
		owner := base
		if name == scaledMembers[0] || name == scaledMembers[1] {
			owner = scaled[0]
		}
		assert.Equal(t, []metav1.OwnerReference{{APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}},
			got[name].GetOwnerReferences(), name)
	}

	t.Run("an update removes the PodGroups of removed groups and keeps what Koordinator wrote", func(t *testing.T) {
		router := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: baseMembers[0]})
		router.SetAnnotations(map[string]string{"example.com/note": "kept"})
		router.Object["status"] = map[string]any{"phase": "Scheduling", "scheduled": int64(1)}
		require.NoError(t, c.Patch(ctx, router, client.Merge, client.FieldOwner("koord-scheduler")))

		require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(base), base))
		base.Spec.PodGroups = base.Spec.PodGroups[:2] // decode leaves the gang
		base.Spec.PodGroups[0].MinReplicas = 2
		require.NoError(t, c.Update(ctx, base))
		require.NoError(t, b.SyncPodGang(ctx, base))

		got := listPodGroups(t, c, ns)
		assert.NotContains(t, got, baseMembers[2], "the removed group's PodGroup is deleted")
		members := baseMembers[:2]
		backendtest.JSONEqYAML(t, expectedPodGroup(ns, "inf-0", members[1], members, 2, 2, blockMustHostPrefer), comparablePart(got[members[1]]))
		wantRouter := expectedPodGroup(ns, "inf-0", members[0], members, 2, 2, blockMust) +
			"status: {phase: Scheduling, scheduled: 1}\n"
		gotRouter := comparablePart(got[members[0]])
		gotRouter["status"] = got[members[0]].Object["status"]
		annotations := got[members[0]].GetAnnotations()
		assert.Equal(t, "kept", annotations["example.com/note"])
		delete(annotations, "example.com/note")
		gotRouter["metadata"].(map[string]any)["annotations"] = annotations
		backendtest.JSONEqYAML(t, wantRouter, gotRouter)
	})

	t.Run("scale-out adds a GangGroup, scale-in removes it", func(t *testing.T) {
		require.NoError(t, c.Create(ctx, scaled[1]))
		require.NoError(t, b.SyncPodGang(ctx, scaled[1]))
		newMembers := []string{"inf-0-workers-1-inf-0-workers-2-prefill", "inf-0-workers-1-inf-0-workers-2-decode"}
		got := listPodGroups(t, c, ns)
		backendtest.JSONEqYAML(t, expectedPodGroup(ns, "inf-0-workers-1", newMembers[0], newMembers, 2, 2, rackMustHostPrefer), comparablePart(got[newMembers[0]]))
		backendtest.JSONEqYAML(t, expectedPodGroup(ns, "inf-0-workers-1", newMembers[1], newMembers, 1, 1, rackMust), comparablePart(got[newMembers[1]]))

		require.NoError(t, c.Delete(ctx, scaled[1]))
		backendtest.Eventually(t, 45*time.Second, func() (bool, error) {
			got := listPodGroups(t, c, ns)
			_, a := got[newMembers[0]]
			_, b := got[newMembers[1]]
			return !a && !b, nil
		}, "the garbage collector to delete the PodGroups of the removed PodGang")
		assert.Contains(t, listPodGroups(t, c, ns), scaledMembers[0], "the other scaled gang keeps its PodGroups")
	})
}

func TestSyncPodGangNeverOverwritesAForeignPodGroup(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	foreign := thirdparty.New(PodGroupGVK, client.ObjectKey{Namespace: ns, Name: "gang-gang-a"})
	foreign.Object["spec"] = map[string]any{"minMember": int64(9)}
	require.NoError(t, c.Create(ctx, foreign))

	pg := backendtest.PodGang(ns, "gang", "", []schedv1alpha1.PodGroup{{Name: "gang-a", MinReplicas: 1, PodReferences: []schedv1alpha1.NamespacedName{}}})
	require.NoError(t, c.Create(ctx, pg))
	err := newBackend(t, c, "").SyncPodGang(ctx, pg)
	var notOwned *thirdparty.NotOwnedError
	require.True(t, errors.As(err, &notOwned), "want NotOwnedError, got %v", err)
	got := listPodGroups(t, c, ns)["gang-gang-a"]
	assert.Equal(t, foreign.GetResourceVersion(), got.GetResourceVersion())
}

func TestValidatePodCliqueSetRejectsTopologyKeysWithoutAKoordinatorLayer(t *testing.T) {
	c := backendtest.Client(t)
	ct := backendtest.CreateClusterTopology(t, c)
	rackAndHostOnly := newBackend(t, c, `{"topologyLayers":{"rack":{"key":"example.com/rack","layer":"RackLayer"}}}`)
	pcs := func(topologyName string, pcsConstraint, clique0, clique1 *corev1alpha1.TopologyConstraint) *corev1alpha1.PodCliqueSet {
		if pcsConstraint != nil {
			pcsConstraint.TopologyName = topologyName
		}
		return &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
			TopologyConstraint: pcsConstraint,
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{
				{Name: "router", TopologyConstraint: clique0}, {Name: "worker", TopologyConstraint: clique1}},
		}}}
	}
	rack := func() *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{PackDomain: corev1alpha1.TopologyDomainRack}
	}
	cases := []struct {
		name       string
		pcs        *corev1alpha1.PodCliqueSet
		wantFields []string
		wantDetail string
	}{
		{name: "configured layers", pcs: pcs(ct.Name, rack(), nil,
			&corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack", Preferred: "host"}})},
		{name: "no constraints", pcs: pcs(ct.Name, nil, nil, nil)},
		{name: "pack domain without a layer", pcs: pcs(ct.Name, &corev1alpha1.TopologyConstraint{PackDomain: "block"}, nil, nil),
			wantFields: []string{"spec.template.topologyConstraint.packDomain"},
			wantDetail: fmt.Sprintf(`domain "block" is node label "example.com/block" in ClusterTopology %q, which has no Koordinator layer`, ct.Name)},
		{name: "required and preferred without a layer", pcs: pcs(ct.Name, rack(),
			&corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "block"}},
			&corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "block"}}),
			wantFields: []string{"spec.template.cliques[0].topologyConstraint.pack.required", "spec.template.cliques[1].topologyConstraint.pack.preferred"}},
		{name: "unknown ClusterTopology", pcs: pcs("no-such-topology-"+rand.String(4), rack(), nil, nil),
			wantFields: []string{"spec.template.topologyConstraint.topologyName"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := rackAndHostOnly.ValidatePodCliqueSet(context.Background(), tc.pcs)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tc.wantFields, fields)
			if tc.wantDetail != "" {
				require.NotEmpty(t, errs)
				assert.Contains(t, errs[0].Detail, tc.wantDetail)
			}
		})
	}
}

func createNetworkTopology(t *testing.T, c client.Client, name string, layers ...map[string]any) *unstructured.Unstructured {
	t.Helper()
	u := thirdparty.New(ClusterNetworkTopologyGVK, client.ObjectKey{Name: name})
	var items []any
	for _, l := range layers {
		items = append(items, l)
	}
	u.Object["spec"] = map[string]any{"networkTopologySpec": items}
	require.NoError(t, c.Create(context.Background(), u, client.FieldValidation("Strict")))
	t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(context.Background(), u)) })
	return u
}

func TestCheckTopologyDriftOfAReferencedClusterNetworkTopology(t *testing.T) {
	c := backendtest.Client(t)
	ctx := context.Background()
	ct := backendtest.CreateClusterTopology(t, c)
	b := newBackend(t, c, threeLayers)
	name := "cnt-" + rand.String(5)

	drift, err := b.CheckTopologyDrift(ctx, ct, name)
	require.NoError(t, err)
	assert.Equal(t, backend.DriftResult{Message: fmt.Sprintf("ClusterNetworkTopology %q not found", name)}, drift)

	same := createNetworkTopology(t, c, name, layer("BlockLayer", "", backendtest.KeyBlock),
		layer("RackLayer", "BlockLayer", backendtest.KeyRack), layer("NodeTopologyLayer", "RackLayer"))
	drift, err = b.CheckTopologyDrift(ctx, ct, name)
	require.NoError(t, err)
	assert.Equal(t, backend.DriftResult{Found: true, InSync: true, ObservedGeneration: same.GetGeneration()}, drift)

	other := createNetworkTopology(t, c, name+"-x", layer("BlockLayer", "", backendtest.KeyBlock),
		layer("RackLayer", "BlockLayer", "example.com/switch"), layer("NodeTopologyLayer", "RackLayer"))
	drift, err = b.CheckTopologyDrift(ctx, ct, name+"-x")
	require.NoError(t, err)
	assert.Equal(t, backend.DriftResult{Found: true, ObservedGeneration: other.GetGeneration(), Message: fmt.Sprintf(
		`ClusterNetworkTopology %q has layer keys ["example.com/block" "example.com/switch" "kubernetes.io/hostname"]; `+
			`the ClusterTopology's keys are ["example.com/block" "example.com/rack" "kubernetes.io/hostname"]`, name+"-x")}, drift)
}
