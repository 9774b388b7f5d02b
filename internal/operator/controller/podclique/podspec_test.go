package podclique

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/backend/kube"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func testPodCliqueSet() *corev1alpha1.PodCliqueSet {
	clique := func(name string, replicas int32) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{Replicas: replicas}}
	}
	return &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1alpha1.PodCliqueSetSpec{
		Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques:                      []*corev1alpha1.PodCliqueTemplateSpec{clique("router", 1), clique("prefill", 4), clique("decode", 2)},
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "w", CliqueNames: []string{"prefill", "decode"}}},
		}}}
}

func testPodClique(name string, labels map[string]string) *corev1alpha1.PodClique {
	l := map[string]string{apicommon.LabelPartOfKey: "p", apicommon.LabelManagedByKey: apicommon.LabelManagedByValue}
	for k, v := range labels {
		l[k] = v
	}
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: "u", Labels: l,
		Annotations: map[string]string{"note": "x"}}}
	pclq.Spec.PodSpec = corev1.PodSpec{
		SchedulingGates: []corev1.PodSchedulingGate{{Name: "other.io/gate"}},
		InitContainers:  []corev1.Container{{Name: "init"}},
		Containers: []corev1.Container{{Name: "main", Env: []corev1.EnvVar{
			{Name: "USER_VAR", Value: "kept"}, {Name: apicommon.EnvPodCliqueName, Value: "user value is replaced"},
		}}},
	}
	return pclq
}

func envOf(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			m[e.Name] = e.ValueFrom.FieldRef.FieldPath
		} else {
			m[e.Name] = e.Value
		}
	}
	return m
}

func TestBuildPod(t *testing.T) {
	cases := []struct {
		name         string
		pclq         *corev1alpha1.PodClique
		podIndex     int
		wantHostname string
		wantEnv      map[string]string
		absentEnv    []string
	}{
		{
			name:     "standalone clique",
			pclq:     testPodClique("p-1-router", map[string]string{apicommon.LabelPodCliqueSetReplicaIndex: "1", apicommon.LabelPodGang: "p-1"}),
			podIndex: 0, wantHostname: "p-1-router-0",
			wantEnv: map[string]string{
				apicommon.EnvPodCliqueSetName: "p", apicommon.EnvPodCliqueSetIndex: "1", apicommon.EnvPodCliqueName: "p-1-router",
				apicommon.EnvHeadlessService: "p-1.ns.svc.cluster.local", "USER_VAR": "kept",
				apicommon.EnvPodIndex: "metadata.labels['grove.io/podclique-pod-index']",
			},
			absentEnv: []string{apicommon.EnvPodCliqueScalingGroupName, apicommon.EnvPodCliqueScalingGroupIndex},
		},
		{
			name: "scaling-group member",
			pclq: testPodClique("p-0-w-2-prefill", map[string]string{apicommon.LabelPodCliqueSetReplicaIndex: "0", apicommon.LabelPodGang: "p-0-w-1",
				apicommon.LabelPodCliqueScalingGroup: "p-0-w", apicommon.LabelPodCliqueScalingGroupReplicaIndex: "2"}),
			podIndex: 3, wantHostname: "p-0-w-2-prefill-3",
			wantEnv: map[string]string{
				apicommon.EnvPodCliqueName: "p-0-w-2-prefill", apicommon.EnvPodCliqueScalingGroupName: "p-0-w",
				apicommon.EnvPodCliqueScalingGroupIndex: "2", apicommon.EnvPodCliqueScalingGroupTemplateNumPods: "6",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			place, err := placementOf(tc.pclq, testPodCliqueSet())
			require.NoError(t, err)
			pod := buildPod(tc.pclq, place, tc.podIndex, kube.New())
			assert.Equal(t, tc.pclq.Name+"-", pod.GenerateName)
			assert.Equal(t, tc.wantHostname, pod.Spec.Hostname)
			assert.Equal(t, "p-"+tc.pclq.Labels[apicommon.LabelPodCliqueSetReplicaIndex], pod.Spec.Subdomain)
			assert.Equal(t, "default-scheduler", pod.Spec.SchedulerName, "PreparePod of the backend ran")
			assert.Equal(t, []corev1.PodSchedulingGate{{Name: "other.io/gate"}, {Name: apicommon.SchedulingGatePodGangPendingCreation}}, pod.Spec.SchedulingGates)
			assert.Equal(t, tc.pclq.Name, pod.Labels[apicommon.LabelPodClique])
			assert.Equal(t, tc.pclq.Labels[apicommon.LabelPodGang], pod.Labels[apicommon.LabelPodGang])
			assert.Equal(t, map[string]string{"note": "x"}, pod.Annotations)
			assert.True(t, *pod.OwnerReferences[0].Controller)
			assert.Equal(t, "PodClique", pod.OwnerReferences[0].Kind)
			for _, c := range []corev1.Container{pod.Spec.Containers[0], pod.Spec.InitContainers[0]} {
				env := envOf(c)
				for k, v := range tc.wantEnv {
					if k == "USER_VAR" && c.Name == "init" {
						continue
					}
					assert.Equal(t, v, env[k], "%s in %s", k, c.Name)
				}
				for _, k := range tc.absentEnv {
					assert.NotContains(t, env, k)
				}
			}
			assert.Len(t, tc.pclq.Spec.PodSpec.Containers[0].Env, 2, "the PodClique's template is not modified")
		})
	}
}

func TestPlacementOfRejectsAMissingReplicaLabel(t *testing.T) {
	_, err := placementOf(testPodClique("p-0-a", nil), testPodCliqueSet())
	assert.ErrorContains(t, err, apicommon.LabelPodCliqueSetReplicaIndex)
}
