package controller_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

type counts struct{ services, pclqs, pcsgs, gangs, pods int }

func (e *env) counts() counts {
	return counts{
		services: len(e.names(&corev1.ServiceList{})),
		pclqs:    len(e.names(&corev1alpha1.PodCliqueList{})),
		pcsgs:    len(e.names(&corev1alpha1.PodCliqueScalingGroupList{})),
		gangs:    len(e.names(&schedv1alpha1.PodGangList{})),
		pods:     len(e.pods("")),
	}
}

// TestScalePodCliqueSet scales replicas out and in: every object of the removed replicas goes
// away, headless Services included.
func TestScalePodCliqueSet(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "pcs", 2))
	// Per replica: 1 Service, 5 PodCliques, 1 scaling group, 2 PodGangs, 7 pods.
	e.eventually(func(c *assert.CollectT) { assert.Equal(c, counts{2, 10, 2, 4, 14}, e.counts()) })

	e.scale(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "pcs"}}, 3)
	e.eventually(func(c *assert.CollectT) { assert.Equal(c, counts{3, 15, 3, 6, 21}, e.counts()) })

	e.scale(&corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "pcs"}}, 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, counts{1, 5, 1, 2, 7}, e.counts())
		assert.Equal(c, []string{"pcs-0"}, e.names(&corev1.ServiceList{}))
		assert.Equal(c, []string{"pcs-0", "pcs-0-workers-0"}, e.names(&schedv1alpha1.PodGangList{}))
		pcs := &corev1alpha1.PodCliqueSet{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "pcs"}, pcs))
		assert.EqualValues(c, 1, pcs.Status.Replicas)
	})
}

// TestScaleScalingGroup scales one scaling group through /scale: member PodCliques and scaled
// PodGangs follow, the base PodGang keeps its minAvailable replicas.
func TestScaleScalingGroup(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "sg", 1))
	e.eventually(func(c *assert.CollectT) { assert.Equal(c, counts{1, 5, 1, 2, 7}, e.counts()) })

	group := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Name: "sg-0-workers"}}
	e.scale(group, 4)
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, counts{1, 9, 1, 4, 13}, e.counts())
		assert.Equal(c, []string{"sg-0", "sg-0-workers-0", "sg-0-workers-1", "sg-0-workers-2"}, e.names(&schedv1alpha1.PodGangList{}))
		pg := &schedv1alpha1.PodGang{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sg-0-workers-2"}, pg))
		assert.Equal(c, "sg-0-workers-3-prefill", pg.Spec.PodGroups[0].Name, "scaled gang j-minAvailable holds group replica j")
		assert.Len(c, pg.Spec.PodGroups[0].PodReferences, 2)
	})
	pcs := &corev1alpha1.PodCliqueSet{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sg"}, pcs))
	assert.EqualValues(t, 2, *pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas, "the template is not touched")

	e.scale(group, 1)
	e.eventually(func(c *assert.CollectT) {
		assert.Equal(c, counts{1, 3, 1, 1, 4}, e.counts())
		assert.Equal(c, []string{"sg-0-router", "sg-0-workers-0-decode", "sg-0-workers-0-prefill"}, e.names(&corev1alpha1.PodCliqueList{}))
		g := &corev1alpha1.PodCliqueScalingGroup{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sg-0-workers"}, g))
		assert.EqualValues(c, 1, g.Status.Replicas)
	})
	// A PodCliqueSet reconcile (any change of it) must not reset the group's replicas.
	e.update(pcs, func() { pcs.Spec.Template.Clique("router").Labels = map[string]string{"touched": "yes"} })
	e.eventually(func(c *assert.CollectT) {
		pc := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sg-0-router"}, pc))
		assert.Equal(c, "yes", pc.Labels["touched"], "the template change reached the PodClique")
	})
	g := &corev1alpha1.PodCliqueScalingGroup{}
	require.NoError(t, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "sg-0-workers"}, g))
	assert.EqualValues(t, 1, g.Spec.Replicas, "replicas belong to /scale after creation")
}

// TestScalePodClique scales a PodClique through /scale. Scale-in deletes unscheduled pods
// before scheduled ones, and the newest (highest index) first.
func TestScalePodClique(t *testing.T) {
	e := newEnv(t)
	e.create(disaggregated(e.ns, "pc", 1))
	e.eventually(func(c *assert.CollectT) { assert.Len(c, e.pods("pc-0-router"), 1) })

	router := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "pc-0-router"}}
	e.scale(router, 4)
	e.eventually(func(c *assert.CollectT) {
		pods := e.pods("pc-0-router")
		var hostnames []string
		for _, p := range pods {
			hostnames = append(hostnames, p.Spec.Hostname)
			assert.False(c, gated(&p), "ungated before a scheduler may bind it")
		}
		assert.Equal(c, []string{"pc-0-router-0", "pc-0-router-1", "pc-0-router-2", "pc-0-router-3"}, hostnames)
		assert.Equal(c, podNames(pods), refNames(e.podGang(c, "pc-0").Spec.PodGroups[0]))
	})
	// Schedule pods 0 and 3: scale-in must take the unscheduled 2 and 1 first.
	node := e.node()
	pods := e.pods("pc-0-router")
	e.bind(&pods[0], node)
	e.bind(&pods[3], node)
	e.eventually(func(c *assert.CollectT) {
		pc := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "pc-0-router"}, pc))
		assert.EqualValues(c, 2, pc.Status.ScheduledReplicas)
	})

	e.scale(router, 2)
	e.eventually(func(c *assert.CollectT) {
		var hostnames []string
		for _, p := range e.pods("pc-0-router") {
			hostnames = append(hostnames, p.Spec.Hostname)
		}
		assert.Equal(c, []string{"pc-0-router-0", "pc-0-router-3"}, hostnames, "the scheduled pods stay")
		assert.Len(c, refNames(e.podGang(c, "pc-0").Spec.PodGroups[0]), 2)
	})

	// Scaling out again fills the lowest free indices.
	e.scale(router, 3)
	e.eventually(func(c *assert.CollectT) {
		var hostnames []string
		for _, p := range e.pods("pc-0-router") {
			hostnames = append(hostnames, p.Spec.Hostname)
		}
		assert.Equal(c, []string{"pc-0-router-0", "pc-0-router-1", "pc-0-router-3"}, hostnames)
		pc := &corev1alpha1.PodClique{}
		require.NoError(c, e.c.Get(e.ctx, client.ObjectKey{Namespace: e.ns, Name: "pc-0-router"}, pc))
		assert.EqualValues(c, 3, pc.Status.Replicas)
		assert.Equal(c, fmt.Sprintf("%s=%s,%s=%s,%s=%s", apicommon.LabelManagedByKey, apicommon.LabelManagedByValue,
			apicommon.LabelPartOfKey, "pc", apicommon.LabelPodClique, "pc-0-router"), *pc.Status.Selector)
	})
}
