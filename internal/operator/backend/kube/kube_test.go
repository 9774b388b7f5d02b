package kube

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// The Workload API states a cluster can be in.
var (
	notServed       = WorkloadAPI{}
	podGroupsOnly   = WorkloadAPI{PodGroups: true}
	podGroupsTAS    = WorkloadAPI{PodGroups: true, TopologyConstraints: true}
	probeFailed     = WorkloadAPI{PodGroups: true, TopologyProbeError: "could not tell whether the apiserver keeps PodGroup topology constraints: forbidden"}
	fullWorkloadAPI = WorkloadAPI{PodGroups: true, TopologyConstraints: true, CompositePodGroups: true}
)

func TestPreparePodJoinsThePodGroupOnlyWhenTheAPIIsServed(t *testing.T) {
	ref := backend.PodGangRef{Name: "inf-0-workers-0", PodGroup: "inf-0-workers-1-prefill"}

	plain := &corev1.Pod{}
	(&Backend{api: notServed}).PreparePod(plain, ref)
	assert.Equal(t, corev1.PodSpec{SchedulerName: "default-scheduler"}, plain.Spec)

	joined := &corev1.Pod{}
	(&Backend{api: podGroupsOnly}).PreparePod(joined, ref)
	assert.Equal(t, corev1.PodSpec{
		SchedulerName:   "default-scheduler",
		SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("inf-0-workers-0-inf-0-workers-1-prefill")},
	}, joined.Spec)
}

func TestGangSchedulingAvailableFollowsTheServedAPI(t *testing.T) {
	for _, tc := range []struct {
		api         WorkloadAPI
		available   bool
		wantMessage string
	}{
		{notServed, false, GangUnavailableMessage},
		{podGroupsTAS, true, GangPerPodGroupMessage},
		{fullWorkloadAPI, true, GangCompositeMessage},
	} {
		available, message := (&Backend{api: tc.api}).GangSchedulingAvailable()
		assert.Equal(t, tc.available, available, "%+v", tc.api)
		assert.Equal(t, tc.wantMessage, message, "%+v", tc.api)
	}
	assert.Contains(t, GangUnavailableMessage, "GenericWorkload")
	assert.Contains(t, GangPerPodGroupMessage, "not placed all-or-nothing together")
}

func TestInitRejectsAnyProfileConfig(t *testing.T) {
	err := New().Init(context.Background(), backend.InitContext{Config: []byte(`{"gangMode":"Strict"}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown field "gangMode"`)
}

// pcsWithConstraints is a PodCliqueSet with cliques a (standalone) and b (scaling group g).
func pcsWithConstraints(mutate func(*corev1alpha1.PodCliqueSetTemplateSpec)) *corev1alpha1.PodCliqueSet {
	pcs := &corev1alpha1.PodCliqueSet{}
	pcs.Spec.Template.Cliques = []*corev1alpha1.PodCliqueTemplateSpec{{Name: "a"}, {Name: "b"}}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"b"}}}
	mutate(&pcs.Spec.Template)
	return pcs
}

func TestValidatePodCliqueSetRejectsWhatTheServedAPICannotExpress(t *testing.T) {
	rack := func() *corev1alpha1.TopologyConstraint {
		return &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack"}
	}
	everyLevelRequired := func(t *corev1alpha1.PodCliqueSetTemplateSpec) {
		t.TopologyConstraint = rack()
		t.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}}
		t.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "host"}
	}
	preferred := func(t *corev1alpha1.PodCliqueSetTemplateSpec) {
		t.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", Pack: &corev1alpha1.TopologyPackConstraint{Required: "block", Preferred: "rack"}}
		t.Cliques[1].TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}}
	}
	type rejection struct{ field, detail string }
	cases := []struct {
		name   string
		api    WorkloadAPI
		mutate func(*corev1alpha1.PodCliqueSetTemplateSpec)
		want   []rejection
	}{
		{"no constraint, API not served", notServed, func(*corev1alpha1.PodCliqueSetTemplateSpec) {}, nil},
		{"API not served: every required domain", notServed, everyLevelRequired, []rejection{
			{"spec.template.topologyConstraint.packDomain", TopologyUnsupportedMessage},
			{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required", TopologyUnsupportedMessage},
			{"spec.template.cliques[0].topologyConstraint.packDomain", TopologyUnsupportedMessage},
		}},
		{"a topologyName alone packs nothing", notServed, func(t *corev1alpha1.PodCliqueSetTemplateSpec) {
			t.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric"}
		}, nil},
		{"PodGroups without the topology gate", podGroupsOnly, everyLevelRequired, []rejection{
			{"spec.template.topologyConstraint.packDomain", TopologyGateOffMessage},
			{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required", TopologyGateOffMessage},
			{"spec.template.cliques[0].topologyConstraint.packDomain", TopologyGateOffMessage},
		}},
		{"topology probe failed", probeFailed, func(t *corev1alpha1.PodCliqueSetTemplateSpec) { t.Cliques[0].TopologyConstraint = rack() }, []rejection{
			{"spec.template.cliques[0].topologyConstraint.packDomain",
				"default-scheduler cannot honour topology constraints here: it could not tell whether the apiserver keeps PodGroup topology constraints: forbidden; remove the constraint or use grove-scheduler"},
		}},
		{"PodGroups with topology, no CompositePodGroups: only clique domains", podGroupsTAS, everyLevelRequired, []rejection{
			{"spec.template.topologyConstraint.packDomain", MultiGroupTopologyUnsupportedMessage},
			{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required", MultiGroupTopologyUnsupportedMessage},
		}},
		{"full Workload API: every required domain", fullWorkloadAPI, everyLevelRequired, nil},
		{"full Workload API: a PodCliqueSet domain over scaled PodGangs", fullWorkloadAPI, func(t *corev1alpha1.PodCliqueSetTemplateSpec) {
			everyLevelRequired(t)
			t.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](2)
		}, []rejection{{"spec.template.topologyConstraint.packDomain", fmt.Sprintf(ReplicaWideRequiredMessage, "g")}}},
		{"full Workload API: preferred domains", fullWorkloadAPI, preferred, []rejection{
			{"spec.template.topologyConstraint.pack.preferred", PreferredUnsupportedMessage},
			{"spec.template.cliques[1].topologyConstraint.pack.preferred", PreferredUnsupportedMessage},
		}},
		{"API not served: preferred and required", notServed, preferred, []rejection{
			{"spec.template.topologyConstraint.pack.preferred", PreferredUnsupportedMessage},
			{"spec.template.topologyConstraint.pack.required", TopologyUnsupportedMessage},
			{"spec.template.cliques[1].topologyConstraint.pack.preferred", PreferredUnsupportedMessage},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := (&Backend{api: tc.api}).ValidatePodCliqueSet(context.Background(), pcsWithConstraints(tc.mutate))
			var got []rejection
			for _, e := range errs {
				assert.Equal(t, field.ErrorTypeForbidden, e.Type, e.Field)
				got = append(got, rejection{e.Field, e.Detail})
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Contains(t, PreferredUnsupportedMessage, "only expresses required domains")
	assert.Contains(t, MultiGroupTopologyUnsupportedMessage, "CompositePodGroup")
}

func TestValidatePodCliqueSetWarnsWhenGangsAreNotWhole(t *testing.T) {
	twoCliques := pcsWithConstraints(func(*corev1alpha1.PodCliqueSetTemplateSpec) {})
	oneClique := &corev1alpha1.PodCliqueSet{}
	oneClique.Spec.Template.Cliques = []*corev1alpha1.PodCliqueTemplateSpec{{Name: "a"}}
	for _, tc := range []struct {
		api  WorkloadAPI
		pcs  *corev1alpha1.PodCliqueSet
		want []string
	}{
		{notServed, oneClique, []string{GangNotEnforcedWarning}},
		{podGroupsTAS, twoCliques, []string{GangPerPodCliqueWarning}},
		{podGroupsTAS, oneClique, nil},
		{fullWorkloadAPI, twoCliques, nil},
	} {
		warnings, _ := (&Backend{api: tc.api}).ValidatePodCliqueSet(context.Background(), tc.pcs)
		assert.Equal(t, tc.want, warnings, "%+v with %d cliques", tc.api, len(tc.pcs.Spec.Template.Cliques))
	}
}

// A PodGang can reach SyncPodGang with a constraint admission would have rejected (it was
// admitted under another configuration): it fails instead of scheduling without it.
func TestDesiredObjectsFailClosedOnConstraintsTheAPICannotExpress(t *testing.T) {
	key := func(k string) *schedv1alpha1.TopologyConstraint {
		return &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(k)}}
	}
	gang := func(mutate func(*schedv1alpha1.PodGang)) *schedv1alpha1.PodGang {
		pg := &schedv1alpha1.PodGang{}
		pg.Namespace, pg.Name = "ns", "inf-0"
		pg.Spec.PodGroups = []schedv1alpha1.PodGroup{{Name: "inf-0-a", MinReplicas: 1}, {Name: "inf-0-b", MinReplicas: 2}}
		mutate(pg)
		return pg
	}
	cases := []struct {
		name    string
		api     WorkloadAPI
		pg      *schedv1alpha1.PodGang
		wantErr string
	}{
		{"preferred key", fullWorkloadAPI, gang(func(pg *schedv1alpha1.PodGang) {
			pg.Spec.PodGroups[1].TopologyConstraint = &schedv1alpha1.TopologyConstraint{PackConstraint: &schedv1alpha1.TopologyPackConstraint{Preferred: ptr.To("example.com/rack")}}
		}), `PodGroup "inf-0-b" prefers topology key "example.com/rack"; the Workload API expresses only required keys`},
		{"required key without the topology gate", podGroupsOnly, gang(func(pg *schedv1alpha1.PodGang) {
			pg.Spec.PodGroups[0].TopologyConstraint = key("example.com/rack")
		}), `PodGroup "inf-0-a" requires topology key "example.com/rack"; the apiserver does not keep PodGroup topology constraints`},
		{"PodGang key without CompositePodGroups", podGroupsTAS, gang(func(pg *schedv1alpha1.PodGang) {
			pg.Spec.TopologyConstraint = key("example.com/block")
		}), `the PodGang requires topology key "example.com/block" across PodGroups; that needs CompositePodGroups`},
		{"group config naming an unknown PodGroup", fullWorkloadAPI, gang(func(pg *schedv1alpha1.PodGang) {
			pg.Spec.TopologyConstraintGroupConfigs = []schedv1alpha1.TopologyConstraintGroupConfig{{Name: "g", PodGroupNames: []string{"inf-0-c"}, TopologyConstraint: key("example.com/rack")}}
		}), `topologyConstraintGroupConfig "g" names PodGroup "inf-0-c", which the PodGang does not have`},
		{"PodGroup in two packed group configs", fullWorkloadAPI, gang(func(pg *schedv1alpha1.PodGang) {
			pg.Spec.TopologyConstraintGroupConfigs = []schedv1alpha1.TopologyConstraintGroupConfig{
				{Name: "g1", PodGroupNames: []string{"inf-0-a"}, TopologyConstraint: key("example.com/rack")},
				{Name: "g2", PodGroupNames: []string{"inf-0-a", "inf-0-b"}, TopologyConstraint: key("example.com/block")}}
		}), `PodGroup "inf-0-a" is in two packed topologyConstraintGroupConfigs (CompositePodGroups inf-0-g1 and inf-0-g2)`},
		{"minReplicas 0", podGroupsOnly, gang(func(pg *schedv1alpha1.PodGang) { pg.Spec.PodGroups[0].MinReplicas = 0 }),
			`PodGroup "inf-0-a" has minReplicas 0; a gang needs at least one pod`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := desiredWorkloadObjects(tc.pg, tc.api)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "PodGang ns/inf-0: ")
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
