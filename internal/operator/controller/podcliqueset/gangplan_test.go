package podcliqueset

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/operator/packing"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func testPCS(replicas int32) *corev1alpha1.PodCliqueSet {
	clique := func(name string, replicas int32) *corev1alpha1.PodCliqueTemplateSpec {
		return &corev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: corev1alpha1.PodCliqueSpec{Replicas: replicas}}
	}
	pcs := &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1alpha1.PodCliqueSetSpec{Replicas: replicas, Template: corev1alpha1.PodCliqueSetTemplateSpec{
			PriorityClassName: "high",
			Cliques:           []*corev1alpha1.PodCliqueTemplateSpec{clique("router", 1), clique("prefill", 2), clique("decode", 1)},
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{
				Name: "w", CliqueNames: []string{"prefill", "decode"}, Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](2),
			}},
		}},
	}
	corev1alpha1.SetDefaultsPodCliqueSet(pcs)
	return pcs
}

type gangSummary struct {
	name, base string
	groups     []string
	minimums   []int32
	complete   bool
}

func summarize(gangs []plannedGang) []gangSummary {
	var out []gangSummary
	for _, g := range gangs {
		s := gangSummary{name: g.name, base: g.base, complete: g.complete}
		for _, pg := range g.spec.PodGroups {
			s.groups = append(s.groups, pg.Name)
			s.minimums = append(s.minimums, pg.MinReplicas)
		}
		out = append(out, s)
	}
	return out
}

func TestPlanPodGangsFromTheTemplate(t *testing.T) {
	gangs := planPodGangs(gangPlanInput{pcs: testPCS(2)})
	assert.Equal(t, []gangSummary{
		{name: "p-0", groups: []string{"p-0-router", "p-0-w-0-prefill", "p-0-w-0-decode", "p-0-w-1-prefill", "p-0-w-1-decode"}, minimums: []int32{1, 2, 1, 2, 1}},
		{name: "p-0-w-0", base: "p-0", groups: []string{"p-0-w-2-prefill", "p-0-w-2-decode"}, minimums: []int32{2, 1}},
		{name: "p-1", groups: []string{"p-1-router", "p-1-w-0-prefill", "p-1-w-0-decode", "p-1-w-1-prefill", "p-1-w-1-decode"}, minimums: []int32{1, 2, 1, 2, 1}},
		{name: "p-1-w-0", base: "p-1", groups: []string{"p-1-w-2-prefill", "p-1-w-2-decode"}, minimums: []int32{2, 1}},
	}, summarize(gangs), "nothing exists yet: no gang is complete")
	for _, g := range gangs {
		assert.Equal(t, "high", g.spec.PriorityClassName)
		assert.Nil(t, g.spec.TopologyConstraint)
		for _, pg := range g.spec.PodGroups {
			assert.NotNil(t, pg.PodReferences, "podReferences is required: never null")
		}
	}
}

func TestPlanPodGangsFollowsScaleSubresources(t *testing.T) {
	pcs := testPCS(1)
	existing := func(name string, replicas, minAvailable int32) *corev1alpha1.PodClique {
		return &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1alpha1.PodCliqueSpec{Replicas: replicas, MinAvailable: ptr.To(minAvailable)}}
	}
	in := gangPlanInput{
		pcs: pcs,
		// The router was scaled to 3 through its /scale; the group to 1 replica (below minAvailable).
		pclqs: map[string]*corev1alpha1.PodClique{
			"p-0-router": existing("p-0-router", 3, 1), "p-0-w-0-prefill": existing("p-0-w-0-prefill", 2, 2),
			"p-0-w-0-decode": existing("p-0-w-0-decode", 1, 1),
		},
		pcsgs: map[string]*corev1alpha1.PodCliqueScalingGroup{"p-0-w": {Spec: corev1alpha1.PodCliqueScalingGroupSpec{Replicas: 1, MinAvailable: ptr.To[int32](2)}}},
		pods: map[string]map[string][]string{"p-0": {
			"p-0-router": {"r-c", "r-a", "r-b"}, "p-0-w-0-prefill": {"pf-2", "pf-1"}, "p-0-w-0-decode": {"d-1"},
		}},
	}
	gangs := planPodGangs(in)
	require.Len(t, gangs, 1)
	assert.True(t, gangs[0].complete, "every PodClique exists with all its pods")
	assert.Equal(t, []schedv1alpha1.NamespacedName{{Namespace: "ns", Name: "r-a"}, {Namespace: "ns", Name: "r-b"}, {Namespace: "ns", Name: "r-c"}},
		gangs[0].spec.PodGroups[0].PodReferences, "sorted")

	in.pclqs["p-0-router"].Spec.Replicas = 4
	assert.False(t, planPodGangs(in)[0].complete, "the router wants a fourth pod")
	in.pclqs["p-0-router"].Spec.Replicas = 3
	delete(in.pclqs, "p-0-w-0-decode")
	assert.False(t, planPodGangs(in)[0].complete, "a PodClique does not exist")
}

func TestPlanPodGangsTopology(t *testing.T) {
	pcs := testPCS(1)
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "zone"}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack"}
	pcs.Spec.Template.Clique("prefill").TopologyConstraint = &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}}
	tr := packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}, {Domain: "rack", Key: "r"}, {Domain: "host", Key: "h"}})
	gangs := planPodGangs(gangPlanInput{pcs: pcs, topology: tr})
	require.Len(t, gangs, 2)
	base, scaled := gangs[0], gangs[1]

	assert.Equal(t, "z", base.spec.TopologyConstraint.Required())
	assert.Equal(t, []schedv1alpha1.TopologyConstraintGroupConfig{
		{Name: "p-0-w-0", PodGroupNames: []string{"p-0-w-0-prefill", "p-0-w-0-decode"}, TopologyConstraint: tr.ScalingGroups["w"]},
		{Name: "p-0-w-1", PodGroupNames: []string{"p-0-w-1-prefill", "p-0-w-1-decode"}, TopologyConstraint: tr.ScalingGroups["w"]},
	}, base.spec.TopologyConstraintGroupConfigs, "one entry per group replica in the base gang")
	assert.Nil(t, base.spec.PodGroups[0].TopologyConstraint, "router has no constraint")
	assert.Equal(t, "h", base.spec.PodGroups[1].TopologyConstraint.Preferred(), "clique constraint on its PodGroup")

	assert.Equal(t, "r", scaled.spec.TopologyConstraint.Required(), "a scaled gang takes the group's constraint")
	// ... and the PodCliqueSet's, shared with every gang of the replica.
	for _, g := range gangs {
		require.NotNil(t, g.spec.SharedTopologyConstraint, g.name)
		assert.Equal(t, "p-0", g.spec.SharedTopologyConstraint.Group, "%s: the replica's base gang names the group", g.name)
		assert.Equal(t, "z", g.spec.SharedTopologyConstraint.Required(), g.name)
	}
	assert.Empty(t, scaled.spec.TopologyConstraintGroupConfigs)
	assert.Equal(t, "h", scaled.spec.PodGroups[0].TopologyConstraint.Preferred())

	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = nil
	tr = packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}})
	gangs = planPodGangs(gangPlanInput{pcs: pcs, topology: tr})
	assert.Equal(t, "z", gangs[1].spec.TopologyConstraint.Required(), "without its own, a scaled gang takes the PodCliqueSet's")
	assert.Nil(t, gangs[0].spec.PodGroups[1].TopologyConstraint, "host is not a level: dropped")

	// A preference at the PodCliqueSet level is shared too; without one, nothing is.
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "zone"}}
	gangs = planPodGangs(gangPlanInput{pcs: pcs, topology: packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}})})
	assert.Equal(t, "z", gangs[1].spec.SharedTopologyConstraint.Preferred())
	assert.Empty(t, gangs[1].spec.SharedTopologyConstraint.Required())
	pcs.Spec.Template.TopologyConstraint = nil
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "zone"}
	gangs = planPodGangs(gangPlanInput{pcs: pcs, topology: packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}})})
	for _, g := range gangs {
		assert.Nil(t, g.spec.SharedTopologyConstraint, "%s: a scaling group's constraint binds each of its replicas, not the replica as a whole", g.name)
	}
}

// TestCreateInWaitsForTheGangsPods: an absent PodGang is created once complete, or
// incompleteGangGrace after its first pod, or emptyGangGrace after its oldest PodClique when
// none of its pods exists; never before its PodCliques are seen.
func TestCreateInWaitsForTheGangsPods(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for name, tc := range map[string]struct {
		gang plannedGang
		want time.Duration
	}{
		"complete":                       {plannedGang{complete: true}, 0},
		"complete, cliques just created": {plannedGang{complete: true, firstClique: now}, 0},
		"complete, left to the gang creator for a while": {plannedGang{complete: true, lastPod: ago(time.Second), completeGrace: completeGangGrace},
			completeGangGrace - time.Second},
		"complete, the gang creator's while is over": {plannedGang{complete: true, lastPod: ago(completeGangGrace), completeGrace: completeGangGrace}, 0},
		"first pod just created":                     {plannedGang{firstPod: now, firstClique: ago(time.Minute)}, incompleteGangGrace},
		"first pod a second old":                     {plannedGang{firstPod: ago(time.Second), firstClique: ago(time.Minute)}, incompleteGangGrace - time.Second},
		"first pod past the grace":                   {plannedGang{firstPod: ago(incompleteGangGrace + time.Second)}, 0},
		"no pod, cliques 3s old":                     {plannedGang{firstClique: ago(3 * time.Second)}, emptyGangGrace - 3*time.Second},
		"no pod, cliques past the grace":             {plannedGang{firstClique: ago(emptyGangGrace)}, 0},
		"no clique seen yet":                         {plannedGang{}, emptyGangGrace},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.gang.createIn(now))
		})
	}
}

// TestPlanRecordsTheOldestPodAndClique: the planner carries each gang's oldest and newest pods
// (from the pods' creation times) and oldest existing PodClique into the plan.
func TestPlanRecordsTheOldestPodAndClique(t *testing.T) {
	pcs := testPCS(1)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	pclqs := map[string]*corev1alpha1.PodClique{}
	for i, name := range []string{"p-0-router", "p-0-w-0-prefill", "p-0-w-0-decode"} {
		pclqs[name] = &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second))},
			Spec: corev1alpha1.PodCliqueSpec{Replicas: 1}}
	}
	names, first, last := podsByGang([]podRef{
		{name: "p-0-router-0", gang: "p-0", pclq: "p-0-router", created: t0.Add(5 * time.Second)},
		{name: "p-0-w-0-decode-0", gang: "p-0", pclq: "p-0-w-0-decode", created: t0.Add(4 * time.Second)},
	})
	gangs := planPodGangs(gangPlanInput{pcs: pcs, pclqs: pclqs, pods: names, firstPod: first, lastPod: last})
	require.NotEmpty(t, gangs)
	base := gangs[0]
	require.Equal(t, "p-0", base.name)
	assert.False(t, base.complete, "prefill has no pod and one scaling-group replica has no PodCliques")
	assert.Equal(t, t0.Add(4*time.Second), base.firstPod)
	assert.Equal(t, t0.Add(5*time.Second), base.lastPod)
	assert.Equal(t, t0, base.firstClique)
}

// A plan restricted to one replica has that replica's gangs, as the whole plan has them.
func TestPlanPodGangsOfOneReplica(t *testing.T) {
	whole := planPodGangs(gangPlanInput{pcs: testPCS(3)})
	for replica := range 3 {
		var want []gangSummary
		for _, g := range whole {
			if g.replica == replica {
				want = append(want, summarize([]plannedGang{g})...)
			}
		}
		require.NotEmpty(t, want)
		assert.Equal(t, want, summarize(planPodGangs(gangPlanInput{pcs: testPCS(3), onlyReplica: ptr.To(replica)})), "replica %d", replica)
	}
}

// TestPlanPodGangsReplicaSpread: every PodGang of a replica carries the PodCliqueSet's spread,
// naming the PodCliqueSet as group and the replica's base PodGang as member.
func TestPlanPodGangsReplicaSpread(t *testing.T) {
	pcs := testPCS(2)
	pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "rack",
		ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{{Domain: "rack"}}}
	tr := packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "r"}})
	gangs := planPodGangs(gangPlanInput{pcs: pcs, topology: tr})
	require.Len(t, gangs, 4)
	for _, g := range gangs {
		member := fmt.Sprintf("p-%d", g.replica)
		assert.Equal(t, []schedv1alpha1.ReplicaSpreadConstraint{{Group: "p", Member: member, TopologyKey: "r", Required: true}},
			g.spec.ReplicaSpreadConstraints, g.name)
	}
}

// TestPlanPodGangsSlices: a sliced clique's PodGroup carries its slices, cut from the PodClique's
// replicas (the template's until the PodClique exists); other PodGroups carry none.
func TestPlanPodGangsSlices(t *testing.T) {
	pcs := testPCS(1)
	pcs.Spec.Template.Cliques[0].Spec.Replicas = 5
	pcs.Spec.Template.Cliques[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric",
		Slice: &corev1alpha1.SliceConstraint{Domain: "rack", MaxSize: ptr.To[int32](2)}}
	tr := packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "r"}})
	slicesOf := func(gangs []plannedGang) map[string]*schedv1alpha1.PodGroupSlices {
		out := map[string]*schedv1alpha1.PodGroupSlices{}
		for _, g := range gangs {
			for _, pg := range g.spec.PodGroups {
				out[pg.Name] = pg.Slices
			}
		}
		return out
	}
	got := slicesOf(planPodGangs(gangPlanInput{pcs: pcs, topology: tr}))
	assert.Equal(t, &schedv1alpha1.PodGroupSlices{TopologyKey: "r", Required: true, Sizes: []int32{2, 2, 1}}, got["p-0-router"])
	assert.Nil(t, got["p-0-w-0-prefill"])

	scaled := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "p-0-router", Namespace: "ns"}, Spec: corev1alpha1.PodCliqueSpec{Replicas: 6}}
	got = slicesOf(planPodGangs(gangPlanInput{pcs: pcs, topology: tr, pclqs: map[string]*corev1alpha1.PodClique{"p-0-router": scaled}}))
	assert.Equal(t, []int32{2, 2, 2}, got["p-0-router"].Sizes)
}

// TestPlanPodGangsScalingGroupSpread: scaling group "w" (3 replicas) spreads its replicas over
// racks. The replicas in the base gang are scoped members (their PodGroups) kept apart by an
// anti-affinity group when there are two of them; each scaled gang is a member of its own.
func TestPlanPodGangsScalingGroupSpread(t *testing.T) {
	for _, minAvailable := range []int32{1, 2} {
		t.Run(fmt.Sprintf("minAvailable %d", minAvailable), func(t *testing.T) {
			pcs := testPCS(1)
			pcs.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", PackDomain: "zone"}
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To(minAvailable)
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &corev1alpha1.TopologyConstraint{PackDomain: "rack",
				ReplicaSpreadConstraints: []corev1alpha1.ReplicaSpreadConstraint{{Domain: "rack"}}}
			tr := packing.Translate(&pcs.Spec.Template, []corev1alpha1.TopologyLevel{{Domain: "zone", Key: "z"}, {Domain: "rack", Key: "r"}})
			gangs := planPodGangs(gangPlanInput{pcs: pcs, topology: tr})
			require.Len(t, gangs, 1+3-int(minAvailable))
			base := gangs[0]
			var wantBase []schedv1alpha1.ReplicaSpreadConstraint
			var members []schedv1alpha1.RoleAffinityMember
			for j := range int(minAvailable) {
				name := fmt.Sprintf("p-0-w-%d", j)
				groups := []string{name + "-prefill", name + "-decode"}
				wantBase = append(wantBase, schedv1alpha1.ReplicaSpreadConstraint{Group: "p-0-w", Member: name, TopologyKey: "r", Required: true, PodGroupNames: groups})
				members = append(members, schedv1alpha1.RoleAffinityMember{Name: name, PodGroupNames: groups})
			}
			assert.Equal(t, wantBase, base.spec.ReplicaSpreadConstraints)
			if minAvailable == 1 {
				assert.Empty(t, base.spec.AntiAffinityGroups, "one replica in the base gang: nothing to keep apart inside it")
			} else {
				assert.Equal(t, []schedv1alpha1.RoleAffinityGroup{{Name: "p-0-w", TopologyKey: "r", Required: true, Members: members}},
					base.spec.AntiAffinityGroups)
			}
			for k, g := range gangs[1:] {
				member := fmt.Sprintf("p-0-w-%d", int(minAvailable)+k)
				assert.Equal(t, []schedv1alpha1.ReplicaSpreadConstraint{{Group: "p-0-w", Member: member, TopologyKey: "r", Required: true}},
					g.spec.ReplicaSpreadConstraints, g.name)
			}
		})
	}
}
