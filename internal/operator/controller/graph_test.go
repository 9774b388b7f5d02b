package controller_test

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// TestObjectGraphAndNames creates a PodCliqueSet with two replicas and a scaling group and
// checks every object it leads to, by exact name, and one pod in full.
func TestObjectGraphAndNames(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "disagg", 2))

	wantPCLQs := []string{}
	for i := range 2 {
		wantPCLQs = append(wantPCLQs, fmt.Sprintf("disagg-%d-router", i))
		for j := range 2 {
			wantPCLQs = append(wantPCLQs, fmt.Sprintf("disagg-%d-workers-%d-decode", i, j), fmt.Sprintf("disagg-%d-workers-%d-prefill", i, j))
		}
	}
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, []string{"disagg-0", "disagg-1"}, e.names(&corev1.ServiceList{}))
		assert.Contains(c, e.names(&corev1.ServiceAccountList{}), "disagg")
		assert.Equal(c, []string{"grove.io:pcs:disagg"}, e.names(&rbacv1.RoleList{}))
		assert.Equal(c, []string{"grove.io:pcs:disagg"}, e.names(&rbacv1.RoleBindingList{}))
		assert.ElementsMatch(c, wantPCLQs, e.names(&corev1alpha1.PodCliqueList{}))
		assert.Equal(c, []string{"disagg-0-workers", "disagg-1-workers"}, e.names(&corev1alpha1.PodCliqueScalingGroupList{}))
		assert.Equal(c, []string{"disagg-0", "disagg-0-workers-0", "disagg-1", "disagg-1-workers-0"}, e.names(&schedv1alpha1.PodGangList{}))
		// Per replica: router 1 + (prefill 2 + decode 1) x 2 group replicas.
		assert.Len(c, e.pods(""), 14)
	})

	t.Run("headless service", func(t *testing.T) {
		svc := &corev1.Service{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "disagg-1"}, svc))
		assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)
		assert.True(t, svc.Spec.PublishNotReadyAddresses, "defaulted from headlessServiceConfig")
		assert.Equal(t, map[string]string{apicommon.LabelManagedByKey: apicommon.LabelManagedByValue,
			apicommon.LabelPartOfKey: "disagg", apicommon.LabelPodCliqueSetReplicaIndex: "1"}, svc.Spec.Selector)
	})

	t.Run("rbac", func(t *testing.T) {
		role := &rbacv1.Role{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "grove.io:pcs:disagg"}, role))
		assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}, role.Rules)
		rb := &rbacv1.RoleBinding{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "grove.io:pcs:disagg"}, rb))
		assert.Equal(t, "grove.io:pcs:disagg", rb.RoleRef.Name)
		assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "disagg", Namespace: e.ns}}, rb.Subjects)
	})

	t.Run("owners and finalizers", func(t *testing.T) {
		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "disagg"}, pcs))
		assert.Contains(t, pcs.Finalizers, apicommon.FinalizerPodCliqueSet)
		member := &corev1alpha1.PodClique{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "disagg-0-workers-1-prefill"}, member))
		assert.Equal(t, "disagg-0-workers", metav1.GetControllerOf(member).Name)
		assert.Contains(t, member.Finalizers, apicommon.FinalizerPodClique)
		assert.EqualValues(t, 2, *member.Spec.MinAvailable, "minAvailable defaults to replicas without the webhook")
		pcsg := &corev1alpha1.PodCliqueScalingGroup{}
		require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "disagg-0-workers"}, pcsg))
		assert.Equal(t, "disagg", metav1.GetControllerOf(pcsg).Name)
		assert.Contains(t, pcsg.Finalizers, apicommon.FinalizerPodCliqueScalingGroup)
		assert.Equal(t, []string{"prefill", "decode"}, pcsg.Spec.CliqueNames)
	})

	t.Run("pod of a scaled gang", func(t *testing.T) {
		pods := e.pods("disagg-1-workers-1-prefill")
		require.Len(t, pods, 2)
		for idx, p := range pods {
			pclq := "disagg-1-workers-1-prefill"
			assert.Equal(t, pclq+"-", p.GenerateName)
			assert.Equal(t, fmt.Sprintf("%s-%d", pclq, idx), p.Spec.Hostname, "lowest free indices")
			assert.Equal(t, "disagg-1", p.Spec.Subdomain)
			assert.Equal(t, "grove-scheduler", p.Spec.SchedulerName, "set by the default backend")
			assert.Equal(t, pclq, metav1.GetControllerOf(&p).Name)
			for k, v := range map[string]string{
				apicommon.LabelManagedByKey:                      apicommon.LabelManagedByValue,
				apicommon.LabelPartOfKey:                         "disagg",
				apicommon.LabelPodCliqueSetReplicaIndex:          "1",
				apicommon.LabelPodClique:                         pclq,
				apicommon.LabelPodGang:                           "disagg-1-workers-0",
				apicommon.LabelBasePodGang:                       "disagg-1",
				apicommon.LabelPodCliquePodIndex:                 strconv.Itoa(idx),
				apicommon.LabelPodCliqueScalingGroup:             "disagg-1-workers",
				apicommon.LabelPodCliqueScalingGroupReplicaIndex: "1",
			} {
				assert.Equal(t, v, p.Labels[k], k)
			}
			assert.NotEmpty(t, p.Labels[apicommon.LabelPodTemplateHash])
			env := map[string]corev1.EnvVar{}
			for _, ev := range p.Spec.Containers[0].Env {
				env[ev.Name] = ev
			}
			for k, v := range map[string]string{
				apicommon.EnvPodCliqueSetName:                     "disagg",
				apicommon.EnvPodCliqueSetIndex:                    "1",
				apicommon.EnvPodCliqueName:                        pclq,
				apicommon.EnvHeadlessService:                      "disagg-1." + e.ns + ".svc.cluster.local",
				apicommon.EnvPodCliqueScalingGroupName:            "disagg-1-workers",
				apicommon.EnvPodCliqueScalingGroupIndex:           "1",
				apicommon.EnvPodCliqueScalingGroupTemplateNumPods: "3",
			} {
				assert.Equal(t, v, env[k].Value, k)
			}
			assert.Equal(t, "metadata.labels['grove.io/podclique-pod-index']", env[apicommon.EnvPodIndex].ValueFrom.FieldRef.FieldPath)
			// grove-scheduler (the default profile) holds it until the base gang is placed: no gate.
			assert.False(t, gated(&p), "grove-scheduler's pods are created without the gate")
		}
	})

	t.Run("standalone pod", func(t *testing.T) {
		e.eventually(func(c *assert.CollectT) {
			pods := e.pods("disagg-0-router")
			if assert.Len(c, pods, 1) {
				p := pods[0]
				assert.Equal(c, "disagg-0-router-0", p.Spec.Hostname)
				assert.Equal(c, "disagg-0", p.Labels[apicommon.LabelPodGang])
				assert.NotContains(c, p.Labels, apicommon.LabelBasePodGang)
				assert.False(c, gated(&p), "grove-scheduler's pods are created without the gate")
			}
		})
	})
}
