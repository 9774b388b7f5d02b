//go:build e2e

package scenarios

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/e2e/framework"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// dynamoMultiNodeGraph is a PodCliqueSet in the shape NVIDIA Dynamo's operator generates for a
// disaggregated graph with a multi-node decode component: a frontend, and per decode replica a
// leader and a worker clique in one scaling group (2 replicas, 1 required), workers started
// after their leader (Explicit ordering), RDMA workers that run privileged with host IPC and
// network, peers addressed through Grove's variables, and a deployment-level topology
// constraint in the legacy packDomain spelling. %[1]s is the name, %[2]s the ClusterTopology.
const dynamoMultiNodeGraph = `
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: "%[1]s"
  labels: {nvidia.com/dynamo-graph-deployment-name: "%[1]s"}
  annotations: {nvidia.com/dynamo-operator-origin-version: "0.8.0"}
spec:
  replicas: 1
  template:
    cliqueStartupType: CliqueStartupTypeExplicit
    terminationDelay: 15m
    headlessServiceConfig: {publishNotReadyAddresses: true}
    topologyConstraint: {topologyName: "%[2]s", packDomain: block}
    cliques:
    - name: frontend
      labels: {nvidia.com/dynamo-component-type: frontend}
      spec:
        roleName: frontend
        replicas: 1
        podSpec:
          containers:
          - name: main
            image: dynamo-runtime
            ports: [{name: http, containerPort: 8000}]
            resources: {requests: {cpu: "1"}}
    - name: decode-ldr
      labels: {nvidia.com/dynamo-component-type: worker}
      annotations: {nvidia.com/dynamo-sub-component-type: decode}
      spec:
        roleName: decode-ldr
        replicas: 1
        podSpec: &rdma
          hostIPC: true
          hostNetwork: true
          dnsPolicy: ClusterFirstWithHostNet
          containers:
          - name: main
            image: dynamo-runtime
            env:
            - {name: LEADER_HOST, value: "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-decode-ldr-0.$(GROVE_HEADLESS_SERVICE)"}
            - {name: NODE_RANK, value: "$((GROVE_PCLQ_POD_INDEX + 1))"}
            securityContext:
              privileged: true
              capabilities: {add: [IPC_LOCK, SYS_RESOURCE]}
            resources: {requests: {cpu: "1"}, limits: {rdma/ib: "1"}}
    - name: decode-wkr
      labels: {nvidia.com/dynamo-component-type: worker}
      annotations: {nvidia.com/dynamo-sub-component-type: decode}
      spec:
        roleName: decode-wkr
        replicas: 1
        startsAfter: [decode-ldr]
        podSpec: *rdma
    podCliqueScalingGroups:
    - {name: decode, cliqueNames: [decode-ldr, decode-wkr], replicas: 2, minAvailable: 1}
`

// A Dynamo-shaped multi-node graph with privileged RDMA workers, applied unchanged: admitted,
// placed whole in one block (the deployment-level constraint spans the scaled decode replica),
// the pods keep their privileged spec, the workers wait for their leader, and the leader
// hostname each worker computes from Grove's variables is the hostname of its group replica's
// leader pod under the replica's headless service.
func TestDynamoMultiNodePrivilegedGraphRuns(t *testing.T) {
	env, w := startEnv(t, framework.Options{})
	ctx := context.Background()
	_, err := env.CreateNodes(ctx, framework.Fabric{Zones: 1, BlocksPerZone: 2, RacksPerBlock: 2, HostsPerRack: 2},
		map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "8Gi", "rdma/ib": "2"})
	require.NoError(t, err)
	fabricTopology(t, env, "fabric")
	ns := env.Cluster.TestNamespace(t)

	const name = "llm"
	p := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(dynamoMultiNodeGraph, name, "fabric")), p))
	p.Namespace = ns
	require.NoError(t, env.Client.Create(ctx, p), "Dynamo's privileged multi-node graph is admitted")

	pods := waitPods(t, env, ns, name, 5, func(p corev1.Pod) bool { return p.Spec.NodeName != "" })
	blocks := labelsOfBoundPods(env, pods, framework.BlockKey)
	assert.Len(t, blocks, 1, "the replica's gangs share one block: %v", blocks)

	env0 := func(pod corev1.Pod, key string) string {
		for _, e := range pod.Spec.Containers[0].Env {
			if e.Name == key {
				return e.Value
			}
		}
		return ""
	}
	hostnames := map[string]bool{}
	for _, pod := range pods {
		hostnames[pod.Spec.Hostname+"."+pod.Spec.Subdomain] = true
	}
	workers := 0
	for _, pod := range pods {
		clique := pod.Labels[common.LabelPodClique]
		if strings.HasSuffix(clique, "-frontend") {
			continue
		}
		c := pod.Spec.Containers[0]
		require.NotNil(t, c.SecurityContext, pod.Name)
		assert.True(t, *c.SecurityContext.Privileged, pod.Name)
		assert.True(t, pod.Spec.HostIPC && pod.Spec.HostNetwork, pod.Name)
		assert.Equal(t, "1", c.Resources.Limits.Name("rdma/ib", "").String(), pod.Name)
		// Dynamo's leader address, resolved as the kubelet would from Grove's variables.
		group, index, service := env0(pod, common.EnvPodCliqueScalingGroupName), env0(pod, common.EnvPodCliqueScalingGroupIndex), env0(pod, common.EnvHeadlessService)
		require.NotEmpty(t, group, pod.Name)
		leader := fmt.Sprintf("%s-%s-decode-ldr-0", group, index)
		assert.Equal(t, common.HeadlessServiceAddress(name, 0, ns), service, pod.Name)
		assert.True(t, hostnames[leader+"."+common.HeadlessServiceName(name, 0)], "%s: leader %s is no pod's hostname (have %v)", pod.Name, leader, hostnames)
		if strings.HasSuffix(clique, "-decode-wkr") {
			workers++
			assert.NotEmpty(t, pod.Spec.InitContainers, "%s: a worker waits for its leader (Explicit startup)", pod.Name)
		}
	}
	assert.Equal(t, 2, workers)

	svc := &corev1.Service{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: common.HeadlessServiceName(name, 0)}, svc))
	assert.True(t, svc.Spec.PublishNotReadyAddresses)
	assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP)

	require.Eventually(t, func() bool {
		got := &corev1alpha1.PodCliqueSet{}
		if env.Client.Get(ctx, client.ObjectKeyFromObject(p), got) != nil {
			return false
		}
		return got.Status.ObservedGeneration != nil && *got.Status.ObservedGeneration == got.Generation && got.Status.AvailableReplicas == 1
	}, 2*time.Minute, 250*time.Millisecond, "the status Dynamo reads: observedGeneration current, one available replica")
	w.assertNoPartialGang()
}
