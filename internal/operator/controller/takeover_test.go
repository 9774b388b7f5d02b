package controller_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/hash"
)

// upstreamWriter writes objects the way upstream Grove's operator leaves them in a namespace it
// manages: raw JSON fields (no Go type of this project shapes them), upstream's names, labels,
// owner references, finalizers and status, and template hashes from upstream's own hashing
// (which this project does not compute).
type upstreamWriter struct {
	e   *env
	pcs *unstructured.Unstructured
}

const (
	upstreamTemplateHash   = "57c9b8d4f6"  // a hash value this operator never produces
	upstreamGenerationHash = "6f8d9c7b5a4" // ditto
)

func ownerRef(obj client.Object, kind string) map[string]any {
	return map[string]any{"apiVersion": "grove.io/v1alpha1", "kind": kind, "name": obj.GetName(), "uid": string(obj.GetUID()),
		"controller": true, "blockOwnerDeletion": true}
}

func (w *upstreamWriter) create(obj map[string]any) *unstructured.Unstructured {
	w.e.t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	status, hasStatus := obj["status"]
	require.NoError(w.e.t, w.e.c.Create(w.e.ctx, u))
	if hasStatus {
		u.Object["status"] = status
		require.NoError(w.e.t, w.e.c.Status().Update(w.e.ctx, u))
	}
	return u
}

func (w *upstreamWriter) labels(component string, extra map[string]any) map[string]any {
	l := map[string]any{
		apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "up",
		apicommon.LabelComponentKey: component,
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

func upstreamPodSpec() map[string]any {
	return map[string]any{"containers": []any{map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10",
		"resources": map[string]any{"requests": map[string]any{"cpu": "10m"}}}}}
}

// pclq writes a PodClique and its running pods; owner is the PodCliqueSet or scaling group.
func (w *upstreamWriter) pclq(name, clique string, owner client.Object, ownerKind string, replicas int64, extra map[string]any, node string) []types.UID {
	e := w.e
	component := apicommon.ComponentPCSPodClique
	if ownerKind == "PodCliqueScalingGroup" {
		component = apicommon.ComponentPCSGPodClique
	}
	labels := w.labels(component, extra)
	labels[apicommon.LabelAppNameKey] = name
	labels[apicommon.LabelPodCliqueSetReplicaIndex] = "0"
	labels[apicommon.LabelPodGang] = "up-0"
	labels[apicommon.LabelPodTemplateHash] = upstreamTemplateHash
	pclq := w.create(map[string]any{
		"apiVersion": "grove.io/v1alpha1", "kind": "PodClique",
		"metadata": map[string]any{"name": name, "namespace": e.ns, "labels": labels,
			"finalizers": []any{apicommon.FinalizerPodClique}, "ownerReferences": []any{ownerRef(owner, ownerKind)}},
		"spec": map[string]any{"roleName": clique, "replicas": replicas, "minAvailable": replicas, "podSpec": upstreamPodSpec()},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
			"scheduledReplicas": replicas, "scheduleGatedReplicas": int64(0), "currentPodTemplateHash": upstreamTemplateHash,
			"currentPodCliqueSetGenerationHash": upstreamGenerationHash,
			"hpaPodSelector":                    "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=up,grove.io/podclique=" + name},
	})
	var uids []types.UID
	for i := range int(replicas) {
		podLabels := map[string]string{}
		for k, v := range labels {
			podLabels[k] = v.(string)
		}
		podLabels[apicommon.LabelPodClique] = name
		podLabels[apicommon.LabelPodCliquePodIndex] = itoa(i)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: e.ns, Labels: podLabels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "grove.io/v1alpha1", Kind: "PodClique", Name: name,
					UID: pclq.GetUID(), Controller: ptrTrue(), BlockOwnerDeletion: ptrTrue()}}},
			Spec: corev1.PodSpec{
				Hostname: name + "-" + itoa(i), Subdomain: "up-0", SchedulerName: "grove-scheduler",
				Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
					Env: []corev1.EnvVar{{Name: apicommon.EnvPodCliqueSetName, Value: "up"}, {Name: apicommon.EnvPodCliqueSetIndex, Value: "0"},
						{Name: apicommon.EnvPodCliqueName, Value: name},
						{Name: apicommon.EnvHeadlessService, Value: "up-0." + e.ns + ".svc.cluster.local"}}}},
			},
		}
		require.NoError(e.t, e.c.Create(e.ctx, pod))
		e.bind(pod, node)
		uids = append(uids, pod.UID)
	}
	return uids
}

func itoa(i int) string { return string(rune('0' + i)) }
func ptrTrue() *bool    { v := true; return &v }

// TestTakeOverUpstreamNamespace: a namespace whose PodCliqueSet, scaling group, PodCliques,
// PodGang, Service and running pods upstream Grove wrote (with its template hashes) is adopted
// without deleting or restarting a pod: the pods are relabelled in place, the PodGang is updated
// in place, no rolling update starts, and scaling out afterwards works.
func TestTakeOverUpstreamNamespace(t *testing.T) {
	e := newNamespace(t)
	node := e.kwokNode()
	w := &upstreamWriter{e: e}
	started := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	ended := metav1.NewTime(started.Add(10 * time.Minute))
	spec := map[string]any{
		"replicas":       int64(1),
		"updateStrategy": map[string]any{"type": "RollingRecreate"},
		"template": map[string]any{
			"cliqueStartupType": "CliqueStartupTypeAnyOrder",
			"terminationDelay":  "4h0m0s",
			"cliques": []any{
				map[string]any{"name": "frontend", "spec": map[string]any{"roleName": "frontend", "replicas": int64(2), "minAvailable": int64(2), "podSpec": upstreamPodSpec()}},
				map[string]any{"name": "worker", "spec": map[string]any{"roleName": "worker", "replicas": int64(1), "minAvailable": int64(1), "podSpec": upstreamPodSpec()}},
			},
			"podCliqueScalingGroups": []any{map[string]any{"name": "workers", "cliqueNames": []any{"worker"}, "replicas": int64(1), "minAvailable": int64(1)}},
		},
	}
	w.pcs = w.create(map[string]any{
		"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueSet",
		"metadata": map[string]any{"name": "up", "namespace": e.ns, "finalizers": []any{apicommon.FinalizerPodCliqueSet}},
		"spec":     spec,
	})
	w.pcs.Object["status"] = map[string]any{
		"observedGeneration": w.pcs.GetGeneration(), "replicas": int64(1), "updatedReplicas": int64(1), "availableReplicas": int64(1),
		"hpaPodSelector": "app.kubernetes.io/managed-by=grove-operator,app.kubernetes.io/part-of=up", "currentGenerationHash": upstreamGenerationHash,
		"podGangStatuses": []any{map[string]any{"name": "up-0", "phase": "Running"}},
		// Upstream's shape: counts and a list of replicas.
		"updateProgress": map[string]any{"updateStartedAt": started.UTC().Format(time.RFC3339), "updateEndedAt": ended.UTC().Format(time.RFC3339),
			"updatedPodCliquesCount": int64(1), "totalPodCliquesCount": int64(1), "updatedPodCliqueScalingGroupsCount": int64(1),
			"totalPodCliqueScalingGroupsCount": int64(1),
			"currentlyUpdating": []any{map[string]any{"replicaIndex": int64(0), "updateStartedAt": started.UTC().Format(time.RFC3339),
				"updateEndedAt": ended.UTC().Format(time.RFC3339)}}},
	}
	require.NoError(t, e.c.Status().Update(e.ctx, w.pcs))

	pcsg := w.create(map[string]any{
		"apiVersion": "grove.io/v1alpha1", "kind": "PodCliqueScalingGroup",
		"metadata": map[string]any{"name": "up-0-workers", "namespace": e.ns, "finalizers": []any{apicommon.FinalizerPodCliqueScalingGroup},
			"labels": w.labels(apicommon.ComponentPodCliqueScalingGroup, map[string]any{apicommon.LabelAppNameKey: "up-0-workers",
				apicommon.LabelPodCliqueSetReplicaIndex: "0"}),
			"ownerReferences": []any{ownerRef(w.pcs, "PodCliqueSet")}},
		"spec": map[string]any{"replicas": int64(1), "minAvailable": int64(1), "cliqueNames": []any{"worker"}},
		"status": map[string]any{"observedGeneration": int64(1), "replicas": int64(1), "scheduledReplicas": int64(1), "availableReplicas": int64(1),
			"updatedReplicas": int64(1), "currentPodCliqueSetGenerationHash": upstreamGenerationHash},
	})
	uids := w.pclq("up-0-frontend", "frontend", w.pcs, "PodCliqueSet", 2, nil, node)
	uids = append(uids, w.pclq("up-0-workers-0-worker", "worker", pcsg, "PodCliqueScalingGroup", 1, map[string]any{
		apicommon.LabelPodCliqueScalingGroup: "up-0-workers", apicommon.LabelPodCliqueScalingGroupReplicaIndex: "0"}, node)...)

	var refs []any
	for _, p := range e.pods("up-0-frontend") {
		refs = append(refs, map[string]any{"namespace": e.ns, "name": p.Name})
	}
	workerRef := e.pods("up-0-workers-0-worker")[0].Name
	podGang := w.create(map[string]any{
		"apiVersion": "scheduler.grove.io/v1alpha1", "kind": "PodGang",
		"metadata": map[string]any{"name": "up-0", "namespace": e.ns, "labels": w.labels(apicommon.ComponentPodGang, nil),
			"ownerReferences": []any{ownerRef(w.pcs, "PodCliqueSet")}},
		"spec": map[string]any{"podgroups": []any{
			map[string]any{"name": "up-0-frontend", "podReferences": refs, "minReplicas": int64(2)},
			map[string]any{"name": "up-0-workers-0-worker", "podReferences": []any{map[string]any{"namespace": e.ns, "name": workerRef}}, "minReplicas": int64(1)},
		}},
		"status": map[string]any{"phase": "Running"},
	})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "up-0", Namespace: e.ns,
		Labels: map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "up",
			apicommon.LabelComponentKey: apicommon.ComponentHeadlessService, apicommon.LabelPodCliqueSetReplicaIndex: "0"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "grove.io/v1alpha1", Kind: "PodCliqueSet", Name: "up", UID: w.pcs.GetUID(),
			Controller: ptrTrue(), BlockOwnerDeletion: ptrTrue()}}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, PublishNotReadyAddresses: true,
			Selector: map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue, apicommon.LabelPartOfKey: "up",
				apicommon.LabelPodCliqueSetReplicaIndex: "0"}}}
	e.create(svc)
	e.eventually(func(c *assert.CollectT) {
		for _, p := range append(e.pods("up-0-frontend"), e.pods("up-0-workers-0-worker")...) {
			assert.True(c, isReady(&p), "%s runs before the take-over", p.Name)
		}
	})

	// grove-operator starts and takes over.
	e.startOperator()
	pcs := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "up"}, pcs))
	corev1alpha1.SetDefaultsPodCliqueSet(pcs)
	ourGeneration := hash.PodCliqueSetGeneration(&pcs.Spec.Template)
	e.eventually(func(c *assert.CollectT) {
		got := e.pcs(c, "up")
		assert.Equal(c, ourGeneration, ptrString(got.Status.CurrentGenerationHash))
		assert.EqualValues(c, 1, got.Status.UpdatedReplicas)
		assert.EqualValues(c, 1, got.Status.AvailableReplicas)
		for name, clique := range map[string]string{"up-0-frontend": "frontend", "up-0-workers-0-worker": "worker"} {
			pclq := e.pclq(c, name)
			assert.Equal(c, hash.PodTemplate(pcs.Spec.Template.Clique(clique), ""), pclq.Labels[apicommon.LabelPodTemplateHash])
			assert.Equal(c, pclq.Spec.Replicas, pclq.Status.UpdatedReplicas, "%s: every pod counts as current", name)
			assert.Equal(c, pclq.Spec.Replicas, pclq.Status.ReadyReplicas)
		}
		pg := e.podGang(c, "up-0")
		assert.Equal(c, podGang.GetUID(), pg.UID, "the PodGang is updated in place")
		assert.Equal(c, apicommon.BasePodGangName("up", 0), pg.Name)
	})
	// Settled: every pod the upstream operator started is still there, none was replaced.
	assertPods := func(want []types.UID) {
		t.Helper()
		var have []types.UID
		for _, p := range append(e.pods("up-0-frontend"), e.pods("up-0-workers-0-worker")...) {
			have = append(have, p.UID)
		}
		for _, u := range want {
			assert.Contains(t, have, u, "pod %s kept", u)
		}
	}
	assertPods(uids)
	got := e.pcs(t, "up")
	if assert.NotNil(t, got.Status.UpdateProgress) {
		assert.True(t, got.Status.UpdateProgress.UpdateStartedAt.Equal(&started), "no update started for the take-over")
	}
	assert.Zero(t, e.eventCount("UpdatePod"), "no pod deleted for an update")

	// Scaling out afterwards: a second worker replica (a scaled PodGang) and a third frontend pod.
	e.scale(&corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "up-0-workers"}}, 2)
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "up-0-frontend"}}, 3)
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, e.pods("up-0-frontend"), 3)
		assert.Len(c, e.pods("up-0-workers-1-worker"), 1)
		pg := e.podGang(c, "up-0")
		if assert.Len(c, pg.Spec.PodGroups, 2) {
			assert.Len(c, pg.Spec.PodGroups[0].PodReferences, 3)
		}
		e.podGang(c, "up-0-workers-0")
	})
	assertPods(uids)

	// Scaling in removes the new pods, not the adopted ones. (Nothing schedules pods here, so
	// the new, never bound scaling-group replica would also hold the update below back.)
	e.scale(&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "up-0-frontend"}}, 2)
	e.scale(&corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "up-0-workers"}}, 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Len(c, e.pods("up-0-frontend"), 2)
		assert.Empty(c, e.pods("up-0-workers-1-worker"))
	})
	assertPods(uids[:2])

	// An update afterwards replaces the worker's pod (its template changed), not the frontend's.
	current := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "up"}}
	e.update(current, func() {
		current.Spec.Template.Clique("worker").Spec.PodSpec.Containers[0].Image = "registry.k8s.io/pause:3.9"
	})
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKeyFromObject(current), current))
	corev1alpha1.SetDefaultsPodCliqueSet(current)
	newHash := hash.PodTemplate(current.Spec.Template.Clique("worker"), "")
	e.eventually(func(c *assert.CollectT) {
		workers := e.pods("up-0-workers-0-worker")
		if assert.Len(c, workers, 1) {
			assert.NotEqual(c, uids[2], workers[0].UID, "the adopted worker pod is replaced by the update")
			assert.Equal(c, newHash, workers[0].Labels[apicommon.LabelPodTemplateHash])
		}
	})
	assertPods(uids[:2])
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
