package controller_test

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"

	"github.com/ai-dynamo/grove/internal/operator/controller/podclique"
)

// TestPodCliqueStatusWritesAreCoalesced counts the PodClique status writes of a clique of N pods
// while its pods are created, ungated, bound and become ready: the changes a burst of pod
// events makes are written together, not one write per pod event (each pod goes through four
// of them), so the clique's status writes stay fewer than its pods.
func TestPodCliqueStatusWritesAreCoalesced(t *testing.T) {
	const pods = 24
	e := newNamespace(t)
	var writes atomic.Int64
	e.writers = map[string]func(client.Client) client.Client{
		podclique.StatusWriterName: func(c client.Client) client.Client {
			return &statusHooked{Client: c,
				beforePatch: func(obj client.Object) {
					if _, ok := obj.(*corev1alpha1.PodClique); ok {
						writes.Add(1)
					}
				},
				applied: func(obj runtime.ApplyConfiguration) {
					if u, ok := obj.(interface{ GetKind() string }); ok && u.GetKind() == "PodClique" {
						writes.Add(1)
					}
				}}
		},
	}
	e.startOperator()
	e.create(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "burst"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{cliqueTemplate("w", pods)}}}})
	pclq := func(c require.TestingT) *corev1alpha1.PodClique {
		p := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "burst-0-w"}, p))
		return p
	}
	e.eventually(func(c *assert.CollectT) {
		st := pclq(c).Status
		assert.EqualValues(c, pods, st.Replicas)
		assert.Zero(c, st.ScheduleGatedReplicas, "every pod ungated")
	})
	created := writes.Load()

	node := e.kwokNode()
	for _, p := range e.pods("burst-0-w") {
		e.bind(&p, node)
	}
	e.eventually(func(c *assert.CollectT) {
		st := pclq(c).Status
		assert.EqualValues(c, pods, st.ScheduledReplicas)
		assert.EqualValues(c, pods, st.ReadyReplicas)
	})
	total := writes.Load()
	t.Logf("PodClique status writes for %d pods: %d while they were created and ungated, %d in all (with binding and readiness)",
		pods, created, total)
	assert.Less(t, total, int64(pods), "fewer status writes than pods")
}
