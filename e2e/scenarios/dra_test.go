//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// publishDevices creates a DeviceClass selecting driver's devices and, on every node, a
// ResourceSlice of perNode devices, as a DRA driver on each node would.
func publishDevices(t *testing.T, env *framework.Env, driver, class string, nodes []string, perNode int) {
	t.Helper()
	ctx := context.Background()
	_, err := env.Clientset.ResourceV1().DeviceClasses().Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
			Expression: fmt.Sprintf("device.driver == %q", driver)}}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, node := range nodes {
		slice := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: resourcev1.ResourceSliceSpec{
			Driver: driver, NodeName: ptr.To(node), Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1}}}
		for i := range perNode {
			slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("dev-%d", i)})
		}
		_, err := env.Clientset.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
		require.NoError(t, err)
	}
}

// sharingShape is how many pods each PodCliqueSet replica of the resource-sharing workload runs:
// pods of clique w, and replicas (one pod each) of scaling group sg.
type sharingShape map[int]struct{ w, sg int }

// claims are the ResourceClaims (name → owner kind) and each pod's claims (pod role, as
// "<replica>/w/<pod index>" or "<replica>/sg/<group replica>" → sorted claim names) of the shape.
func (s sharingShape) claims() (map[string]string, map[string][]string) {
	owners, pods := map[string]string{}, map[string][]string{}
	if len(s) > 0 {
		owners["dra-all-gpu"] = "PodCliqueSet"
	}
	for r, n := range s {
		nic := fmt.Sprintf("dra-%d-nic", r)
		owners[nic] = "PodCliqueSet"
		for i := range n.w {
			own := fmt.Sprintf("dra-%d-w-%d-gpu", r, i)
			owners[own] = "PodClique"
			pods[fmt.Sprintf("%d/w/%d", r, i)] = []string{own, "dra-all-gpu"}
		}
		for j := range n.sg {
			own := fmt.Sprintf("dra-%d-sg-%d-gpu", r, j)
			owners[own] = "PodCliqueScalingGroup"
			pods[fmt.Sprintf("%d/sg/%d", r, j)] = []string{nic, own}
		}
	}
	return owners, pods
}

func (s sharingShape) pods() int {
	n := 0
	for _, r := range s {
		n += r.w + r.sg
	}
	return n
}

// role names a pod of the resource-sharing workload as sharingShape.claims does.
func role(p *corev1.Pod) string {
	r := p.Labels[common.LabelPodCliqueSetReplicaIndex]
	if j, ok := p.Labels[common.LabelPodCliqueScalingGroupReplicaIndex]; ok {
		return r + "/sg/" + j
	}
	return r + "/w/" + p.Labels[common.LabelPodCliquePodIndex]
}

// Resource sharing: a PodCliqueSet shares claims at every level — one AllReplicas claim for
// clique w of all replicas, a PerReplica claim per replica for scaling group sg, a PerReplica
// claim per sg replica, and one per pod index of w. Through scale-out and scale-in of the
// scaling group, the clique and the PodCliqueSet, the ResourceClaims are exactly the ones the
// shape calls for, with their owners; every pod references exactly its claims (pod and
// containers); every claim is allocated on the node of the pods that use it and reserved for
// exactly them. Deleting the PodCliqueSet removes every claim.
func TestResourceSharingClaimsFollowScaling(t *testing.T) {
	// The resourceclaim controller drops deleted pods from claims' reservedFor.
	env, w, ns := nodesEnv(t, framework.Options{Cluster: cluster.Options{ExtraControllers: []string{"resourceclaim-controller"}}}, 3, fourCPUNode)
	ctx := context.Background()
	publishDevices(t, env, "gpu.e2e.grove.io", "e2e-gpu", []string{"n-0", "n-1", "n-2"}, 16)

	p := withGroup(pcs(ns, "dra", 1, clique("w", 2, "500m", cliqueSharing(corev1alpha1.ResourceSharingScopePerReplica, "gpu")), clique("x", 1, "500m")), "sg", 2, 1, "x")
	withClaimTemplate(withClaimTemplate(p, "gpu", "e2e-gpu"), "nic", "e2e-gpu")
	group(p, "sg").ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: corev1alpha1.ResourceSharingScopePerReplica}}}
	p.Spec.Template.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: corev1alpha1.ResourceSharingScopeAllReplicas},
			Filter: &corev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"w"}}},
		{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "nic", Scope: corev1alpha1.ResourceSharingScopePerReplica},
			Filter: &corev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"sg"}}},
	}
	require.NoError(t, env.Client.Create(ctx, p))

	steps := []struct {
		what  string
		scale func()
		shape sharingShape
	}{
		{"created", func() {}, sharingShape{0: {2, 2}}},
		{"sg 2→3", func() { scaleTo(t, env, pcsgRef(ns, "dra-0-sg"), 3) }, sharingShape{0: {2, 3}}},
		{"pcs 1→2", func() { scaleTo(t, env, pcsRef(ns, "dra"), 2) }, sharingShape{0: {2, 3}, 1: {2, 2}}},
		{"w 2→3", func() { scaleTo(t, env, pclqRef(ns, "dra-0-w"), 3) }, sharingShape{0: {3, 3}, 1: {2, 2}}},
		{"sg 3→1", func() { scaleTo(t, env, pcsgRef(ns, "dra-0-sg"), 1) }, sharingShape{0: {3, 1}, 1: {2, 2}}},
		{"w 3→2", func() { scaleTo(t, env, pclqRef(ns, "dra-0-w"), 2) }, sharingShape{0: {2, 1}, 1: {2, 2}}},
		{"pcs 2→1", func() { scaleTo(t, env, pcsRef(ns, "dra"), 1) }, sharingShape{0: {2, 1}}},
		{"pcs deleted", func() { require.NoError(t, env.Client.Delete(ctx, p)) }, sharingShape{}},
	}
	for _, s := range steps {
		s.scale()
		wantOwners, wantPods := s.shape.claims()
		if len(s.shape) > 0 {
			waitPods(t, env, ns, "dra", s.shape.pods())
		}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var list resourcev1.ResourceClaimList
			require.NoError(c, env.Client.List(ctx, &list, client.InNamespace(ns)))
			owners, byName := map[string]string{}, map[string]*resourcev1.ResourceClaim{}
			for i, claim := range list.Items {
				if claim.DeletionTimestamp != nil {
					continue
				}
				owners[claim.Name] = claim.Labels[common.LabelResourceClaimOwnerKind]
				if len(claim.OwnerReferences) == 1 {
					assert.Equal(c, owners[claim.Name], claim.OwnerReferences[0].Kind, "owner of %s", claim.Name)
				}
				byName[claim.Name] = &list.Items[i]
			}
			assert.Equal(c, wantOwners, owners, "ResourceClaims")

			users := map[string][]string{}
			pods := livePods(podsOf(t, env, ns, "dra"))
			roles := map[string][]string{}
			for _, pod := range pods {
				var refs []string
				for _, rc := range pod.Spec.ResourceClaims {
					refs = append(refs, ptr.Deref(rc.ResourceClaimName, ""))
					users[ptr.Deref(rc.ResourceClaimName, "")] = append(users[ptr.Deref(rc.ResourceClaimName, "")], pod.Name)
					if claim := byName[ptr.Deref(rc.ResourceClaimName, "")]; claim != nil {
						assert.Equal(c, pod.Spec.NodeName, allocatedNode(claim), "claim %s is allocated where %s runs", claim.Name, pod.Name)
					}
				}
				slices.Sort(refs)
				roles[role(&pod)] = refs
				for _, ctr := range pod.Spec.Containers {
					var names []string
					for _, rc := range ctr.Resources.Claims {
						names = append(names, rc.Name)
					}
					assert.Len(c, names, len(pod.Spec.ResourceClaims), "container %s of %s uses every claim of the pod", ctr.Name, pod.Name)
				}
			}
			assert.Equal(c, wantPods, roles, "claims of each pod")
			for name, claim := range byName {
				var reserved []string
				for _, r := range claim.Status.ReservedFor {
					reserved = append(reserved, r.Name)
				}
				slices.Sort(reserved)
				slices.Sort(users[name])
				assert.Equal(c, users[name], reserved, "%s is reserved for exactly its pods", name)
			}
		}, 2*time.Minute, 250*time.Millisecond, "after %s", s.what)
	}
	w.assertNoPartialGang()
}

// allocatedNode is the node (pool) of a claim's single device; "" while unallocated.
func allocatedNode(c *resourcev1.ResourceClaim) string {
	if c.Status.Allocation == nil || len(c.Status.Allocation.Devices.Results) != 1 {
		return ""
	}
	return c.Status.Allocation.Devices.Results[0].Pool
}

// Two pods of one gang share a claim that is not allocated yet (an AllReplicas claim of a
// two-pod clique): both run, on the node of the claim's device, and the claim is reserved for
// both. (grove-scheduler used to deadlock such gangs at the Permit barrier.) Only n-1 has the
// device.
func TestGangMembersShareAnUnallocatedClaim(t *testing.T) {
	env, w, ns := nodesEnv(t, framework.Options{}, 2, fourCPUNode)
	ctx := context.Background()
	publishDevices(t, env, "gpu.e2e.grove.io", "e2e-gpu", []string{"n-1"}, 1)
	p := withClaimTemplate(pcs(ns, "share", 1, clique("w", 2, "1")), "gpu", "e2e-gpu")
	p.Spec.Template.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: corev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: corev1alpha1.ResourceSharingScopeAllReplicas}}}
	require.NoError(t, env.Client.Create(ctx, p))
	pods := waitPods(t, env, ns, "share", 2)
	claim, err := env.Clientset.ResourceV1().ResourceClaims(ns).Get(ctx, "share-all-gpu", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "n-1", allocatedNode(claim))
	assert.Equal(t, map[string]map[string]int{"share-0": {"n-1": 2}}, placement(pods, common.LabelPodGang))
	assert.Len(t, claim.Status.ReservedFor, 2)
	assert.Contains(t, claim.Finalizers, resourcev1.Finalizer)
	w.assertNoPartialGang()
}
