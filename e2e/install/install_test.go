//go:build e2einstall

package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/charts"
	"github.com/ai-dynamo/grove/internal/testenv/realnode"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// workloadNS holds the test's PodCliqueSets.
const workloadNS = "workloads"

// TestInstallLifecycle installs version N with the chart, runs workloads through it on the
// real node and on kwok nodes, upgrades to N+1 under them and uninstalls as the README says.
// Each step needs the previous one; a failed step ends the test.
func TestInstallLifecycle(t *testing.T) {
	e := suite
	ctx := context.Background()
	require.NoError(t, e.c.CreateNamespace(ctx, workloadNS))
	// Everything that exists before the install must be all that exists after the uninstall.
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := e.cs.CoreV1().ConfigMaps(workloadNS).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	}))
	before := e.snapshot(t)

	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"install", e.testInstall},
		{"startup-order-on-real-node", e.testStartupOrder},
		{"gang-on-kwok-nodes", e.testGang},
		{"upgrade", e.testUpgrade},
		{"node-failure-on-real-nodes", e.testNodeFailure},
		{"uninstall", func(t *testing.T) { e.testUninstall(t, before) }},
	}
	for _, s := range steps {
		start := time.Now()
		ok := t.Run(s.name, s.run)
		t.Logf("%s took %s", s.name, time.Since(start).Round(time.Second))
		if !ok {
			return
		}
	}
}

// values install version v with both programs on the real node (kube-scheduler places them;
// kwok nodes run no containers) and small requests, so the node keeps room for workloads.
func (e *env) values(v string) map[string]any {
	node := map[string]any{corev1.LabelHostname: nodeName}
	small := map[string]any{"requests": map[string]any{"cpu": "50m", "memory": "64Mi"}}
	return map[string]any{
		// A node lost in testNodeFailure is acted on soon after it turns Unknown.
		"config":        map[string]any{"nodeFailure": map[string]any{"grace": nodeFailureGrace.String()}},
		"imageRegistry": registry,
		"image":         map[string]any{"tag": v, "pullPolicy": "IfNotPresent"},
		"nodeSelector":  node,
		"resources":     small,
		"scheduler": map[string]any{
			"image":        map[string]any{"tag": v, "pullPolicy": "IfNotPresent"},
			"nodeSelector": node,
			"resources":    small,
		},
	}
}

func (e *env) testInstall(t *testing.T) {
	ctx := context.Background()
	ch, err := loader.LoadDir(e.chartDir)
	require.NoError(t, err)
	install := action.NewInstall(e.helm(t))
	install.ReleaseName, install.Namespace, install.CreateNamespace = release, namespace, true
	install.WaitStrategy, install.Timeout = waitStrategy, 4*time.Minute
	_, err = install.RunWithContext(ctx, ch, e.values(e.versions[0]))
	require.NoError(t, err, "helm install\n%s", e.node.LogTail(20))

	e.requireProgramsRunning(t, e.versions[0])
	e.requireWebhookRefusesInvalid(t)
	e.requireOperatorRBACIsTheTable(t)
}

// requireOperatorRBACIsTheTable checks the RBAC the chart installed for grove-operator against
// the table of docs/operations/security.md (charts.OperatorPermissions): every verb granted is
// listed, every listed verb (of the enabled backends: none optional here) is granted, and the
// apiserver refuses the operator Secrets outside its namespace.
func (e *env) requireOperatorRBACIsTheTable(t *testing.T) {
	ctx := context.Background()
	var objs []*unstructured.Unstructured
	for _, l := range []client.ObjectList{&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}} {
		objs = append(objs, e.listUnstructured(t, l)...)
	}
	for _, l := range []client.ObjectList{&rbacv1.RoleList{}, &rbacv1.RoleBindingList{}} {
		objs = append(objs, e.listUnstructured(t, l, client.InNamespace(namespace))...)
	}
	got, err := charts.OperatorGrants(objs, "grove-operator", namespace)
	require.NoError(t, err)
	want := charts.TableGrants([]string{})
	for g := range got {
		assert.True(t, want[g], "installed but not in the table: %s", g)
	}
	for g := range want {
		assert.True(t, got[g], "in the table but not installed: %s", g)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + namespace + ":grove-operator",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "secrets"}}}
	require.NoError(t, e.cl.Create(ctx, sar))
	assert.False(t, sar.Status.Allowed, "grove-operator may list Secrets cluster-wide")
}

// listUnstructured lists objects and returns them with their kind set.
func (e *env) listUnstructured(t *testing.T, list client.ObjectList, opts ...client.ListOption) []*unstructured.Unstructured {
	require.NoError(t, e.cl.List(context.Background(), list, opts...))
	items, err := meta.ExtractList(list)
	require.NoError(t, err)
	gvk, err := apiutil.GVKForObject(list, e.cl.Scheme())
	require.NoError(t, err)
	kind := strings.TrimSuffix(gvk.Kind, "List")
	out := make([]*unstructured.Unstructured, 0, len(items))
	for _, it := range items {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(it)
		require.NoError(t, err)
		u := &unstructured.Unstructured{Object: m}
		u.SetKind(kind)
		out = append(out, u)
	}
	return out
}

// requireWebhookRefusesInvalid checks that the webhooks are served through the Service with
// the certificate the operator issued: the CA bundle is injected, and an invalid PodCliqueSet
// is refused by the validating webhook.
func (e *env) requireWebhookRefusesInvalid(t *testing.T) {
	ctx := context.Background()
	vwc, err := e.cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, vwc.Items)
	for _, w := range vwc.Items {
		for _, h := range w.Webhooks {
			require.NotEmpty(t, h.ClientConfig.CABundle, "webhook %s of %s has no CA bundle", h.Name, w.Name)
			require.NotNil(t, h.ClientConfig.Service, "webhook %s is not served through a Service", h.Name)
		}
	}
	bad := pcs("bad", 1, clique("a", 1, "10m", false), clique("b", 1, "10m", false))
	bad.Spec.Template.Cliques[1].Spec.RoleName = "a" // two cliques of one role
	err = e.cl.Create(ctx, bad)
	require.Error(t, err)
	require.Contains(t, err.Error(), "denied the request", "the refusal must come from grove-operator's webhook")
}

// requireProgramsRunning checks that every pod of both Deployments runs version v on the real
// node as its ServiceAccount and is Ready, and that each program holds its leader lease.
func (e *env) requireProgramsRunning(t *testing.T, v string) {
	ctx := context.Background()
	for _, p := range []struct{ name, image, lease string }{
		{"grove-operator", registry + "/grove-operator:" + v, "grove-operator-leader-election"},
		{"grove-scheduler", registry + "/grove-scheduler:" + v, "grove-scheduler"},
	} {
		var pods []corev1.Pod
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			var dep appsv1.Deployment
			if err := e.cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.name}, &dep); err != nil {
				return false, nil
			}
			var list corev1.PodList
			if err := e.cl.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{"app.kubernetes.io/name": p.name}); err != nil {
				return false, nil
			}
			pods = list.Items
			if int32(len(pods)) != *dep.Spec.Replicas {
				return false, nil
			}
			for _, pod := range pods {
				if pod.DeletionTimestamp != nil || pod.Spec.Containers[0].Image != p.image || !ready(&pod) {
					return false, nil
				}
			}
			return true, nil
		}), "%s: pods %s", p.name, podSummary(pods))
		for _, pod := range pods {
			assert.Equal(t, nodeName, pod.Spec.NodeName, "%s runs on the real node", pod.Name)
			assert.Equal(t, p.name, pod.Spec.ServiceAccountName)
			if pod.Status.ContainerStatuses[0].RestartCount > 0 {
				t.Errorf("%s restarted; the end of the previous container's log:\n%s", pod.Name, e.previousLog(ctx, &pod))
			}
		}
		// Leader election: one of these pods holds the lease.
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			var lease coordinationv1.Lease
			if err := e.cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.lease}, &lease); err != nil || lease.Spec.HolderIdentity == nil {
				return false, nil
			}
			return slices.ContainsFunc(pods, func(pod corev1.Pod) bool { return strings.HasPrefix(*lease.Spec.HolderIdentity, pod.Name) }), nil
		}), "%s: no pod of version %s holds lease %s", p.name, v, p.lease)
	}
}

func (e *env) testStartupOrder(t *testing.T) {
	ctx := context.Background()
	p := pcs("ordered", 1, clique("first", 1, "10m", true), clique("second", 1, "10m", true), clique("third", 1, "10m", true))
	p.Spec.Template.StartupType = ptr.To(corev1alpha1.CliqueStartupTypeInOrder)
	require.NoError(t, e.cl.Create(ctx, p))

	byClique := map[string]corev1.Pod{}
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := e.cl.List(ctx, &list, client.InNamespace(workloadNS), client.MatchingLabels{common.LabelPartOfKey: "ordered"}); err != nil {
			return false, nil
		}
		byClique = map[string]corev1.Pod{}
		for _, pod := range list.Items {
			byClique[cliqueOf(&pod)] = pod
		}
		for _, c := range []string{"first", "second", "third"} {
			if pod, ok := byClique[c]; !ok || !ready(&pod) {
				return false, nil
			}
		}
		return true, nil
	}), "pods: %v", summaries(byClique))

	// The cliques became Ready in order, each after the previous one: the waiter of every
	// later clique ran (and exited 0) on the real node and finished no earlier than the
	// previous clique became Ready, and the main container started only after it.
	order := []string{"first", "second", "third"}
	for i, c := range order {
		pod := byClique[c]
		assert.Equal(t, nodeName, pod.Spec.NodeName)
		waiter := initStatus(&pod, common.StartupWaiterContainerName)
		if i == 0 {
			assert.Nil(t, waiter, "the first clique waits for nobody")
			continue
		}
		require.NotNil(t, waiter, "%s has no startup waiter", pod.Name)
		require.NotNil(t, waiter.State.Terminated, "%s: the waiter did not run to completion", pod.Name)
		assert.Zero(t, waiter.State.Terminated.ExitCode)
		prev := byClique[order[i-1]]
		prevReady := readyTime(&prev)
		assert.False(t, waiter.State.Terminated.FinishedAt.Time.Before(prevReady),
			"%s's waiter finished at %s, before %s was Ready at %s", pod.Name, waiter.State.Terminated.FinishedAt, prev.Name, prevReady)
		main := pod.Status.ContainerStatuses[0]
		require.NotNil(t, main.State.Running)
		assert.False(t, main.State.Running.StartedAt.Time.Before(prevReady), "%s started before %s was Ready", pod.Name, prev.Name)
		assert.True(t, readyTime(&pod).After(prevReady), "%s Ready at %s, not after %s at %s", pod.Name, readyTime(&pod), prev.Name, prevReady)
	}
}

func (e *env) testGang(t *testing.T) {
	ctx := context.Background()
	// Four pods of 3 CPUs on four 4-CPU kwok nodes: the gang fits only one pod per node.
	require.NoError(t, e.cl.Create(ctx, pcs("gang", 1, withMin(clique("worker", kwokNodes, "3", false), kwokNodes))))
	pods := e.waitBound(t, "gang", kwokNodes)
	nodes := map[string]bool{}
	for _, pod := range pods {
		assert.Equal(t, "grove-scheduler", pod.Spec.SchedulerName)
		assert.True(t, strings.HasPrefix(pod.Spec.NodeName, "kwok-"), "%s on %s", pod.Name, pod.Spec.NodeName)
		nodes[pod.Spec.NodeName] = true
	}
	assert.Len(t, nodes, kwokNodes, "one pod per node")
	var gangs schedv1alpha1.PodGangList
	require.NoError(t, e.cl.List(ctx, &gangs, client.InNamespace(workloadNS), client.MatchingLabels{common.LabelPartOfKey: "gang"}))
	require.Len(t, gangs.Items, 1)

	// A second gang of two 3-CPU pods finds one free CPU per node: grove-scheduler finds it
	// unschedulable and binds neither pod, not one of the two.
	require.NoError(t, e.cl.Create(ctx, pcs("too-big", 1, withMin(clique("worker", 2, "3", false), 2))))
	var pending []corev1.Pod
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := e.cl.List(ctx, &list, client.InNamespace(workloadNS), client.MatchingLabels{common.LabelPartOfKey: "too-big"}); err != nil {
			return false, nil
		}
		pending = list.Items
		return len(pending) == 2 && slices.ContainsFunc(pending, unschedulable), nil
	}), "too-big: pods %s", podSummary(pending))
	for _, p := range pending {
		assert.Empty(t, p.Spec.NodeName, "%s of a gang that does not fit was bound", p.Name)
	}
}

func unschedulable(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// waitBound waits until the PodCliqueSet has n pods, all bound.
func (e *env) waitBound(t *testing.T, name string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	require.NoError(t, wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list corev1.PodList
		if err := e.cl.List(ctx, &list, client.InNamespace(workloadNS), client.MatchingLabels{common.LabelPartOfKey: name}); err != nil {
			return false, nil
		}
		pods = list.Items
		if len(pods) != n {
			return false, nil
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	}), "%s: pods %s", name, podSummary(pods))
	return pods
}

func (e *env) testUpgrade(t *testing.T) {
	ctx := context.Background()
	var before corev1.PodList
	require.NoError(t, e.cl.List(ctx, &before, client.InNamespace(workloadNS)))
	require.NotEmpty(t, before.Items)

	// Version N+1: the same chart with the new appVersion (a changed label on every object,
	// the CRDs included) and the images built as N+1.
	next := e.versions[1]
	dir := copyChart(t, e.chartDir, next)
	ch, err := loader.LoadDir(dir)
	require.NoError(t, err)
	upgrade := action.NewUpgrade(e.helm(t))
	upgrade.Namespace, upgrade.WaitStrategy, upgrade.Timeout = namespace, waitStrategy, 4*time.Minute
	_, err = upgrade.RunWithContext(ctx, release, ch, e.values(next))
	require.NoError(t, err, "helm upgrade")

	e.requireProgramsRunning(t, next)
	var crds apiextensionsv1.CustomResourceDefinitionList
	require.NoError(t, e.cl.List(ctx, &crds, client.MatchingLabels{"app.kubernetes.io/part-of": "grove"}))
	require.NotEmpty(t, crds.Items)
	for _, crd := range crds.Items {
		assert.Equal(t, next, crd.Labels["app.kubernetes.io/version"], "CRD %s was not upgraded", crd.Name)
	}
	var cm corev1.ConfigMap
	require.NoError(t, e.cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "grove-operator-config"}, &cm))
	assert.Contains(t, cm.Data["operator-config.yaml"], registry+"/grove-operator:"+next, "the startup waiter follows the operator's version")

	// No workload pod was replaced or restarted.
	var after corev1.PodList
	require.NoError(t, e.cl.List(ctx, &after, client.InNamespace(workloadNS)))
	uids := func(l corev1.PodList) map[string]string {
		m := map[string]string{}
		for _, p := range l.Items {
			restarts := int32(0)
			for _, s := range p.Status.ContainerStatuses {
				restarts += s.RestartCount
			}
			m[p.Name] = fmt.Sprintf("%s restarts=%d", p.UID, restarts)
		}
		return m
	}
	assert.Equal(t, uids(before), uids(after), "workload pods changed across the upgrade")

	// The new operator reconciles: a PodCliqueSet created now gets its pods, placed whole.
	require.NoError(t, e.cl.Create(ctx, pcs("after-upgrade", 1, withMin(clique("w", 2, "500m", false), 2))))
	e.waitBound(t, "after-upgrade", 2)
}

// copyChart copies the chart with version and appVersion set to v.
func copyChart(t *testing.T, src, v string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "grove")
	require.NoError(t, os.CopyFS(dst, os.DirFS(src)))
	path := filepath.Join(dst, "Chart.yaml")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	meta := map[string]any{}
	require.NoError(t, yaml.Unmarshal(data, &meta))
	meta["version"], meta["appVersion"] = strings.TrimPrefix(v, "v"), v
	out, err := yaml.Marshal(meta)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o644))
	return dst
}

// testUninstall runs the README's uninstall: workloads first (grove-operator still removes
// their finalizers), then the release, the CRDs and the namespace. Each step must finish on
// its own, and afterwards the cluster holds exactly what it held before the install.
func (e *env) testUninstall(t *testing.T, before map[string]bool) {
	ctx := context.Background()
	step := time.Now()
	logStep := func(what string) {
		t.Logf("%s took %s", what, time.Since(step).Round(100*time.Millisecond))
		step = time.Now()
	}
	for _, list := range []client.ObjectList{&corev1alpha1.PodCliqueSetList{}, &corev1alpha1.ClusterTopologyList{}} {
		require.NoError(t, e.deleteAllAndWait(ctx, list))
		logStep(fmt.Sprintf("deleting %T", list))
	}
	uninstall := action.NewUninstall(e.helm(t))
	// As `helm uninstall` without --wait: Helm 4's watcher never sees cluster-scoped objects
	// that were deleted before its namespaced watch started, and waits out its timeout. The
	// namespace deletion below waits for the programs' pods instead.
	uninstall.WaitStrategy, uninstall.Timeout = kube.HookOnlyStrategy, 3*time.Minute
	_, err := uninstall.Run(release)
	require.NoError(t, err, "helm uninstall")
	logStep("helm uninstall")
	require.NoError(t, e.cl.DeleteAllOf(ctx, &apiextensionsv1.CustomResourceDefinition{}, client.MatchingLabels{"app.kubernetes.io/part-of": "grove"}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var crds apiextensionsv1.CustomResourceDefinitionList
		err := e.cl.List(ctx, &crds, client.MatchingLabels{"app.kubernetes.io/part-of": "grove"})
		return err == nil && len(crds.Items) == 0, nil
	}), "the CRDs were not deleted")
	logStep("deleting the CRDs")
	require.NoError(t, e.cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := e.cl.Get(ctx, client.ObjectKey{Name: namespace}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), nil
	}), "namespace %s was not deleted", namespace)
	logStep("deleting the namespace")
	e.requireNothingLeft(t, before)
}

// requireNothingLeft waits until the cluster holds exactly the objects of before.
func (e *env) requireNothingLeft(t *testing.T, before map[string]bool) {
	ctx := context.Background()
	var left []string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		left = nil
		for k := range e.snapshot(t) {
			if !before[k] {
				left = append(left, k)
			}
		}
		return len(left) == 0, nil
	}), "left behind after the uninstall: %v", left)
}

func (e *env) deleteAllAndWait(ctx context.Context, list client.ObjectList) error {
	if err := e.cl.List(ctx, list); err != nil {
		return err
	}
	items, err := metaItems(list)
	if err != nil {
		return err
	}
	for _, o := range items {
		if err := e.cl.Delete(ctx, o); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.cl.List(ctx, list); err != nil {
			return false, nil
		}
		items, err := metaItems(list)
		return err == nil && len(items) == 0, nil
	})
}

// snapshot names every object the apiserver serves (group/resource namespace/name), except
// what the control plane itself churns: events, node heartbeats, the apiserver's leases.
func (e *env) snapshot(t *testing.T) map[string]bool {
	t.Helper()
	lists, err := e.cs.Discovery().ServerPreferredResources()
	require.NoError(t, err)
	out := map[string]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		require.NoError(t, err)
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") || r.Name == "events" {
				continue
			}
			objs, err := e.dyn.Resource(gv.WithResource(r.Name)).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				continue // a CRD that went away between discovery and the list
			}
			for _, o := range objs.Items {
				if r.Name == "leases" && (o.GetNamespace() == corev1.NamespaceNodeLease || o.GetNamespace() == metav1.NamespaceSystem) {
					continue
				}
				out[fmt.Sprintf("%s.%s %s/%s", r.Name, gv.Group, o.GetNamespace(), o.GetName())] = true
			}
		}
	}
	return out
}

func pcs(name string, replicas int32, cliques ...*corev1alpha1.PodCliqueTemplateSpec) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: workloadNS, Name: name},
		Spec:       corev1alpha1.PodCliqueSetSpec{Replicas: replicas, Template: corev1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques}},
	}
}

// clique is one replica set of pods: on the real node a busybox that turns Ready two seconds
// after it starts (so Ready times of consecutive cliques differ); on kwok nodes a pod kwok
// pretends to run.
func clique(name string, replicas int32, cpu string, realNode bool) *corev1alpha1.PodCliqueTemplateSpec {
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To[int64](1),
		Containers: []corev1.Container{{
			Name: "main", Image: realnode.BusyboxImage, ImagePullPolicy: corev1.PullNever,
			Command:   []string{"/bin/sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}},
		NodeSelector: map[string]string{"type": "kwok"},
	}
	if realNode {
		spec.NodeSelector = map[string]string{corev1.LabelHostname: nodeName}
		spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/busybox", "true"}}},
			InitialDelaySeconds: 2, PeriodSeconds: 1,
		}
	}
	return &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: spec}}
}

func withMin(c *corev1alpha1.PodCliqueTemplateSpec, n int32) *corev1alpha1.PodCliqueTemplateSpec {
	c.Spec.MinAvailable = ptr.To(n)
	return c
}

func cliqueOf(p *corev1.Pod) string {
	// Pod cliques are named <pcs>-<replica>-<clique>.
	pc := p.Labels[common.LabelPodClique]
	return pc[strings.LastIndex(pc, "-")+1:]
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readyTime(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func initStatus(p *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

func podSummary(pods []corev1.Pod) string {
	var s []string
	for _, p := range pods {
		s = append(s, fmt.Sprintf("%s node=%q phase=%s ready=%t", p.Name, p.Spec.NodeName, p.Status.Phase, ready(&p)))
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

func summaries(m map[string]corev1.Pod) string {
	var pods []corev1.Pod
	for _, p := range m {
		pods = append(pods, p)
	}
	return podSummary(pods)
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	objs, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(objs))
	for _, o := range objs {
		co, ok := o.(client.Object)
		if !ok {
			return nil, fmt.Errorf("%T is not an object", o)
		}
		out = append(out, co)
	}
	return out, nil
}

// previousLog is the end of the log of the pod's previous (restarted) container.
func (e *env) previousLog(ctx context.Context, pod *corev1.Pod) string {
	out, err := e.cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Previous: true, TailLines: ptr.To[int64](40)}).DoRaw(ctx)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return string(out)
}
