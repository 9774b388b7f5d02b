package controller_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// claimSpec requests one device of a class; each template uses its own class so a claim shows
// which template it was made from.
func claimSpec(class string) resourcev1.ResourceClaimSpec {
	return resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: class},
	}}}}
}

func sharing(name, namespace string, scope corev1alpha1.ResourceSharingScope) corev1alpha1.ResourceSharingSpec {
	return corev1alpha1.ResourceSharingSpec{Name: name, Namespace: namespace, Scope: scope}
}

// sharingPCS is the hierarchical sharing scenario (claims at every level), on the disaggregated PodCliqueSet
// (standalone router; scaling group "workers" of prefill and decode, 2 replicas) with one pod
// per clique and an init container:
//   - PodCliqueSet: "fabric" AllReplicas filtered to the router clique; "scratch" PerReplica
//     filtered to the workers scaling group;
//   - scaling group workers: "nic" PerReplica filtered to decode; "fabric" AllReplicas to all
//     members;
//   - clique router: "shared-gpu" PerReplica from a ResourceClaimTemplate in sharedNS, and
//     "nic" AllReplicas.
func sharingPCS(ns, name, sharedNS string) *corev1alpha1.PodCliqueSet {
	pcs := disaggregated(ns, name, 1)
	t := &pcs.Spec.Template
	t.Clique("prefill").Spec.Replicas = 1
	for _, c := range t.Cliques {
		c.Spec.PodSpec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.k8s.io/pause:3.10"}}
	}
	all, per := corev1alpha1.ResourceSharingScopeAllReplicas, corev1alpha1.ResourceSharingScopePerReplica
	t.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{
		{Name: "fabric", TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec("fabric.example.com")}},
		{Name: "nic", TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec("nic.example.com")}},
		{Name: "scratch", TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec("mem.example.com")}},
	}
	t.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: sharing("fabric", "", all), Filter: &corev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"router"}}},
		{ResourceSharingSpec: sharing("scratch", "", per), Filter: &corev1alpha1.PCSResourceSharingFilter{ChildScalingGroupNames: []string{"workers"}}},
	}
	t.PodCliqueScalingGroupConfigs[0].ResourceSharing = []corev1alpha1.PCSGResourceSharingSpec{
		{ResourceSharingSpec: sharing("nic", "", per), Filter: &corev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"decode"}}},
		{ResourceSharingSpec: sharing("fabric", "", all)},
	}
	t.Clique("router").ResourceSharing = []corev1alpha1.ResourceSharingSpec{sharing("shared-gpu", sharedNS, per), sharing("nic", "", all)}
	return pcs
}

// wantClaim is what a claim must look like: its owner and, for a PerReplica claim, its replica.
type wantClaim struct {
	ownerKind, owner, template, replica, class string
}

// claimsOfReplica are the claims one PodCliqueSet replica i of sharingPCS owns below the
// PodCliqueSet, for its group replicas and router pod indices.
func claimsOfReplica(pcs string, i int, groupReplicas, routerPods []int) map[string]wantClaim {
	group := fmt.Sprintf("%s-%d-workers", pcs, i)
	router := fmt.Sprintf("%s-%d-router", pcs, i)
	out := map[string]wantClaim{
		fmt.Sprintf("%s-%d-scratch", pcs, i): {"PodCliqueSet", pcs, "scratch", fmt.Sprint(i), "mem.example.com"},
		group + "-all-fabric":                {"PodCliqueScalingGroup", group, "fabric", "", "fabric.example.com"},
		router + "-all-nic":                  {"PodClique", router, "nic", "", "nic.example.com"},
	}
	for _, j := range groupReplicas {
		out[fmt.Sprintf("%s-%d-nic", group, j)] = wantClaim{"PodCliqueScalingGroup", group, "nic", fmt.Sprint(j), "nic.example.com"}
	}
	for _, k := range routerPods {
		out[fmt.Sprintf("%s-%d-shared-gpu", router, k)] = wantClaim{"PodClique", router, "shared-gpu", fmt.Sprint(k), "gpu.example.com"}
	}
	return out
}

func merge(ms ...map[string]wantClaim) map[string]wantClaim {
	out := map[string]wantClaim{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// checkClaims compares the namespace's ResourceClaims with want: names, labels, controller
// (kind, name and UID of the live owner) and the template the spec came from.
func (e *env) checkClaims(c *assert.CollectT, pcs string, want map[string]wantClaim) {
	list := &resourcev1.ResourceClaimList{}
	require.NoError(c, e.c.List(e.ctx, list, client.InNamespace(e.ns)))
	got := map[string]*resourcev1.ResourceClaim{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			got[list.Items[i].Name] = &list.Items[i]
		}
	}
	var gotNames, wantNames []string
	for n := range got {
		gotNames = append(gotNames, n)
	}
	for n := range want {
		wantNames = append(wantNames, n)
	}
	sort.Strings(gotNames)
	sort.Strings(wantNames)
	if !assert.Equal(c, wantNames, gotNames) {
		return
	}
	for name, w := range want {
		rc := got[name]
		labels := map[string]string{
			"app.kubernetes.io/managed-by":       "grove-operator",
			"app.kubernetes.io/part-of":          pcs,
			"app.kubernetes.io/component":        "resource-claim",
			"grove.io/resource-claim-owner-kind": w.ownerKind,
			"grove.io/resource-claim-owner-name": w.owner,
			"grove.io/resource-claim-template":   w.template,
		}
		if w.replica != "" {
			labels["grove.io/resource-claim-replica-index"] = w.replica
		}
		for k, v := range labels {
			assert.Equal(c, v, rc.Labels[k], "%s label %s", name, k)
		}
		if w.replica == "" {
			assert.NotContains(c, rc.Labels, "grove.io/resource-claim-replica-index", name)
		}
		ref := metav1.GetControllerOf(rc)
		if assert.NotNil(c, ref, name) {
			assert.Equal(c, [3]string{"grove.io/v1alpha1", w.ownerKind, w.owner}, [3]string{ref.APIVersion, ref.Kind, ref.Name}, name)
			assert.Equal(c, e.uidOf(c, w.ownerKind, w.owner), ref.UID, "%s is owned by the live %s", name, w.owner)
		}
		if assert.Len(c, rc.Spec.Devices.Requests, 1, name) && assert.NotNil(c, rc.Spec.Devices.Requests[0].Exactly, name) {
			assert.Equal(c, w.class, rc.Spec.Devices.Requests[0].Exactly.DeviceClassName, "%s is made from template %s", name, w.template)
		}
	}
}

func (e *env) uidOf(c *assert.CollectT, kind, name string) types.UID {
	var obj client.Object
	switch kind {
	case "PodCliqueSet":
		obj = &corev1alpha1.PodCliqueSet{}
	case "PodCliqueScalingGroup":
		obj = &corev1alpha1.PodCliqueScalingGroup{}
	default:
		obj = &corev1alpha1.PodClique{}
	}
	require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, obj))
	return obj.GetUID()
}

// checkPodClaims compares the claims every live pod of a PodClique references (pod-level
// entries, and the same entries in every container and init container) with want(podIndex).
func (e *env) checkPodClaims(c *assert.CollectT, pclq string, pods int, want func(podIndex string) []string) {
	list := e.pods(pclq)
	if !assert.Len(c, list, pods, pclq) {
		return
	}
	for _, p := range list {
		var claims, entries []string
		for _, rc := range p.Spec.ResourceClaims {
			if assert.NotNil(c, rc.ResourceClaimName, p.Name) {
				claims = append(claims, *rc.ResourceClaimName)
			}
			entries = append(entries, rc.Name)
		}
		assert.ElementsMatch(c, want(p.Labels["grove.io/podclique-pod-index"]), claims, "claims of pod %s", p.Spec.Hostname)
		for _, ctr := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
			var refs []string
			for _, r := range ctr.Resources.Claims {
				refs = append(refs, r.Name)
			}
			assert.ElementsMatch(c, entries, refs, "container %s of %s uses every claim", ctr.Name, p.Spec.Hostname)
		}
	}
}

func fixed(claims ...string) func(string) []string { return func(string) []string { return claims } }

// routerClaims are the claims of pod k of the router of replica i.
func routerClaims(pcs string, i int) func(string) []string {
	return func(k string) []string {
		return []string{pcs + "-all-fabric", fmt.Sprintf("%s-%d-router-%s-shared-gpu", pcs, i, k), fmt.Sprintf("%s-%d-router-all-nic", pcs, i)}
	}
}

// checkReplicaPods checks the claims of every pod of replica i of sharingPCS.
func (e *env) checkReplicaPods(c *assert.CollectT, pcs string, i int, routerPods int, groupReplicas []int) {
	e.checkPodClaims(c, fmt.Sprintf("%s-%d-router", pcs, i), routerPods, routerClaims(pcs, i))
	group := fmt.Sprintf("%s-%d-workers", pcs, i)
	scratch := fmt.Sprintf("%s-%d-scratch", pcs, i)
	for _, j := range groupReplicas {
		e.checkPodClaims(c, fmt.Sprintf("%s-%d-prefill", group, j), 1, fixed(scratch, group+"-all-fabric"))
		e.checkPodClaims(c, fmt.Sprintf("%s-%d-decode", group, j), 1, fixed(scratch, fmt.Sprintf("%s-%d-nic", group, j), group+"-all-fabric"))
	}
}

// TestHierarchicalResourceSharing runs the hierarchical sharing scenario: claims at every level with
// filters and a cross-namespace template; scaling the group, a clique and the PodCliqueSet out
// and in; a deleted claim coming back; and every claim gone with the PodCliqueSet.
func TestHierarchicalResourceSharing(t *testing.T) {
	e := newEnv(t)
	sharedNS := cluster.Shared.TestNamespace(t)
	rct := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: sharedNS, Name: "shared-gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"from-template": "yes"}},
			Spec:       claimSpec("gpu.example.com"),
		},
	}
	e.create(rct)
	e.create(sharingPCS(e.ns, "rs", sharedNS))

	pcsClaims := map[string]wantClaim{"rs-all-fabric": {"PodCliqueSet", "rs", "fabric", "", "fabric.example.com"}}
	e.eventually(func(c *assert.CollectT) {
		e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0, 1}, []int{0})))
		e.checkReplicaPods(c, "rs", 0, 1, []int{0, 1})
	}, "initial claims and pod references")
	ext := &resourcev1.ResourceClaim{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "rs-0-router-0-shared-gpu"}, ext))
	assert.Equal(t, "yes", ext.Labels["from-template"], "the external template's metadata is carried over")

	t.Run("scaling group out and in", func(t *testing.T) {
		group := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "rs-0-workers"}}
		e.scale(group, 3)
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0, 1, 2}, []int{0})))
			e.checkReplicaPods(c, "rs", 0, 1, []int{0, 1, 2})
		})
		e.scale(group, 1)
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0}, []int{0})))
		})
	})

	t.Run("clique out and in", func(t *testing.T) {
		router := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "rs-0-router"}}
		e.scale(router, 3)
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0}, []int{0, 1, 2})))
			e.checkReplicaPods(c, "rs", 0, 3, []int{0})
		})
		// Unscheduled pods go newest first: pods 1 and 2, with their claims.
		e.scale(router, 1)
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0}, []int{0})))
			e.checkReplicaPods(c, "rs", 0, 1, []int{0})
		})
	})

	t.Run("a deleted claim is made again", func(t *testing.T) {
		for _, name := range []string{"rs-0-scratch", "rs-0-workers-0-nic", "rs-0-router-0-shared-gpu"} {
			old := &resourcev1.ResourceClaim{}
			require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, old))
			require.NoError(t, e.c.Delete(e.ctx, old))
			e.eventually(func(c *assert.CollectT) {
				rc := &resourcev1.ResourceClaim{}
				require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: name}, rc))
				assert.NotEqual(c, old.UID, rc.UID, name)
			})
		}
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0}, []int{0})))
		})
	})

	t.Run("PodCliqueSet out and in", func(t *testing.T) {
		pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "rs"}}
		e.scale(pcs, 2)
		// The new replica starts from the template: two group replicas, one router pod.
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0}, []int{0}), claimsOfReplica("rs", 1, []int{0, 1}, []int{0})))
			e.checkReplicaPods(c, "rs", 1, 1, []int{0, 1})
		})
		e.scale(pcs, 1)
		e.eventually(func(c *assert.CollectT) {
			e.checkClaims(c, "rs", merge(pcsClaims, claimsOfReplica("rs", 0, []int{0}, []int{0})))
		})
	})

	t.Run("deleting the PodCliqueSet collects every claim", func(t *testing.T) {
		require.NoError(t, e.c.Delete(e.ctx, &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "rs"}}))
		e.eventually(func(c *assert.CollectT) {
			assert.Empty(c, e.names(&resourcev1.ResourceClaimList{}))
			assert.Empty(c, e.names(&corev1alpha1.PodCliqueList{}))
		})
		got := &resourcev1.ResourceClaimTemplate{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(rct), got), "the external template is not Grove's")
	})
}

// TestResourceSharingLeavesForeignClaimsAlone: a claim whose name Grove would use but that
// Grove did not make is never adopted, changed or deleted; the PodCliqueSet reports it, and a
// missing template is reported until it appears.
func TestResourceSharingLeavesForeignClaimsAlone(t *testing.T) {
	e := newEnv(t)
	foreign := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "fs-all-fabric", Labels: map[string]string{"owner": "someone"}},
		Spec:       claimSpec("other.example.com"),
	}
	e.create(foreign)
	pcs := disaggregated(e.ns, "fs", 1)
	pcs.Spec.Template.ResourceClaimTemplates = []corev1alpha1.ResourceClaimTemplateConfig{
		{Name: "fabric", TemplateSpec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec("fabric.example.com")}},
	}
	pcs.Spec.Template.ResourceSharing = []corev1alpha1.PCSResourceSharingSpec{
		{ResourceSharingSpec: sharing("fabric", "", corev1alpha1.ResourceSharingScopeAllReplicas)},
	}
	pcs.Spec.Template.Clique("router").ResourceSharing = []corev1alpha1.ResourceSharingSpec{
		sharing("late", "", corev1alpha1.ResourceSharingScopePerReplica),
	}
	e.create(pcs)

	e.eventually(func(c *assert.CollectT) {
		got := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKeyFromObject(pcs), got))
		var descriptions []string
		for _, le := range got.Status.LastErrors {
			descriptions = append(descriptions, le.Description)
		}
		assert.Contains(c, strings.Join(descriptions, "\n"), "ResourceClaim "+e.ns+"/fs-all-fabric (name from resourceSharing name \"fabric\" of PodCliqueSet fs) exists and was not created by Grove")
		cond := condition(got.Status.Conditions, apicommon.ConditionNameConflict)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionTrue, cond.Status)
		assert.Contains(c, cond.Message, "ResourceClaim "+e.ns+"/fs-all-fabric")
	})
	got := &resourcev1.ResourceClaim{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(foreign), got))
	assert.Empty(t, got.OwnerReferences)
	assert.Equal(t, map[string]string{"owner": "someone"}, got.Labels)
	assert.Equal(t, "other.example.com", got.Spec.Devices.Requests[0].Exactly.DeviceClassName)
	assert.Empty(t, e.names(&corev1alpha1.PodCliqueList{}), "children wait for the claims they use")

	// Once the name is free, Grove makes its claim; the router's claim waits for its template.
	require.NoError(t, e.c.Delete(e.ctx, foreign))
	e.eventually(func(c *assert.CollectT) {
		rc := &resourcev1.ResourceClaim{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "fs-all-fabric"}, rc))
		assert.Equal(c, "fabric.example.com", rc.Spec.Devices.Requests[0].Exactly.DeviceClassName)
		assert.Len(c, e.pods("fs-0-router"), 0, "no router pod before its claim")
		ev := &corev1.EventList{}
		require.NoError(c, e.c.List(e.ctx, ev, client.InNamespace(e.ns)))
		var notes []string
		for _, x := range ev.Items {
			if x.Reason == "ResourceClaimTemplateNotFound" && x.InvolvedObject.Name == "fs-0-router" {
				notes = append(notes, x.Message)
			}
		}
		assert.True(c, len(notes) > 0 && strings.Contains(notes[0], "ResourceClaimTemplate "+e.ns+"/late not found"), "event on the PodClique: %v", notes)
	})

	// A name that is no inline template is a ResourceClaimTemplate of the PodCliqueSet's namespace.
	e.create(&resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "late"},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: claimSpec("late.example.com")}})
	e.eventually(func(c *assert.CollectT) {
		rc := &resourcev1.ResourceClaim{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "fs-0-router-0-late"}, rc))
		assert.Equal(c, "late.example.com", rc.Spec.Devices.Requests[0].Exactly.DeviceClassName)
		e.checkPodClaims(c, "fs-0-router", 1, fixed("fs-all-fabric", "fs-0-router-0-late"))
		e.checkPodClaims(c, "fs-0-workers-0-decode", 1, fixed("fs-all-fabric"))
	})
}
