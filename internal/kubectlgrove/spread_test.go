package kubectlgrove

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// topology shows a replica spread: each replica (its PodGangs merged) in its domain, the unused
// domains and the skew.
func TestTopologyShowsReplicaSpread(t *testing.T) {
	f := newFixture(t)
	suffix := rand.String(5)
	rackKey := "test.grove.io/rack-" + suffix
	ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "spread-" + suffix},
		Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: rackKey}, {Domain: "host", Key: corev1.LabelHostname}}}}
	require.NoError(t, f.c.Create(f.ctx, ct))
	t.Cleanup(func() { _ = f.c.Delete(context.Background(), ct) })
	node := func(name, rack string) string {
		name += "-" + suffix
		n := cluster.FakeNode(name, map[string]string{rackKey: rack}, map[corev1.ResourceName]string{"nvidia.com/gpu": "16", "cpu": "64", "memory": "256Gi"})
		f.create(n)
		t.Cleanup(func() { _ = f.c.Delete(context.Background(), n) })
		return name
	}
	h0, h1, _ := node("h0", "r0"), node("h1", "r1"), node("h2", "r2")
	gang := func(name, member string) {
		f.create(&schedv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{common.LabelPartOfKey: "serve"}},
			Spec: schedv1alpha1.PodGangSpec{
				PodGroups:                []schedv1alpha1.PodGroup{{Name: name + "-worker", MinReplicas: 1, PodReferences: []schedv1alpha1.NamespacedName{}}},
				ReplicaSpreadConstraints: []schedv1alpha1.ReplicaSpreadConstraint{{Group: "serve", Member: member, TopologyKey: rackKey, Required: true}}},
			Status: schedv1alpha1.PodGangStatus{Phase: schedv1alpha1.PodGangPhasePending}})
	}
	gang("serve-0", "serve-0")
	gang("serve-0-sg-0", "serve-0")
	gang("serve-1", "serve-1")
	gang("serve-2", "serve-2")
	f.pod("serve-0-a", "serve-0", h0)
	f.pod("serve-0-sg-0-a", "serve-0-sg-0", h0)
	f.pod("serve-1-a", "serve-1", h1)
	f.pod("serve-2-a", "serve-2", "")

	var out bytes.Buffer
	require.NoError(t, Topology(f.ctx, f.clients, ct.Name, &out))
	assertLines(t, out.String(), "replica spread "+f.ns+"/serve over rack (required): r0: serve-0; r1: serve-1; unused: r2; skew 1")
}
