package webhook_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// PodCliqueSets in the shapes upstream Grove's samples and e2e manifests and NVIDIA Dynamo
// write (our own objects, not copies): no defaults filled in, per-clique schedulerName,
// the KAI queue on the cliques, a topology named only at the PodCliqueSet level.
// %[1]s is the name, %[2]s the scheduler name, %[3]s the ClusterTopology.
var upstreamSamples = map[string]string{
	"frontend and two scaling groups": `
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: "%[1]s"}
spec:
  replicas: 1
  template:
    cliques:
    - name: frontend
      spec:
        replicas: 2
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: frontend, image: nginx, resources: {requests: {cpu: 10m}}}]
    - name: pleader
      spec:
        roleName: pleader
        replicas: 1
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: pleader, image: nginx}]
    - name: pworker
      spec:
        roleName: pworker
        replicas: 3
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: pworker, image: nginx}]
    - name: dleader
      spec:
        roleName: dleader
        replicas: 1
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: dleader, image: nginx}]
    - name: dworker
      spec:
        roleName: dworker
        replicas: 2
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: dworker, image: nginx}]
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [pleader, pworker], replicas: 2}
    - {name: decode, cliqueNames: [dleader, dworker], replicas: 1}
`,
	"dynamo disaggregated graph": `
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: "%[1]s"
  labels: {nvidia.com/dynamo-graph-deployment-name: llm, kai.scheduler/node-pool: pool-a}
  annotations: {nvidia.com/dynamo-operator-origin-version: "0.7.0"}
spec:
  replicas: 1
  template:
    cliqueStartupType: CliqueStartupTypeExplicit
    terminationDelay: 15m
    headlessServiceConfig: {publishNotReadyAddresses: true}
    cliques:
    - name: frontend
      labels: {kai.scheduler/queue: dynamo, nvidia.com/dynamo-component-type: frontend}
      spec:
        roleName: frontend
        replicas: 1
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: main, image: dynamo-runtime, ports: [{name: http, containerPort: 8000}]}]
    - name: prefill-ldr
      labels: {kai.scheduler/queue: dynamo}
      annotations: {nvidia.com/dynamo-sub-component-type: prefill}
      spec:
        roleName: prefill-ldr
        replicas: 1
        minAvailable: 1
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: main, image: dynamo-runtime}]
    - name: prefill-wkr
      labels: {kai.scheduler/queue: dynamo}
      spec:
        roleName: prefill-wkr
        replicas: 3
        startsAfter: [prefill-ldr]
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: main, image: dynamo-runtime}]
    podCliqueScalingGroups:
    - {name: prefill, cliqueNames: [prefill-ldr, prefill-wkr], replicas: 1, minAvailable: 1}
`,
	"topology named only at the PodCliqueSet": `
apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: "%[1]s"}
spec:
  replicas: 1
  template:
    topologyConstraint: {topologyName: "%[3]s"}
    cliques:
    - name: leader
      spec:
        replicas: 1
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: main, image: nginx}]
    - name: worker
      topologyConstraint: {packDomain: host}
      spec:
        replicas: 2
        podSpec:
          schedulerName: "%[2]s"
          containers: [{name: main, image: nginx}]
    podCliqueScalingGroups:
    - name: model
      cliqueNames: [leader, worker]
      replicas: 2
      topologyConstraint: {packDomain: rack}
`,
}

// TestUpstreamShapedPodCliqueSetsAreAdmitted sends upstream- and Dynamo-shaped PodCliqueSets
// through the real apiserver and webhooks for each scheduler profile: admitted where the
// backend can honour them, rejected with the field path where it cannot.
func TestUpstreamShapedPodCliqueSetsAreAdmitted(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "upstream-" + ns},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{
			{Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
	require.NoError(t, e.client.Create(ctx, ct))
	t.Cleanup(func() { _ = e.client.Delete(context.Background(), ct) })

	// rejected maps sample/scheduler to the field paths of its rejection; others are admitted.
	rejected := map[string][]string{
		// default-scheduler without a served Workload API honours no topology constraint.
		"topology named only at the PodCliqueSet/default-scheduler": {
			"spec.template.podCliqueScalingGroups[0].topologyConstraint.packDomain",
			"spec.template.cliques[1].topologyConstraint.packDomain",
		},
		// volcano has one networkTopology per PodGang: a scaling group's rack and a clique's
		// host inside a base PodGang that requires nothing cannot be expressed.
		"topology named only at the PodCliqueSet/volcano": {
			"spec.template.podCliqueScalingGroups[0].topologyConstraint.packDomain",
			"spec.template.cliques[1].topologyConstraint.packDomain",
		},
	}
	i := 0
	for sample, manifest := range upstreamSamples {
		for _, scheduler := range []string{"grove-scheduler", "kai-scheduler", "volcano", "default-scheduler"} {
			i++
			name := fmt.Sprintf("upstream-%d", i)
			t.Run(sample+"/"+scheduler, func(t *testing.T) {
				u := &unstructured.Unstructured{}
				require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(manifest, name, scheduler, ct.Name)), &u.Object))
				u.SetNamespace(ns)
				// Strict: a field the CRD does not know (a misspelt sample) fails here instead
				// of being pruned silently.
				err := e.client.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict))
				if paths, ok := rejected[sample+"/"+scheduler]; ok {
					requireInvalid(t, err, paths...)
					return
				}
				require.NoError(t, err)
			})
		}
	}
}

// TestKAIQueueConflictsAreRejectedWithTheirPath: cliques that name different KAI queues, or
// a clique that differs from the PodCliqueSet's queue annotation, are rejected at admission.
func TestKAIQueueConflictsAreRejectedWithTheirPath(t *testing.T) {
	e := sharedEnv(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	manifest := strings.ReplaceAll(upstreamSamples["dynamo disaggregated graph"],
		"- name: prefill-wkr\n      labels: {kai.scheduler/queue: dynamo}", "- name: prefill-wkr\n      labels: {kai.scheduler/queue: other}")
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(manifest, "queues", "kai-scheduler", "")), &u.Object))
	u.SetNamespace(ns)
	requireInvalid(t, e.client.Create(ctx, u), "spec.template.cliques[2].labels[kai.scheduler/queue]")

	u = &unstructured.Unstructured{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(fmt.Sprintf(upstreamSamples["dynamo disaggregated graph"], "queues-pcs", "kai-scheduler", "")), &u.Object))
	u.SetNamespace(ns)
	u.SetAnnotations(map[string]string{"kai.scheduler/queue": "team-a"})
	requireInvalid(t, e.client.Create(ctx, u),
		"spec.template.cliques[0].labels[kai.scheduler/queue]", "spec.template.cliques[1].labels[kai.scheduler/queue]", "spec.template.cliques[2].labels[kai.scheduler/queue]")
}
