//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/operator/backend/kai"
	"github.com/ai-dynamo/grove/internal/operator/backend/koordinator"
	"github.com/ai-dynamo/grove/internal/operator/backend/kube"
	"github.com/ai-dynamo/grove/internal/operator/backend/volcano"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	configv1alpha1 "github.com/ai-dynamo/grove/pkg/api/config/v1alpha1"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// backendCase is a PodCliqueSet handed to one scheduler backend and the kinds of objects
// that backend writes for each PodGang.
type backendCase struct {
	scheduler configv1alpha1.SchedulerName
	labels    map[string]string
	kinds     []schema.GroupVersionKind
	// check, when set, looks at the backend's objects once the first PodGang's exist.
	check func(t *testing.T, env *framework.Env, ns, name string)
}

// The third-party backends through the whole operator, as its ServiceAccount with the shipped
// RBAC: with KAI, Koordinator, Volcano and the Workload API enabled next to grove-scheduler, each
// PodCliqueSet's PodGangs become its scheduler's objects, a scale-out adds the new replica's,
// and deleting the PodCliqueSet leaves none behind. No scheduler of theirs runs here: this is
// the operator's side of the contract; the objects' exact specs are checked against the real
// CRDs in internal/operator/backend/*. Any request the shipped RBAC refuses fails the test (startEnv).
func TestThirdPartyBackendsUnderTheShippedRBAC(t *testing.T) {
	koordConfig := fmt.Sprintf(`{"topologyLayers":{"rack":{"key":%q,"layer":"RackLayer"},"block":{"key":%q,"layer":"BlockLayer"}}}`,
		framework.RackKey, framework.BlockKey)
	volcanoConfig := fmt.Sprintf(`{"topologyTiers":[{"key":%q,"tier":1},{"key":%q,"tier":2}]}`, framework.RackKey, framework.BlockKey)
	env, w := startEnv(t, framework.Options{
		Cluster: cluster.Options{
			WithThirdPartyCRDs: true,
			FeatureGates:       map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true},
			RuntimeConfig:      []string{"scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1alpha3=true"},
			// Lets Workload API PodGroups go once their pods are gone.
			ExtraControllers: []string{"podgroup-protection-controller"},
		},
		OperatorConfig: func(c *configv1alpha1.OperatorConfiguration) {
			c.Scheduler.Profiles = []configv1alpha1.SchedulerProfile{
				{Name: configv1alpha1.SchedulerNameGrove},
				{Name: configv1alpha1.SchedulerNameKAI},
				{Name: configv1alpha1.SchedulerNameKoordinator, Config: &runtime.RawExtension{Raw: []byte(koordConfig)}},
				{Name: configv1alpha1.SchedulerNameVolcano, Config: &runtime.RawExtension{Raw: []byte(volcanoConfig)}},
				{Name: configv1alpha1.SchedulerNameKube},
			}
		},
	})
	ctx := context.Background()
	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 1, RacksPerBlock: 2, HostsPerRack: 2}, twoCPUNode)
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	ns := env.Cluster.TestNamespace(t)

	// Grove keeps a KAI Topology equal to each ClusterTopology while KAI is enabled.
	require.Eventually(t, func() bool {
		_, found, err := getUnstructured(ctx, env.Client, kai.TopologyGVK, client.ObjectKey{Name: "fabric"})
		return err == nil && found
	}, time.Minute, 250*time.Millisecond, "the KAI Topology of ClusterTopology fabric")

	cases := []backendCase{
		{scheduler: configv1alpha1.SchedulerNameKAI, labels: map[string]string{kai.LabelQueue: "team-a"}, kinds: []schema.GroupVersionKind{kai.PodGroupGVK}},
		{scheduler: configv1alpha1.SchedulerNameKoordinator, kinds: []schema.GroupVersionKind{koordinator.PodGroupGVK}},
		{scheduler: configv1alpha1.SchedulerNameVolcano, labels: map[string]string{volcano.KeyQueue: "team-a"}, kinds: []schema.GroupVersionKind{volcano.PodGroupGVK},
			check: checkVolcano},
		{scheduler: configv1alpha1.SchedulerNameKube, kinds: []schema.GroupVersionKind{kube.PodGroupGVK, kube.CompositePodGroupGVK}},
	}
	for _, tc := range cases {
		t.Run(string(tc.scheduler), func(t *testing.T) {
			name := "on-" + string(tc.scheduler)
			p := withTopology(pcs(ns, name, 1, clique("router", 1, "1"), clique("worker", 2, "1")), "fabric", "rack", "")
			p.Labels = tc.labels
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = string(tc.scheduler)
			}
			require.NoError(t, env.Client.Create(ctx, p))
			gangs := []string{name + "-0"}
			expectOwners := func(want []string) {
				t.Helper()
				require.EventuallyWithT(t, func(c *assert.CollectT) {
					for _, gvk := range tc.kinds {
						assert.ElementsMatch(c, want, gangOwners(c, ctx, env.Client, gvk, ns, name), "PodGangs owning %s objects", gvk.Kind)
					}
				}, 2*time.Minute, 250*time.Millisecond, describe(env, ns, name, gangs[0]))
			}
			expectOwners(gangs)
			for _, pod := range podsOf(t, env, ns, name) {
				assert.Equal(t, string(tc.scheduler), pod.Spec.SchedulerName, pod.Name)
			}
			if tc.check != nil {
				tc.check(t, env, ns, name)
			}

			scaleTo(t, env, p, 2)
			gangs = append(gangs, name+"-1")
			expectOwners(gangs)

			require.NoError(t, env.Client.Delete(ctx, p))
			expectOwners(nil)
		})
	}

	// A PodCliqueSet-wide required rack over a scaling group that scales out: KAI (whose CRD
	// here has minSubGroup) gets one PodGroup for the replica, which every pod names, with the
	// scaled gang nested inside; no scaled gang has a PodGroup of its own.
	t.Run("kai-scheduler keeps a replica in one domain", func(t *testing.T) {
		name := "kai-wide"
		p := withTopology(withGroup(pcs(ns, name, 1, clique("router", 1, "1"), clique("worker", 1, "1")), "workers", 2, 1, "worker"), "fabric", "rack", "")
		p.Labels = map[string]string{kai.LabelQueue: "team-a"}
		for _, c := range p.Spec.Template.Cliques {
			c.Spec.PodSpec.SchedulerName = string(configv1alpha1.SchedulerNameKAI)
		}
		require.NoError(t, env.Client.Create(ctx, p))
		base := name + "-0"
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			u, found, err := getUnstructured(ctx, env.Client, kai.PodGroupGVK, client.ObjectKey{Namespace: ns, Name: base})
			if !assert.NoError(c, err) || !assert.True(c, found) {
				return
			}
			spec, _ := u.Object["spec"].(map[string]any)
			assert.Equal(c, map[string]any{"topology": "fabric", "requiredTopologyLevel": framework.RackKey}, spec["topologyConstraint"])
			var names []string
			for _, s := range spec["subGroups"].([]any) {
				names = append(names, s.(map[string]any)["name"].(string))
			}
			assert.Contains(c, names, base+"-workers-0-podgang", "the scaled gang's branch")
			assert.Contains(c, names, base+"-workers-1-worker", "the scaled gang's PodClique")
			assert.ElementsMatch(c, []string{base}, gangOwners(c, ctx, env.Client, kai.PodGroupGVK, ns, name), "one KAI PodGroup, the base PodGang's")
		}, 2*time.Minute, 250*time.Millisecond, describe(env, ns, name, base))
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			pods := podsOf(t, env, ns, name)
			assert.Len(c, pods, 3)
			for _, pod := range pods {
				assert.Equal(c, base, pod.Annotations[kai.AnnotationPodGroupName], pod.Name)
				assert.Equal(c, pod.Labels[common.LabelPodClique], pod.Labels[kai.LabelSubGroupName], pod.Name)
			}
		}, time.Minute, 250*time.Millisecond, "every pod of the replica names its KAI PodGroup")
		require.NoError(t, env.Client.Delete(ctx, p))
	})
	w.assertNoPartialGang()
}

// gangOwners lists, once per object, the PodGang owning each object of that kind in the
// namespace whose PodGang belongs to the PodCliqueSet pcsName (PodGang names start with it).
func gangOwners(c *assert.CollectT, ctx context.Context, cl client.Client, gvk schema.GroupVersionKind, ns, pcsName string) []string {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if !assert.NoError(c, cl.List(ctx, list, client.InNamespace(ns))) {
		return nil
	}
	owners := map[string]bool{}
	for _, obj := range list.Items {
		for _, ref := range obj.GetOwnerReferences() {
			if ref.Kind == "PodGang" && len(ref.Name) > len(pcsName) && ref.Name[:len(pcsName)+1] == pcsName+"-" {
				owners[ref.Name] = true
			}
		}
	}
	var out []string
	for o := range owners {
		out = append(out, o)
	}
	return out
}

func getUnstructured(ctx context.Context, cl client.Client, gvk schema.GroupVersionKind, key client.ObjectKey) (*unstructured.Unstructured, bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := cl.Get(ctx, key, u)
	if client.IgnoreNotFound(err) != nil {
		return nil, false, err
	}
	return u, err == nil, nil
}

// checkVolcano: the Volcano PodGroup of replica 0 has the queue of the PodCliqueSet's label, one
// minTaskMember entry per PodClique adding up to minMember, and the required rack as a hard
// networkTopology on tier 1; every pod names its PodGroup and its task (its PodClique). A queue
// changed on the PodCliqueSet (as Dynamo does) reaches the PodGroup.
func checkVolcano(t *testing.T, env *framework.Env, ns, name string) {
	ctx := context.Background()
	gang := name + "-0"
	spec := func(c *assert.CollectT) map[string]any {
		u, found, err := getUnstructured(ctx, env.Client, volcano.PodGroupGVK, client.ObjectKey{Namespace: ns, Name: gang})
		if !assert.NoError(c, err) || !assert.True(c, found) {
			return nil
		}
		s, _ := u.Object["spec"].(map[string]any)
		return s
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := spec(c)
		assert.Equal(c, "team-a", s["queue"])
		assert.Equal(c, map[string]any{"mode": "hard", "highestTierAllowed": int64(1)}, s["networkTopology"])
		tasks, _ := s["minTaskMember"].(map[string]any)
		var sum int64
		var names []string
		for k, v := range tasks {
			names = append(names, k)
			n, _ := v.(int64)
			sum += n
		}
		assert.ElementsMatch(c, []string{gang + "-router", gang + "-worker"}, names)
		assert.Equal(c, sum, s["minMember"])
	}, time.Minute, 250*time.Millisecond)
	for _, pod := range podsOf(t, env, ns, name) {
		if pod.Labels[common.LabelPodGang] != gang {
			continue
		}
		assert.Equal(t, gang, pod.Annotations[volcano.AnnotationGroupName], pod.Name)
		assert.Equal(t, pod.Labels[common.LabelPodClique], pod.Annotations[volcano.AnnotationTaskSpec], pod.Name)
	}

	updatePCS(t, env, ns, name, func(p *corev1alpha1.PodCliqueSet) { p.Labels[volcano.KeyQueue] = "team-b" })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "team-b", spec(c)["queue"])
	}, time.Minute, 250*time.Millisecond, "the changed queue on the Volcano PodGroup")
}
