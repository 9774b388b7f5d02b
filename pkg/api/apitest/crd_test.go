package apitest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.RunShared(m, cluster.Options{WithoutControllerManager: true, WithThirdPartyCRDs: true}))
}

func newClient(t *testing.T) client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("needs the control plane")
	}
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedv1alpha1.AddToScheme(scheme))
	require.NoError(t, apiextensionsv1.AddToScheme(scheme))
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	return c
}

func TestEveryCRDIsEstablishedWithItsNamesAndSubresources(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	tests := []struct {
		name       string
		shortNames []string
		scope      apiextensionsv1.ResourceScope
		scale      bool
	}{
		{"podcliquesets.grove.io", []string{"pcs"}, apiextensionsv1.NamespaceScoped, true},
		{"podcliques.grove.io", []string{"pclq"}, apiextensionsv1.NamespaceScoped, true},
		{"podcliquescalinggroups.grove.io", []string{"pcsg"}, apiextensionsv1.NamespaceScoped, true},
		{"clustertopologies.grove.io", []string{"ct"}, apiextensionsv1.ClusterScoped, false},
		// Upstream's kind; ct is ClusterTopology's, and the apiserver establishes no two kinds
		// of one group with the same short name.
		{"clustertopologybindings.grove.io", []string{"ctb"}, apiextensionsv1.ClusterScoped, false},
		{"podgangs.scheduler.grove.io", []string{"pgang"}, apiextensionsv1.NamespaceScoped, false},
	}
	dir, err := cluster.CRDDir()
	require.NoError(t, err)
	files, err := cluster.ReadCRDs(dir)
	require.NoError(t, err)
	require.Len(t, files, len(tests), "config/crd holds an unexpected number of CRDs")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Name: tc.name}, crd))
			assert.True(t, cluster.IsEstablished(crd))
			assert.Equal(t, tc.shortNames, crd.Spec.Names.ShortNames)
			assert.Equal(t, []string{"grove"}, crd.Spec.Names.Categories, "kubectl get grove lists it")
			assert.Equal(t, tc.scope, crd.Spec.Scope)
			require.Len(t, crd.Spec.Versions, 1)
			sub := crd.Spec.Versions[0].Subresources
			require.NotNil(t, sub)
			assert.NotNil(t, sub.Status)
			assert.Equal(t, tc.scale, sub.Scale != nil)
		})
	}
}

// TestShortNamesAreUnambiguous proves no Grove short name is also a short name, plural or kind
// of a scheduler CRD installed next to Grove (KAI, Volcano and scheduler-plugins all call their
// PodGroup "pg"), so kubectl never resolves a Grove short name to another scheduler's object.
func TestShortNamesAreUnambiguous(t *testing.T) {
	c := newClient(t)
	ours, err := cluster.CRDDir()
	require.NoError(t, err)
	theirs, err := cluster.ThirdPartyCRDDir()
	require.NoError(t, err)
	grove, err := cluster.ReadCRDs(ours)
	require.NoError(t, err)
	others, err := cluster.ReadCRDs(theirs)
	require.NoError(t, err)
	taken := map[string]string{}
	for _, o := range others {
		for _, n := range append([]string{o.Spec.Names.Plural, o.Spec.Names.Singular, strings.ToLower(o.Spec.Names.Kind)}, o.Spec.Names.ShortNames...) {
			taken[n] = o.Name
		}
	}
	for _, g := range grove {
		installed := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: g.Name}, installed))
		require.NotEmpty(t, installed.Spec.Names.ShortNames, g.Name)
		for _, sn := range installed.Spec.Names.ShortNames {
			assert.Empty(t, taken[sn], "short name %q of %s is also a name of %s", sn, g.Name, taken[sn])
		}
	}
}

// TestPodCliqueSetPrintsReadinessAndGangs proves kubectl get pcs shows the Ready condition and
// the gang counts.
func TestPodCliqueSetPrintsReadinessAndGangs(t *testing.T) {
	c := newClient(t)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "podcliquesets.grove.io"}, crd))
	paths := map[string]string{}
	for _, col := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		paths[col.Name] = col.JSONPath
	}
	assert.Equal(t, `.status.conditions[?(@.type=="Ready")].status`, paths["Ready"])
	assert.Equal(t, ".status.scheduledPodGangs", paths["Gangs-Scheduled"])
	assert.Equal(t, ".status.totalPodGangs", paths["Gangs"])
}

// TestThirdPartyCRDsAreEstablished proves the real KAI, Koordinator, Volcano and
// scheduler-plugins schemas that backends are tested against install in the apiserver.
func TestThirdPartyCRDsAreEstablished(t *testing.T) {
	c := newClient(t)
	dir, err := cluster.ThirdPartyCRDDir()
	require.NoError(t, err)
	crds, err := cluster.ReadCRDs(dir)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(crds), 9)
	for _, want := range crds {
		got := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: want.Name}, got))
		assert.True(t, cluster.IsEstablished(got), want.Name)
	}
}

func TestSamplesAreAccepted(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 3)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			u := &unstructured.Unstructured{}
			require.NoError(t, utilyaml.Unmarshal(data, &u.Object))
			if u.GetKind() != "ClusterTopology" {
				u.SetNamespace(ns)
			}
			// Strict field validation: a field the CRD does not know is an error, not pruned.
			require.NoError(t, c.Create(ctx, u, client.FieldValidation(metav1.FieldValidationStrict)))
			got := u.DeepCopy()
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(u), got))
			assert.Equal(t, u.Object["spec"], got.Object["spec"], "the apiserver pruned or changed the sample's spec")
		})
	}
}

func minimalPCS(ns, name string) *corev1alpha1.PodCliqueSet {
	return &corev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1alpha1.PodCliqueSetSpec{
			Replicas: 1,
			Template: corev1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []*corev1alpha1.PodCliqueTemplateSpec{
					{Name: "a", Spec: corev1alpha1.PodCliqueSpec{RoleName: "a", Replicas: 2, PodSpec: podSpec()}},
					{Name: "b", Spec: corev1alpha1.PodCliqueSpec{RoleName: "b", Replicas: 1, PodSpec: podSpec()}},
				},
				PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"b"}}},
			},
		},
	}
}

func TestTopologyConstraintCELRules(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	type setter func(*corev1alpha1.PodCliqueSet, *corev1alpha1.TopologyConstraint)
	levels := map[string]struct {
		set  setter
		path string
	}{
		"pcs": {func(p *corev1alpha1.PodCliqueSet, tc *corev1alpha1.TopologyConstraint) {
			p.Spec.Template.TopologyConstraint = tc
		}, "spec.template.topologyConstraint"},
		"scaling group": {func(p *corev1alpha1.PodCliqueSet, tc *corev1alpha1.TopologyConstraint) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc
		}, "spec.template.podCliqueScalingGroups[0].topologyConstraint"},
		"clique": {func(p *corev1alpha1.PodCliqueSet, tc *corev1alpha1.TopologyConstraint) {
			p.Spec.Template.Cliques[1].TopologyConstraint = tc
		}, "spec.template.cliques[1].topologyConstraint"},
	}
	cases := []struct {
		name    string
		tc      *corev1alpha1.TopologyConstraint
		wantErr string // substring after the field path; empty = accepted
		subPath string
		// acceptedAt is the one level where the constraint is accepted despite wantErr.
		acceptedAt string
	}{
		{name: "no domain", tc: &corev1alpha1.TopologyConstraint{}, wantErr: "needs a domain"},
		// The PodCliqueSet's constraint may only name the topology; its children need a domain.
		{name: "topology name only", tc: &corev1alpha1.TopologyConstraint{TopologyName: "t"}, wantErr: "needs a domain", acceptedAt: "pcs"},
		{name: "empty pack", tc: &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{}}, wantErr: "pack needs required or preferred", subPath: ".pack"},
		{name: "packDomain and pack.required", tc: &corev1alpha1.TopologyConstraint{PackDomain: "rack", Pack: &corev1alpha1.TopologyPackConstraint{Required: "rack"}},
			wantErr: "must not both be set", subPath: ".pack.required"},
		{name: "bad domain syntax", tc: &corev1alpha1.TopologyConstraint{PackDomain: "Rack"}, wantErr: "should match", subPath: ".packDomain"},
		{name: "packDomain only", tc: &corev1alpha1.TopologyConstraint{PackDomain: "rack"}},
		{name: "pack required and preferred", tc: &corev1alpha1.TopologyConstraint{Pack: &corev1alpha1.TopologyPackConstraint{Required: "block", Preferred: "host"}}},
		{name: "packDomain with pack.preferred", tc: &corev1alpha1.TopologyConstraint{PackDomain: "block", Pack: &corev1alpha1.TopologyPackConstraint{Preferred: "host"}}},
	}
	i := 0
	for levelName, level := range levels {
		for _, tc := range cases {
			i++
			t.Run(levelName+"/"+tc.name, func(t *testing.T) {
				pcs := minimalPCS(ns, "cel-"+string(rune('a'+i%26))+"-"+randSuffix(i))
				level.set(pcs, tc.tc.DeepCopy())
				err := c.Create(ctx, pcs)
				if tc.wantErr == "" || tc.acceptedAt == levelName {
					require.NoError(t, err)
					return
				}
				require.Error(t, err)
				require.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
				assert.Contains(t, err.Error(), level.path+tc.subPath+":")
				assert.Contains(t, err.Error(), tc.wantErr)
			})
		}
	}
}

func randSuffix(i int) string { return string(rune('a'+(i/26)%26)) + string(rune('a'+i%26)) + "x" }

func TestClusterTopologyValidation(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	levels := func(pairs ...string) []corev1alpha1.TopologyLevel {
		var ls []corev1alpha1.TopologyLevel
		for i := 0; i+1 < len(pairs); i += 2 {
			ls = append(ls, corev1alpha1.TopologyLevel{Domain: corev1alpha1.TopologyDomain(pairs[i]), Key: pairs[i+1]})
		}
		return ls
	}
	var seventeen []string
	for i := 0; i < 17; i++ {
		seventeen = append(seventeen, "l"+string(rune('a'+i)), "k/"+string(rune('a'+i)))
	}
	cases := []struct {
		name    string
		spec    corev1alpha1.ClusterTopologySpec
		wantErr string
	}{
		{"valid", corev1alpha1.ClusterTopologySpec{Levels: levels("zone", "z", "rack", "r")}, ""},
		{"no levels", corev1alpha1.ClusterTopologySpec{}, "spec.levels: Required value"},
		{"duplicate domain", corev1alpha1.ClusterTopologySpec{Levels: levels("rack", "a", "rack", "b")}, "domains must be unique"},
		{"duplicate key", corev1alpha1.ClusterTopologySpec{Levels: levels("zone", "a", "rack", "a")}, "keys must be unique"},
		{"bad domain", corev1alpha1.ClusterTopologySpec{Levels: levels("Zone", "a")}, "spec.levels[0].domain"},
		{"bad key", corev1alpha1.ClusterTopologySpec{Levels: levels("zone", "not a key")}, "spec.levels[0].key"},
		{"too many levels", corev1alpha1.ClusterTopologySpec{Levels: levels(seventeen...)}, "must have at most 16 items"},
		{"scheduler referenced twice", corev1alpha1.ClusterTopologySpec{Levels: levels("zone", "z"), SchedulerReferences: []corev1alpha1.SchedulerReference{
			{SchedulerName: "kai-scheduler", Reference: "a"}, {SchedulerName: "kai-scheduler", Reference: "b"}}}, "each scheduler may be referenced once"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := &corev1alpha1.ClusterTopology{ObjectMeta: metav1.ObjectMeta{Name: "ct-validation-" + randSuffix(i)}, Spec: tc.spec}
			err := c.Create(ctx, ct)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.NoError(t, c.Delete(ctx, ct))
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want 422 Invalid, got %v", err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}

func TestScaleSubresources(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	objs := []client.Object{
		minimalPCS(ns, "scaled"),
		&corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scaled-0-g"},
			Spec: corev1alpha1.PodCliqueScalingGroupSpec{Replicas: 1, MinAvailable: ptr.To[int32](1), CliqueNames: []string{"b"}}},
		&corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scaled-0-a"},
			Spec: corev1alpha1.PodCliqueSpec{RoleName: "a", Replicas: 2, PodSpec: podSpec()}},
	}
	for _, obj := range objs {
		t.Run(obj.GetObjectKind().GroupVersionKind().Kind+"/"+obj.GetName(), func(t *testing.T) {
			require.NoError(t, c.Create(ctx, obj))
			scale := &autoscalingScale{}
			require.NoError(t, c.SubResource("scale").Get(ctx, obj, &scale.Scale))
			scale.Spec.Replicas = 5
			require.NoError(t, c.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(&scale.Scale)))
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(mustGVK(t, c, obj))
			require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(obj), u))
			replicas, found, err := unstructured.NestedInt64(u.Object, "spec", "replicas")
			require.NoError(t, err)
			require.True(t, found)
			assert.EqualValues(t, 5, replicas, "/scale did not change spec.replicas")
		})
	}
}

// TestScaleSubresourcesStayWithinWhatTheOperatorHandles: /scale bypasses the PodCliqueSet
// webhook, so the CRDs themselves bound it. No replica count above common.MaxReplicas (whose
// indices would outgrow the name budget admission checked), and no scaling group at 0 (its
// base PodGang would lose the group's PodGroups).
func TestScaleSubresourcesStayWithinWhatTheOperatorHandles(t *testing.T) {
	c := newClient(t)
	ctx := context.Background()
	ns := cluster.Shared.TestNamespace(t)
	pcs := minimalPCS(ns, "bounded")
	pcsg := &corev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bounded-0-g"},
		Spec: corev1alpha1.PodCliqueScalingGroupSpec{Replicas: 2, MinAvailable: ptr.To[int32](2), CliqueNames: []string{"b"}}}
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bounded-0-a"},
		Spec: corev1alpha1.PodCliqueSpec{RoleName: "a", Replicas: 2, PodSpec: podSpec()}}
	scaleTo := func(obj client.Object, replicas int32) error {
		scale := &autoscalingScale{}
		require.NoError(t, c.SubResource("scale").Get(ctx, obj, &scale.Scale))
		scale.Spec.Replicas = replicas
		return c.SubResource("scale").Update(ctx, obj, client.WithSubResourceBody(&scale.Scale))
	}
	for _, obj := range []client.Object{pcs, pcsg, pclq} {
		require.NoError(t, c.Create(ctx, obj))
		err := scaleTo(obj, apicommon.MaxReplicas+1)
		require.True(t, apierrors.IsInvalid(err), "%T scaled to %d: %v", obj, apicommon.MaxReplicas+1, err)
		assert.Contains(t, err.Error(), "spec.replicas")
		require.NoError(t, scaleTo(obj, apicommon.MaxReplicas), "%T at the bound", obj)
	}
	// Below minAvailable is legitimate; 0 is refused with a message saying what to do.
	require.NoError(t, scaleTo(pcsg, 1))
	err := scaleTo(pcsg, 0)
	require.True(t, apierrors.IsInvalid(err), "scaling group scaled to 0: %v", err)
	assert.Contains(t, err.Error(), "spec.replicas")
	assert.Contains(t, err.Error(), "scale the PodCliqueSet")
	require.NoError(t, scaleTo(pcs, 0), "a PodCliqueSet may be scaled to 0")
}
