package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
)

// Kwok node annotation: kwok manages (heartbeats, runs pods on) nodes that carry it.
const (
	KwokNodeAnnotation      = "kwok.x-k8s.io/node"
	KwokNodeAnnotationValue = "fake"
	// KwokTaintKey keeps ordinary pods off simulated nodes unless they tolerate it; fake
	// nodes made by FakeNode do not carry it, so any pod may land there.
	KwokTaintKey = "kwok.x-k8s.io/node"
	// KwokFailContainerAnnotation on a running, ready pod makes kwok report the container it
	// names as exited with code 1 and the pod as not ready (the pod stays Running and bound), as
	// the kubelet would for a crashed container: set it to test how Grove handles failures.
	KwokFailContainerAnnotation = "grove.io/e2e-fail-container"
)

// failContainerStage is the kwok Stage behind KwokFailContainerAnnotation. It applies once: the
// pod it leaves is no longer Ready, so the selector stops matching. Pod conditions merge by type
// (only Ready and ContainersReady change); container statuses are replaced, so all are listed.
var failContainerStage = strings.ReplaceAll(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: grove-e2e-container-failed
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.annotations["ANNOTATION"]'
      operator: 'Exists'
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Running'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'In'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $failing := index .metadata.annotations "ANNOTATION" }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        reason: ContainersNotReady
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      {{ if eq .name $failing }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        started: false
        restartCount: 1
        state:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
      {{ else }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ end }}
`, "ANNOTATION", KwokFailContainerAnnotation)

// kwokOptions: kwok moves pods through their stages with 4 workers by default, one status
// write at a time each, for every node it simulates. A real cluster has a kubelet per node
// reporting in parallel; with 4 workers, pods bound in a wave (a rollout step of 250 pods)
// became Ready up to 14 s after they were bound, which the benchmarks measured as the
// operator's. A configuration file replaces kwok's defaults as a whole, so the others are
// restated at their default values.
var kwokOptions = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: 32
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enableDebuggingHandlers: true
  enableProfilingHandler: true
  enablePodsOnNodeSyncListPager: true
`

// kwokStartTimeout bounds kwok's start: it waits for the apiserver, then starts its controllers.
const kwokStartTimeout = 60 * time.Second

// StartKwok runs kwok against the control plane: it marks fake Nodes Ready and moves pods bound
// to them through their lifecycle (Running, Ready; deleted pods go away), with the "fast"
// stages shipped in the kwok module, and fails containers on request (KwokFailContainerAnnotation).
func (c *Cluster) StartKwok(ctx context.Context) error {
	if c.kwok != nil && !c.kwok.exited() {
		return nil
	}
	binDir := c.opts.BinDir
	if binDir == "" {
		var err error
		if binDir, err = BinDir(); err != nil {
			return err
		}
	}
	path, err := requireBinary(binDir, "kwok")
	if err != nil {
		return err
	}
	stages := strings.Join([]string{nodefast.DefaultNodeInit, podfast.DefaultPodReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete,
		failContainerStage, kwokOptions}, "\n---\n")
	stagesFile := filepath.Join(c.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stagesFile, []byte(stages), 0o644); err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	c.kwok = &process{name: "kwok", path: path, log: filepath.Join(c.Dir, "kwok.log"), args: []string{
		"--kubeconfig=" + c.KubeconfigPath,
		// Only for /healthz: kwok serves it once its controllers have started.
		"--server-address=127.0.0.1:" + strconv.Itoa(port),
		"--config=" + stagesFile,
		"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
		"--node-lease-duration-seconds=40",
		"--cidr=10.0.0.0/8",
	}}
	if err := c.kwok.start(); err != nil {
		return err
	}
	if err := c.waitHTTP(ctx, c.kwok, fmt.Sprintf("http://127.0.0.1:%d/healthz", port), nil, kwokStartTimeout); err != nil {
		return fmt.Errorf("%w\n%s", err, c.LogTail(20))
	}
	return c.writePIDFile()
}

// FakeNode builds a kwok-managed Node with the given labels and allocatable resources
// (for example {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8", "pods": "110"}).
func FakeNode(name string, labels map[string]string, allocatable map[corev1.ResourceName]string) *corev1.Node {
	l := map[string]string{corev1.LabelHostname: name, "type": "kwok"}
	for k, v := range labels {
		l[k] = v
	}
	res := corev1.ResourceList{}
	for k, v := range allocatable {
		res[k] = resource.MustParse(v)
	}
	if _, ok := res[corev1.ResourcePods]; !ok {
		res[corev1.ResourcePods] = resource.MustParse("110")
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Labels: l,
			Annotations: map[string]string{KwokNodeAnnotation: KwokNodeAnnotationValue},
		},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: res.DeepCopy(),
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		},
	}
}
