package kai

import (
	"context"
	"fmt"
	"k8s.io/utils/ptr"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestInitDecodesConfigStrictly(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		want    Config
		wantErr string
	}{
		{name: "no config", raw: ""},
		{name: "default queue", raw: `{"defaultQueue":"team-a"}`, want: Config{DefaultQueue: "team-a"}},
		{name: "misspelt field", raw: `{"defaultQeue":"team-a"}`, wantErr: `unknown field "defaultQeue"`},
		{name: "trailing data", raw: `{"defaultQueue":"a"} {}`, wantErr: "decoding scheduler profile config"},
		{name: "empty queue", raw: `{"defaultQueue":""}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{}
			err := b.Init(context.Background(), backend.InitContext{Config: []byte(tc.raw), Logger: logr.Discard()})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, b.cfg)
		})
	}
}

func pcs(labels map[string]string, cliqueLabels ...map[string]string) *corev1alpha1.PodCliqueSet {
	p := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "inf", Labels: labels}}
	for i, l := range cliqueLabels {
		p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, &corev1alpha1.PodCliqueTemplateSpec{Name: string(rune('a' + i)), Labels: l})
	}
	return p
}

// replicaWide gives p a required block at the PodCliqueSet level and a scaling group of its
// first clique with minAvailable 1 and the given replicas.
func replicaWide(p *corev1alpha1.PodCliqueSet, replicas int32) *corev1alpha1.PodCliqueSet {
	p.Spec.Template.TopologyConstraint = &corev1alpha1.TopologyConstraint{TopologyName: "fabric", Pack: &corev1alpha1.TopologyPackConstraint{Required: "block"}}
	p.Spec.Template.PodCliqueScalingGroupConfigs = []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "g",
		CliqueNames: []string{p.Spec.Template.Cliques[0].Name}, Replicas: ptr.To(replicas), MinAvailable: ptr.To[int32](1)}}
	return p
}

func TestQueueResolution(t *testing.T) {
	q := LabelQueue
	annotated := func(p *corev1alpha1.PodCliqueSet, a map[string]string, clique int, ca map[string]string) *corev1alpha1.PodCliqueSet {
		p.Annotations = a
		if clique >= 0 {
			p.Spec.Template.Cliques[clique].Annotations = ca
		}
		return p
	}
	cases := []struct {
		name         string
		defaultQueue string
		pcs          *corev1alpha1.PodCliqueSet
		wantQueue    string
		wantFields   []string
		wantDetail   string
	}{
		{name: "queue label on the PodCliqueSet", pcs: pcs(map[string]string{q: "team-a"}, nil, nil), wantQueue: "team-a"},
		{name: "queue annotation on the PodCliqueSet", pcs: annotated(pcs(nil, nil), map[string]string{q: "team-a"}, -1, nil), wantQueue: "team-a"},
		{name: "label and annotation agree", pcs: annotated(pcs(map[string]string{q: "team-a"}, nil), map[string]string{q: "team-a"}, -1, nil), wantQueue: "team-a"},
		{name: "label and annotation disagree", pcs: annotated(pcs(map[string]string{q: "team-a"}, nil), map[string]string{q: "team-b"}, -1, nil),
			wantFields: []string{"metadata.annotations[kai.scheduler/queue]"}, wantDetail: `must equal the label kai.scheduler/queue="team-a"`},
		{name: "cliques repeat the queue", pcs: pcs(map[string]string{q: "team-a"}, map[string]string{q: "team-a"}, nil), wantQueue: "team-a"},
		{name: "default queue", defaultQueue: "shared", pcs: pcs(nil, nil), wantQueue: "shared"},
		{name: "no queue", pcs: pcs(nil, nil), wantFields: []string{"metadata.labels[kai.scheduler/queue]"}, wantDetail: "label (or annotate) the PodCliqueSet or its cliques"},
		{name: "clique disagrees with the PodCliqueSet", pcs: pcs(map[string]string{q: "team-a"}, nil, map[string]string{q: "team-b"}),
			wantFields: []string{"spec.template.cliques[1].labels[kai.scheduler/queue]"}, wantDetail: `must equal the PodCliqueSet's KAI queue "team-a"`},
		{name: "clique annotation disagrees with the PodCliqueSet", pcs: annotated(pcs(map[string]string{q: "team-a"}, nil), nil, 0, map[string]string{q: "team-b"}),
			wantFields: []string{"spec.template.cliques[0].annotations[kai.scheduler/queue]"}},
		// Dynamo puts the queue on the cliques only.
		{name: "queue on the cliques only", pcs: pcs(nil, map[string]string{q: "team-a"}, nil, map[string]string{q: "team-a"}), wantQueue: "team-a"},
		{name: "queue on a clique annotation only", pcs: annotated(pcs(nil, nil), nil, 0, map[string]string{q: "team-a"}), wantQueue: "team-a"},
		{name: "a clique's queue wins over the default queue", defaultQueue: "shared", pcs: pcs(nil, map[string]string{q: "team-b"}), wantQueue: "team-b"},
		{name: "cliques disagree", pcs: pcs(nil, map[string]string{q: "team-a"}, nil, map[string]string{q: "team-b"}),
			wantFields: []string{"spec.template.cliques[2].labels[kai.scheduler/queue]"}, wantDetail: `different KAI queues ["team-a" "team-b"]`},
		{name: "empty queue label", pcs: pcs(map[string]string{q: ""}), wantFields: []string{"metadata.labels[kai.scheduler/queue]"}},
		{name: "PodCliqueSet domain over scaled PodGangs", pcs: replicaWide(pcs(map[string]string{q: "team-a"}, nil), 3), wantQueue: "team-a",
			wantFields: []string{"spec.template.topologyConstraint.pack.required"}, wantDetail: `scaling group "g" has PodGangs beyond its minAvailable`},
		{name: "PodCliqueSet domain, no scaled PodGangs", pcs: replicaWide(pcs(map[string]string{q: "team-a"}, nil), 1), wantQueue: "team-a"},
		{name: "queue that is no label value", pcs: annotated(pcs(nil, nil), map[string]string{q: "team a"}, -1, nil),
			wantFields: []string{"metadata.annotations[kai.scheduler/queue]"}, wantDetail: "valid label value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{cfg: Config{DefaultQueue: tc.defaultQueue}}
			_, errs := b.ValidatePodCliqueSet(context.Background(), tc.pcs)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tc.wantFields, fields)
			if tc.wantDetail != "" {
				require.NotEmpty(t, errs)
				assert.Contains(t, errs[0].Detail, tc.wantDetail)
			}
			labels, annotations := b.PodGangMetadata(tc.pcs)
			assert.Equal(t, map[string]string{"kai.scheduler/skip-podgrouper": "true"}, annotations)
			if tc.wantQueue != "" {
				assert.Equal(t, map[string]string{q: tc.wantQueue}, labels)
			} else {
				assert.Empty(t, labels)
			}
		})
	}
}

func TestPreparePodPointsAtPodGroupAndSubGroup(t *testing.T) {
	long := "inference-with-a-rather-long-name-0-workers-12-prefill-leader-pods"
	cases := []struct {
		podGroup, wantSubGroup string
	}{
		{"inf-0-workers-0-prefill", "inf-0-workers-0-prefill"},
		{long, common.ShortenLabelValue(long)},
	}
	for _, tc := range cases {
		pod := backendtest.Pod()
		(&Backend{}).PreparePod(pod, backend.PodGangRef{Name: "inf-0", PodGroup: tc.podGroup})
		assert.Equal(t, "kai-scheduler", pod.Spec.SchedulerName)
		assert.Equal(t, map[string]string{"pod-group-name": "inf-0", "kai.scheduler/skip-podgrouper": "true"}, pod.Annotations)
		assert.Equal(t, map[string]string{"kai.scheduler/subgroup-name": tc.wantSubGroup}, pod.Labels)
		assert.LessOrEqual(t, len(pod.Labels["kai.scheduler/subgroup-name"]), 63)
	}
}

func TestDesiredPodGroupRejectsGangsKAICannotNest(t *testing.T) {
	groups := []schedv1alpha1.PodGroup{{Name: "a", MinReplicas: 1}, {Name: "b", MinReplicas: 1}}
	cases := []struct {
		name    string
		groups  []schedv1alpha1.PodGroup
		configs []schedv1alpha1.TopologyConstraintGroupConfig
		wantErr string
	}{
		{name: "group twice", groups: append(groups, groups[0]), wantErr: `lists PodGroup "a" twice`},
		{name: "unknown group", groups: groups, configs: []schedv1alpha1.TopologyConstraintGroupConfig{{Name: "g", PodGroupNames: []string{"c"}}},
			wantErr: `names unknown PodGroup "c"`},
		{name: "two parents", groups: groups, configs: []schedv1alpha1.TopologyConstraintGroupConfig{
			{Name: "g1", PodGroupNames: []string{"a"}}, {Name: "g2", PodGroupNames: []string{"a", "b"}}}, wantErr: `is in topology group configs "g1" and "g2"`},
		{name: "config named like a group", groups: groups, configs: []schedv1alpha1.TopologyConstraintGroupConfig{{Name: "b", PodGroupNames: []string{"a"}}},
			wantErr: `config "b" has the name of another KAI subGroup`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pg := backendtest.PodGang("ns", "gang", "", tc.groups)
			pg.Spec.TopologyConstraintGroupConfigs = tc.configs
			_, err := desiredPodGroup(pg, "q", "", false)
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tc.wantErr), err.Error())
		})
	}
}

func TestPodsJoinTheSubGroupOfTheirPodGroupEvenWithLongNames(t *testing.T) {
	long := "inference-with-a-rather-long-name-0-workers-12-prefill-leader-pods"
	pg := backendtest.PodGang("ns", "gang", "", []schedv1alpha1.PodGroup{{Name: long, MinReplicas: 0}, {Name: "b", MinReplicas: 2}})
	u, err := desiredPodGroup(pg, "q", "", false)
	require.NoError(t, err)
	pod := backendtest.Pod()
	(&Backend{}).PreparePod(pod, backend.PodGangRef{Name: "gang", PodGroup: long})
	backendtest.JSONEqYAML(t, fmt.Sprintf(`
queue: q
minMember: 2
subGroups:
- name: %s
- name: b
  minMember: 2
`, pod.Labels[LabelSubGroupName]), u.Object["spec"], "a group with minReplicas 0 leaves minMember unset (KAI's schema needs at least 1)")
}

// kaiAdmits applies the rules KAI's PodGroup admission enforces beyond the CRD schema (KAI
// releases with minSubGroup): unique subGroup names whose parents exist; minMember and
// minSubGroup never both on one node; a leaf has minMember and no minSubGroup; a subGroup with
// children has no minMember, and no node requires more children than it has.
func kaiAdmits(t *testing.T, spec map[string]any) {
	t.Helper()
	subGroups, _ := spec["subGroups"].([]any)
	children := map[string]int{}
	names := map[string]bool{}
	roots := 0
	for _, s := range subGroups {
		sg := s.(map[string]any)
		name := sg["name"].(string)
		require.False(t, names[name], "subGroup %q twice", name)
		names[name] = true
		if p, ok := sg["parent"].(string); ok {
			children[p]++
		} else {
			roots++
		}
	}
	_, hasMinMember := spec["minMember"]
	minSubGroup, hasMinSubGroup := spec["minSubGroup"].(int64)
	assert.False(t, hasMinMember && hasMinSubGroup, "minMember and minSubGroup on the PodGroup")
	assert.LessOrEqual(t, minSubGroup, int64(roots), "the PodGroup's minSubGroup exceeds its top-level subGroups")
	for _, s := range subGroups {
		sg := s.(map[string]any)
		name := sg["name"].(string)
		if p, ok := sg["parent"].(string); ok {
			assert.True(t, names[p], "subGroup %q has unknown parent %q", name, p)
		}
		_, hasMinMember := sg["minMember"]
		minSubGroup, hasMinSubGroup := sg["minSubGroup"].(int64)
		if children[name] == 0 {
			assert.True(t, hasMinMember, "leaf subGroup %q without minMember", name)
			assert.False(t, hasMinSubGroup, "leaf subGroup %q with minSubGroup", name)
			continue
		}
		assert.False(t, hasMinMember, "subGroup %q with children has minMember", name)
		assert.LessOrEqual(t, minSubGroup, int64(children[name]), "subGroup %q requires more children than it has", name)
	}
}

func TestNestedSubGroupsPassKAIAdmission(t *testing.T) {
	base, _ := backendtest.ReplicaGangs("ns", "t")
	base.Spec.PodGroups[0].MinReplicas = 0
	u, err := desiredPodGroup(base, "q", "t", true)
	require.NoError(t, err)
	kaiAdmits(t, u.Object["spec"].(map[string]any))
	backendtest.JSONEqYAML(t, `
queue: q
priorityClassName: inference-high
minMember: 3
topologyConstraint: {topology: t, requiredTopologyLevel: example.com/block}
subGroups:
- name: inf-0-workers-0
  minSubGroup: 2
  topologyConstraint: {topology: t, requiredTopologyLevel: example.com/rack}
- name: inf-0-router
  minMember: 0
- name: inf-0-workers-0-prefill
  parent: inf-0-workers-0
  minMember: 2
  topologyConstraint: {topology: t, preferredTopologyLevel: kubernetes.io/hostname}
- name: inf-0-workers-0-decode
  parent: inf-0-workers-0
  minMember: 1
`, u.Object["spec"], "a topology group config requires its PodGroups through minSubGroup; a leaf of 0 says so")
}

// sharedBlock gives the replica's gangs the PodCliqueSet-level required block the operator
// writes for a replica-wide constraint.
func sharedBlock(gangs ...*schedv1alpha1.PodGang) {
	for _, g := range gangs {
		g.Spec.SharedTopologyConstraint = &schedv1alpha1.SharedTopologyConstraint{Group: "inf-0",
			PackConstraint: &schedv1alpha1.TopologyPackConstraint{Required: ptr.To(backendtest.KeyBlock)}}
		g.Annotations[AnnotationReplicaPodGroup] = "true"
		if g.Name != "inf-0" {
			g.Labels[common.LabelBasePodGang] = "inf-0"
		}
	}
}

func TestAReplicaIsOneKAIPodGroupOfNestedGangs(t *testing.T) {
	base, scaled := backendtest.ReplicaGangs("ns", "t")
	sharedBlock(append(scaled, base)...)
	// Listed out of order: the PodGroup keeps replica order.
	u, err := desiredReplicaPodGroup(base, []*schedv1alpha1.PodGang{scaled[1], scaled[0]}, "q", "t")
	require.NoError(t, err)
	spec := u.Object["spec"].(map[string]any)
	kaiAdmits(t, spec)
	assert.Equal(t, "inf-0", u.GetName())
	backendtest.JSONEqYAML(t, `
queue: q
priorityClassName: inference-high
minSubGroup: 2
topologyConstraint: {topology: t, requiredTopologyLevel: example.com/block}
subGroups:
- {name: inf-0, minSubGroup: 2, topologyConstraint: {topology: t, requiredTopologyLevel: example.com/block}}
- {name: inf-0-workers-0, parent: inf-0, minSubGroup: 2, topologyConstraint: {topology: t, requiredTopologyLevel: example.com/rack}}
- {name: inf-0-router, parent: inf-0, minMember: 1}
- {name: inf-0-workers-0-prefill, parent: inf-0-workers-0, minMember: 2, topologyConstraint: {topology: t, preferredTopologyLevel: kubernetes.io/hostname}}
- {name: inf-0-workers-0-decode, parent: inf-0-workers-0, minMember: 1}
- {name: inf-0-scaled-podgangs, minSubGroup: 0}
- {name: inf-0-workers-0-podgang, parent: inf-0-scaled-podgangs, minSubGroup: 2, topologyConstraint: {topology: t, requiredTopologyLevel: example.com/rack}}
- {name: inf-0-workers-1-prefill, parent: inf-0-workers-0-podgang, minMember: 2, topologyConstraint: {topology: t, preferredTopologyLevel: kubernetes.io/hostname}}
- {name: inf-0-workers-1-decode, parent: inf-0-workers-0-podgang, minMember: 1}
- {name: inf-0-workers-1-podgang, parent: inf-0-scaled-podgangs, minSubGroup: 2, topologyConstraint: {topology: t, requiredTopologyLevel: example.com/rack}}
- {name: inf-0-workers-2-prefill, parent: inf-0-workers-1-podgang, minMember: 2, topologyConstraint: {topology: t, preferredTopologyLevel: kubernetes.io/hostname}}
- {name: inf-0-workers-2-decode, parent: inf-0-workers-1-podgang, minMember: 1}
`, spec, "the base gang is required; each scaled gang is optional and a gang of its own; the replica shares the block")

	t.Run("a scaled branch never takes another subGroup's name", func(t *testing.T) {
		clash := scaled[0].DeepCopy()
		clash.Spec.PodGroups[0].Name = "inf-0-workers-0-podgang"
		_, err := desiredReplicaPodGroup(base, []*schedv1alpha1.PodGang{clash}, "q", "t")
		require.ErrorContains(t, err, `has the name of another KAI subGroup`)
	})
	t.Run("without scaled gangs the base gang alone", func(t *testing.T) {
		u, err := desiredReplicaPodGroup(base, nil, "q", "t")
		require.NoError(t, err)
		kaiAdmits(t, u.Object["spec"].(map[string]any))
		assert.Equal(t, int64(1), u.Object["spec"].(map[string]any)["minSubGroup"])
	})
}
