// Package backendtest holds fixtures shared by the backends' tests against the real apiserver
// with the real third-party CRDs (e2e/cluster).
package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Scheme has the kinds the backends read and write as typed objects.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, corev1alpha1.AddToScheme, schedv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

var setLoggerOnce sync.Once

// Client is an admin client of the shared control plane; it skips the test with -short.
func Client(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	setLoggerOnce.Do(func() { ctrllog.SetLogger(testr.New(t)) })
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: Scheme()})
	require.NoError(t, err)
	return c
}

// Topology keys of the three-level test topology, broadest first.
const (
	KeyBlock = "example.com/block"
	KeyRack  = "example.com/rack"
	KeyHost  = "kubernetes.io/hostname"
)

// CreateClusterTopology creates a uniquely named ClusterTopology with block/rack/host levels
// and deletes it when the test ends.
func CreateClusterTopology(t *testing.T, c client.Client, refs ...corev1alpha1.SchedulerReference) *corev1alpha1.ClusterTopology {
	t.Helper()
	ct := &corev1alpha1.ClusterTopology{
		ObjectMeta: metav1.ObjectMeta{Name: "topo-" + rand.String(6)},
		Spec: corev1alpha1.ClusterTopologySpec{
			Levels: []corev1alpha1.TopologyLevel{
				{Domain: corev1alpha1.TopologyDomainBlock, Key: KeyBlock},
				{Domain: corev1alpha1.TopologyDomainRack, Key: KeyRack},
				{Domain: corev1alpha1.TopologyDomainHost, Key: KeyHost},
			},
			SchedulerReferences: refs,
		},
	}
	require.NoError(t, c.Create(context.Background(), ct))
	t.Cleanup(func() { _ = client.IgnoreNotFound(c.Delete(context.Background(), ct)) })
	return ct
}

// ReplicaGangs are the PodGangs of replica 0 of a PodCliqueSet "inf" whose standalone clique
// "router" (minAvailable 1) and scaling group "workers" (cliques prefill with minAvailable 2
// and decode with minAvailable 1; replicas 3, minAvailable 1) are packed into one block, each
// workers replica into one rack, preferring one host for prefill:
// the base gang "inf-0" (router + workers replica 0) and the scaled gangs "inf-0-workers-0"
// and "inf-0-workers-1" (workers replicas 1 and 2).
func ReplicaGangs(namespace, topologyName string) (base *schedv1alpha1.PodGang, scaled []*schedv1alpha1.PodGang) {
	const pcs, replicas, minAvailable = "inf", 3, 1
	pcsg := common.PodCliqueScalingGroupName(pcs, 0, "workers")
	workers := func(j int) []schedv1alpha1.PodGroup {
		return []schedv1alpha1.PodGroup{
			podGroup(namespace, common.ScalingGroupPodCliqueName(pcsg, j, "prefill"), 2, 2, &schedv1alpha1.TopologyConstraint{
				PackConstraint: &schedv1alpha1.TopologyPackConstraint{Preferred: ptr.To(KeyHost)}}),
			podGroup(namespace, common.ScalingGroupPodCliqueName(pcsg, j, "decode"), 1, 1, nil),
		}
	}
	rack := &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(KeyRack)}}
	base = PodGang(namespace, common.BasePodGangName(pcs, 0), topologyName,
		append([]schedv1alpha1.PodGroup{podGroup(namespace, common.StandalonePodCliqueName(pcs, 0, "router"), 2, 1, nil)}, workers(0)...))
	base.Spec.TopologyConstraint = &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(KeyBlock)}}
	base.Spec.PriorityClassName = "inference-high"
	base.Spec.TopologyConstraintGroupConfigs = []schedv1alpha1.TopologyConstraintGroupConfig{{
		Name:               fmt.Sprintf("%s-%d", pcsg, 0),
		PodGroupNames:      []string{workers(0)[0].Name, workers(0)[1].Name},
		TopologyConstraint: rack,
	}}
	for j := minAvailable; j < replicas; j++ {
		g := PodGang(namespace, common.ScaledPodGangName(pcsg, j, minAvailable), topologyName, workers(j))
		g.Spec.TopologyConstraint = rack.DeepCopy()
		g.Spec.PriorityClassName = "inference-high"
		scaled = append(scaled, g)
	}
	return base, scaled
}

// PodGang is a PodGang with the given groups whose constraints come from topologyName.
func PodGang(namespace, name, topologyName string, groups []schedv1alpha1.PodGroup) *schedv1alpha1.PodGang {
	pg := &schedv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec:       schedv1alpha1.PodGangSpec{PodGroups: groups},
	}
	if topologyName != "" {
		pg.Annotations[common.AnnotationTopologyName] = topologyName
	}
	return pg
}

func podGroup(namespace, name string, pods int, minReplicas int32, tc *schedv1alpha1.TopologyConstraint) schedv1alpha1.PodGroup {
	g := schedv1alpha1.PodGroup{Name: name, MinReplicas: minReplicas, TopologyConstraint: tc, PodReferences: []schedv1alpha1.NamespacedName{}}
	for i := 0; i < pods; i++ {
		g.PodReferences = append(g.PodReferences, schedv1alpha1.NamespacedName{Namespace: namespace, Name: fmt.Sprintf("%s-%d", name, i)})
	}
	return g
}

// JSONEqYAML asserts that got marshals to the same JSON as the expected YAML.
func JSONEqYAML(t *testing.T, expectedYAML string, got any, msgAndArgs ...any) {
	t.Helper()
	want, err := yaml.YAMLToJSON([]byte(strings.TrimSpace(expectedYAML)))
	require.NoError(t, err)
	gotJSON, err := json.Marshal(got)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(gotJSON), msgAndArgs...)
}

// Eventually polls cond until it holds, failing the test after timeout.
func Eventually(t *testing.T, timeout time.Duration, cond func() (bool, error), msg string) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, msg, last)
	}
}

// Pod is a pod with a single container.
func Pod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
}
