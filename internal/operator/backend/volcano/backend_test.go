package volcano

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// tiersConfig maps the test topology's block and rack keys to HyperNode tiers 2 and 1.
const tiersConfig = `{"topologyTiers":[{"key":"example.com/block","tier":2},{"key":"example.com/rack","tier":1}]}`

func TestInitDecodesConfigStrictly(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		want    Config
		wantErr string
	}{
		{name: "no config: Volcano's default queue", raw: "", want: Config{DefaultQueue: "default"}},
		{name: "default queue", raw: `{"defaultQueue":"team-a"}`, want: Config{DefaultQueue: "team-a"}},
		{name: "tiers by number and by name", raw: `{"topologyTiers":[{"key":"example.com/rack","tier":1},{"key":"example.com/block","tierName":"example.com/block"}]}`,
			want: Config{DefaultQueue: "default", TopologyTiers: []TopologyTier{{Key: "example.com/rack", Tier: ptr.To[int32](1)}, {Key: "example.com/block", TierName: "example.com/block"}}}},
		{name: "misspelt field", raw: `{"defaultQeue":"team-a"}`, wantErr: `unknown field "defaultQeue"`},
		{name: "queue is not a DNS subdomain", raw: `{"defaultQueue":"Team_A"}`, wantErr: "defaultQueue"},
		{name: "tier without a number or name", raw: `{"topologyTiers":[{"key":"example.com/rack"}]}`, wantErr: "topologyTiers[0]: Required value"},
		{name: "tier with both", raw: `{"topologyTiers":[{"key":"example.com/rack","tier":1,"tierName":"rack"}]}`, wantErr: "topologyTiers[0].tierName: Forbidden"},
		{name: "negative tier", raw: `{"topologyTiers":[{"key":"example.com/rack","tier":-1}]}`, wantErr: "topologyTiers[0].tier"},
		{name: "duplicate key", raw: `{"topologyTiers":[{"key":"example.com/rack","tier":1},{"key":"example.com/rack","tier":2}]}`, wantErr: "topologyTiers[1].key: Duplicate"},
		{name: "bad key", raw: `{"topologyTiers":[{"key":"not a key","tier":1}]}`, wantErr: "topologyTiers[0].key"},
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

func pcsWithQueues(labels, annotations map[string]string, cliqueAnnotations ...map[string]string) *corev1alpha1.PodCliqueSet {
	p := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "inf", Labels: labels, Annotations: annotations}}
	for i, a := range cliqueAnnotations {
		p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, &corev1alpha1.PodCliqueTemplateSpec{Name: string(rune('a' + i)), Annotations: a})
	}
	return p
}

func TestResolveQueue(t *testing.T) {
	q := func(name string) map[string]string { return map[string]string{KeyQueue: name} }
	cases := []struct {
		name      string
		pcs       *corev1alpha1.PodCliqueSet
		want      string
		wantPaths []string
	}{
		{"default queue", pcsWithQueues(nil, nil, nil), "default", nil},
		{"PodCliqueSet annotation (upstream Grove, Dynamo)", pcsWithQueues(nil, q("team-a"), nil), "team-a", nil},
		{"PodCliqueSet label", pcsWithQueues(q("team-a"), nil, nil), "team-a", nil},
		{"cliques agree", pcsWithQueues(nil, nil, q("team-b"), q("team-b"), nil), "team-b", nil},
		{"clique repeats the PodCliqueSet's", pcsWithQueues(nil, q("team-a"), q("team-a")), "team-a", nil},
		{"clique differs from the PodCliqueSet", pcsWithQueues(nil, q("team-a"), nil, q("team-b")), "",
			[]string{"spec.template.cliques[1].annotations[scheduling.grove.io/volcano-queue]"}},
		{"cliques differ", pcsWithQueues(nil, nil, q("team-a"), q("team-b")), "",
			[]string{"spec.template.cliques[1].annotations[scheduling.grove.io/volcano-queue]"}},
		{"label and annotation differ", pcsWithQueues(q("team-a"), q("team-b")), "",
			[]string{"metadata.annotations[scheduling.grove.io/volcano-queue]"}},
		{"malformed", pcsWithQueues(nil, q("Team_A")), "", []string{"metadata.annotations[scheduling.grove.io/volcano-queue]"}},
		{"empty", pcsWithQueues(nil, q("")), "", []string{"metadata.annotations[scheduling.grove.io/volcano-queue]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := ResolveQueue(tc.pcs, DefaultQueue)
			var paths []string
			for _, e := range errs {
				paths = append(paths, e.Field)
			}
			assert.Equal(t, tc.wantPaths, paths)
			if tc.wantPaths == nil {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestPreparePodNamesThePodGroupAndTask(t *testing.T) {
	b := &Backend{}
	pod := &corev1.Pod{}
	b.PreparePod(pod, backend.PodGangRef{Name: "inf-0", PodGroup: "inf-0-router"})
	assert.Equal(t, "volcano", pod.Spec.SchedulerName)
	assert.Equal(t, map[string]string{
		"scheduling.k8s.io/group-name":     "inf-0",
		"scheduling.volcano.sh/group-name": "inf-0",
		"volcano.sh/task-spec":             "inf-0-router",
	}, pod.Annotations)
}

func TestPodGangMetadataCarriesTheQueue(t *testing.T) {
	b := &Backend{cfg: Config{DefaultQueue: "default"}}
	labels, annotations := b.PodGangMetadata(pcsWithQueues(nil, map[string]string{KeyQueue: "team-a"}))
	assert.Nil(t, labels)
	assert.Equal(t, map[string]string{KeyQueue: "team-a"}, annotations)
	_, annotations = b.PodGangMetadata(pcsWithQueues(nil, nil))
	assert.Equal(t, map[string]string{KeyQueue: "default"}, annotations)
}

func loadConfig(t *testing.T, raw string) *Config {
	t.Helper()
	b := &Backend{}
	require.NoError(t, b.Init(context.Background(), backend.InitContext{Config: []byte(raw), Logger: logr.Discard()}))
	return &b.cfg
}

func TestPodGroupOfAScaledPodGang(t *testing.T) {
	_, scaled := backendtest.ReplicaGangs("ns", "topo")
	g := scaled[0]
	g.UID = "uid-1"
	g.Annotations[KeyQueue] = "team-a"
	// prefill's preferred host is narrower than the gang's rack: Volcano cannot express it.
	_, err := desiredPodGroup(g, "team-a", loadConfig(t, tiersConfig), []string{backendtest.KeyBlock, backendtest.KeyRack, backendtest.KeyHost})
	require.ErrorContains(t, err, `PodGroup inf-0-workers-1-prefill prefers "kubernetes.io/hostname"`)
	g.Spec.PodGroups[0].TopologyConstraint = nil
	u, err := desiredPodGroup(g, queueOfPodGang(g.Annotations, g.Labels, "default"), loadConfig(t, tiersConfig),
		[]string{backendtest.KeyBlock, backendtest.KeyRack, backendtest.KeyHost})
	require.NoError(t, err)
	backendtest.JSONEqYAML(t, `
queue: team-a
priorityClassName: inference-high
minMember: 3
minTaskMember: {inf-0-workers-1-prefill: 2, inf-0-workers-1-decode: 1}
networkTopology: {mode: hard, highestTierAllowed: 1}
`, u.Object["spec"])
	assert.Equal(t, "inf-0-workers-0", u.GetName())
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "grove-operator", "grove.io/podgang": "inf-0-workers-0"}, u.GetLabels())
	require.Len(t, u.GetOwnerReferences(), 1)
	assert.Equal(t, "PodGang", u.GetOwnerReferences()[0].Kind)
}

func TestNetworkTopology(t *testing.T) {
	keys := []string{backendtest.KeyBlock, backendtest.KeyRack, backendtest.KeyHost}
	tc := func(required, preferred string) *schedv1alpha1.TopologyConstraint {
		p := &schedv1alpha1.TopologyPackConstraint{}
		if required != "" {
			p.Required = ptr.To(required)
		}
		if preferred != "" {
			p.Preferred = ptr.To(preferred)
		}
		return &schedv1alpha1.TopologyConstraint{PackConstraint: p}
	}
	gang := func(gangTC, groupTC *schedv1alpha1.TopologyConstraint) *schedv1alpha1.PodGang {
		g := backendtest.PodGang("ns", "g", "topo", []schedv1alpha1.PodGroup{{Name: "a", MinReplicas: 1, TopologyConstraint: groupTC}})
		g.Spec.TopologyConstraint = gangTC
		return g
	}
	cases := []struct {
		name    string
		cfg     string
		pg      *schedv1alpha1.PodGang
		want    map[string]any
		wantErr string
	}{
		{"none", tiersConfig, gang(nil, nil), nil, ""},
		{"required block: hard at tier 2", tiersConfig, gang(tc(backendtest.KeyBlock, ""), nil), map[string]any{"mode": "hard", "highestTierAllowed": int64(2)}, ""},
		{"required by tier name", `{"topologyTiers":[{"key":"example.com/rack","tierName":"leaf"}]}`, gang(tc(backendtest.KeyRack, ""), nil),
			map[string]any{"mode": "hard", "highestTierName": "leaf"}, ""},
		{"preferred alone: soft", tiersConfig, gang(tc("", backendtest.KeyHost), nil), map[string]any{"mode": "soft"}, ""},
		{"required equals preferred", tiersConfig, gang(tc(backendtest.KeyRack, backendtest.KeyRack), nil), map[string]any{"mode": "hard", "highestTierAllowed": int64(1)}, ""},
		{"required and a narrower preferred", tiersConfig, gang(tc(backendtest.KeyBlock, backendtest.KeyRack), nil), nil, "cannot express preferred"},
		{"required and a broader preferred: implied", tiersConfig, gang(tc(backendtest.KeyRack, backendtest.KeyBlock), nil), map[string]any{"mode": "hard", "highestTierAllowed": int64(1)}, ""},
		{"required key without a tier", tiersConfig, gang(tc(backendtest.KeyHost, ""), nil), nil, "no HyperNode tier"},
		{"group inside the gang's domain", tiersConfig, gang(tc(backendtest.KeyRack, ""), tc(backendtest.KeyBlock, "")), map[string]any{"mode": "hard", "highestTierAllowed": int64(1)}, ""},
		{"group narrower than the gang's domain", tiersConfig, gang(tc(backendtest.KeyBlock, ""), tc(backendtest.KeyRack, "")), nil, "PodGroup a requires"},
		{"group preferring inside a soft gang", tiersConfig, gang(tc("", backendtest.KeyBlock), tc("", backendtest.KeyHost)), map[string]any{"mode": "soft"}, ""},
		{"group requiring inside a soft gang", tiersConfig, gang(tc("", backendtest.KeyBlock), tc(backendtest.KeyRack, "")), nil, "PodGroup a requires"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := networkTopology(c.pg, loadConfig(t, c.cfg), keys)
			if c.wantErr != "" {
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}

	t.Run("a scaled gang cannot follow its base gang's required domain", func(t *testing.T) {
		g := gang(tc(backendtest.KeyRack, ""), nil)
		g.Spec.SharedTopologyConstraint = &schedv1alpha1.SharedTopologyConstraint{Group: "base", PackConstraint: tc(backendtest.KeyBlock, "").PackConstraint}
		_, err := networkTopology(g, loadConfig(t, tiersConfig), keys)
		require.ErrorContains(t, err, "base PodGang base")
		g.Spec.SharedTopologyConstraint.Group = "g" // the base gang itself
		_, err = networkTopology(g, loadConfig(t, tiersConfig), keys)
		require.NoError(t, err)
	})
}
