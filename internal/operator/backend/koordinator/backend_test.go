package koordinator

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/internal/operator/backend"
	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

func initBackend(raw string) (*Backend, error) {
	b := &Backend{}
	return b, b.Init(context.Background(), backend.InitContext{Config: []byte(raw), Logger: logr.Discard()})
}

func TestInitDecodesDefaultsAndValidatesConfig(t *testing.T) {
	host := &TopologyLayer{Key: "kubernetes.io/hostname", Layer: "NodeTopologyLayer"}
	cases := []struct {
		name    string
		raw     string
		want    Config
		wantErr string
	}{
		{name: "defaults", raw: "", want: Config{GangMode: "Strict", MatchPolicy: "once-satisfied", TopologyLayers: TopologyLayers{Host: host}}},
		{name: "everything", raw: `{"gangMode":"NonStrict","matchPolicy":"only-waiting","scheduleTimeoutSeconds":60,"qosClass":"LS",
			"topologyLayers":{"rack":{"key":"example.com/rack","layer":"RackLayer"},"block":{"key":"example.com/block","layer":"BlockLayer"}}}`,
			want: Config{GangMode: "NonStrict", MatchPolicy: "only-waiting", ScheduleTimeoutSeconds: ptr.To[int32](60), QoSClass: "LS",
				TopologyLayers: TopologyLayers{Host: host, Rack: &TopologyLayer{Key: "example.com/rack", Layer: "RackLayer"},
					Block: &TopologyLayer{Key: "example.com/block", Layer: "BlockLayer"}}}},
		{name: "misspelt field", raw: `{"qosclass":"LS"}`, wantErr: `unknown field "qosclass"`},
		{name: "unknown layer name", raw: `{"topologyLayers":{"spine":{"key":"a","layer":"SpineLayer"}}}`, wantErr: `unknown field "topologyLayers.spine"`},
		{name: "gang mode", raw: `{"gangMode":"Loose"}`, wantErr: `gangMode: Unsupported value: "Loose"`},
		{name: "match policy", raw: `{"matchPolicy":"always"}`, wantErr: `matchPolicy: Unsupported value: "always"`},
		{name: "qos class", raw: `{"qosClass":"GOLD"}`, wantErr: `qosClass: Unsupported value: "GOLD"`},
		{name: "timeout", raw: `{"scheduleTimeoutSeconds":0}`, wantErr: "scheduleTimeoutSeconds: Invalid value: 0"},
		{name: "bad key", raw: `{"topologyLayers":{"rack":{"key":"not a key","layer":"RackLayer"}}}`, wantErr: "topologyLayers.rack.key: Invalid value"},
		{name: "missing layer", raw: `{"topologyLayers":{"rack":{"key":"example.com/rack"}}}`, wantErr: "topologyLayers.rack.layer: Required value"},
		{name: "key twice", raw: `{"topologyLayers":{"rack":{"key":"kubernetes.io/hostname","layer":"RackLayer"}}}`, wantErr: "topologyLayers.rack.key: Duplicate value"},
		{name: "layer twice", raw: `{"topologyLayers":{"rack":{"key":"a.io/r","layer":"L"},"block":{"key":"a.io/b","layer":"L"}}}`,
			wantErr: "topologyLayers.block.layer: Duplicate value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := initBackend(tc.raw)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, b.cfg)
		})
	}
}

func TestPreparePodJoinsTheKoordinatorPodGroup(t *testing.T) {
	plain, err := initBackend("")
	require.NoError(t, err)
	withQoS, err := initBackend(`{"qosClass":"LSR"}`)
	require.NoError(t, err)
	long := "inference-with-a-rather-long-name-0-workers-12"
	cases := []struct {
		name       string
		b          *Backend
		ref        backend.PodGangRef
		wantLabels map[string]string
	}{
		{"plain", plain, backend.PodGangRef{Name: "inf-0", PodGroup: "inf-0-router"},
			map[string]string{"pod-group.scheduling.sigs.k8s.io": "inf-0-inf-0-router"}},
		{"qos class", withQoS, backend.PodGangRef{Name: "inf-0", PodGroup: "inf-0-router"},
			map[string]string{"pod-group.scheduling.sigs.k8s.io": "inf-0-inf-0-router", "koordinator.sh/qosClass": "LSR"}},
		{"long names", plain, backend.PodGangRef{Name: long, PodGroup: long + "-prefill"},
			map[string]string{"pod-group.scheduling.sigs.k8s.io": common.ShortenLabelValue(long + "-" + long + "-prefill")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := backendtest.Pod()
			tc.b.PreparePod(pod, tc.ref)
			assert.Equal(t, "koord-scheduler", pod.Spec.SchedulerName)
			assert.Equal(t, tc.wantLabels, pod.Labels)
			assert.LessOrEqual(t, len(pod.Labels[LabelPodGroup]), 63)
		})
	}
}

func TestNetworkTopologySpecGathersOnConfiguredLayers(t *testing.T) {
	layers := TopologyLayers{
		Host:  &TopologyLayer{Key: "kubernetes.io/hostname", Layer: "NodeTopologyLayer"},
		Block: &TopologyLayer{Key: "example.com/block", Layer: "BlockLayer"},
	}
	c := func(required, preferred string) *schedv1alpha1.TopologyConstraint {
		p := &schedv1alpha1.TopologyPackConstraint{}
		if required != "" {
			p.Required = ptr.To(required)
		}
		if preferred != "" {
			p.Preferred = ptr.To(preferred)
		}
		return &schedv1alpha1.TopologyConstraint{PackConstraint: p}
	}
	cases := []struct {
		name        string
		constraints []*schedv1alpha1.TopologyConstraint
		want        string
		wantErr     string
	}{
		{name: "none", constraints: []*schedv1alpha1.TopologyConstraint{nil, {}}, want: ""},
		{name: "required", constraints: []*schedv1alpha1.TopologyConstraint{c("example.com/block", "")},
			want: `{"gatherStrategy":[{"layer":"BlockLayer","strategy":"MustGather"}]}`},
		{name: "gang required, group preferred", constraints: []*schedv1alpha1.TopologyConstraint{c("example.com/block", ""), c("", "kubernetes.io/hostname")},
			want: `{"gatherStrategy":[{"layer":"BlockLayer","strategy":"MustGather"},{"layer":"NodeTopologyLayer","strategy":"PreferGather"}]}`},
		{name: "required beats preferred on one layer", constraints: []*schedv1alpha1.TopologyConstraint{c("", "example.com/block"), c("example.com/block", "")},
			want: `{"gatherStrategy":[{"layer":"BlockLayer","strategy":"MustGather"}]}`},
		{name: "unmapped key", constraints: []*schedv1alpha1.TopologyConstraint{c("example.com/rack", "")}, wantErr: `topology key "example.com/rack" has no Koordinator layer`},
		{name: "unmapped preferred key", constraints: []*schedv1alpha1.TopologyConstraint{c("", "example.com/rack")}, wantErr: `"example.com/rack"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := networkTopologySpec(layers, tc.constraints...)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func networkTopology(layers ...map[string]any) *unstructured.Unstructured {
	var items []any
	for _, l := range layers {
		items = append(items, l)
	}
	return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"networkTopologySpec": items}}}
}

func layer(name, parent string, keys ...string) map[string]any {
	m := map[string]any{"topologyLayer": name}
	if parent != "" {
		m["parentTopologyLayer"] = parent
	}
	if keys != nil {
		var ks []any
		for _, k := range keys {
			ks = append(ks, k)
		}
		m["labelKey"] = ks
	}
	return m
}

func TestLayerKeysFollowTheParentChain(t *testing.T) {
	cases := []struct {
		name    string
		obj     *unstructured.Unstructured
		want    []string
		wantErr string
	}{
		{name: "listed child first", obj: networkTopology(layer("NodeTopologyLayer", "RackLayer"), layer("RackLayer", "BlockLayer", "r"), layer("BlockLayer", "", "b")),
			want: []string{"b", "r", "kubernetes.io/hostname"}},
		{name: "cluster layer as root", obj: networkTopology(layer("ClusterTopologyLayer", ""), layer("BlockLayer", "ClusterTopologyLayer", "b")), want: []string{"b"}},
		{name: "two children", obj: networkTopology(layer("A", "", "a"), layer("B", "A", "b"), layer("C", "A", "c")), wantErr: `share the parent "A"`},
		{name: "two keys", obj: networkTopology(layer("A", "", "a", "a2")), wantErr: `layer "A" has label keys ["a" "a2"]`},
		{name: "orphan", obj: networkTopology(layer("A", "", "a"), layer("B", "X", "b")), wantErr: "not every layer descends"},
		{name: "no key", obj: networkTopology(layer("A", "")), wantErr: `layer "A" has label keys []`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := layerKeys(tc.obj)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestValidatePodCliqueSetRejectsMNNVLAndScalingGroupTopology(t *testing.T) {
	b, err := initBackend("")
	require.NoError(t, err)
	mnnvl := map[string]string{common.AnnotationAutoMNNVL: common.AnnotationAutoMNNVLEnabled}
	cases := []struct {
		name       string
		pcs        *corev1alpha1.PodCliqueSet
		wantFields []string
	}{
		{name: "plain", pcs: &corev1alpha1.PodCliqueSet{}},
		{name: "mnnvl disabled", pcs: &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{common.AnnotationAutoMNNVL: "disabled"}}}},
		{name: "mnnvl on the PodCliqueSet", pcs: &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Annotations: mnnvl}},
			wantFields: []string{"metadata.annotations[grove.io/auto-mnnvl]"}},
		{name: "mnnvl on a clique", pcs: &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*corev1alpha1.PodCliqueTemplateSpec{{Name: "a"}, {Name: "b", Annotations: mnnvl}}}}},
			wantFields: []string{"spec.template.cliques[1].annotations[grove.io/auto-mnnvl]"}},
		{name: "scaling group topology", pcs: &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "a"},
				{Name: "b", TopologyConstraint: &corev1alpha1.TopologyConstraint{PackDomain: corev1alpha1.TopologyDomainRack}}}}}},
			wantFields: []string{"spec.template.podCliqueScalingGroups[1].topologyConstraint"}},
		{name: "PodCliqueSet domain over scaled PodGangs", pcs: &corev1alpha1.PodCliqueSet{Spec: corev1alpha1.PodCliqueSetSpec{Template: corev1alpha1.PodCliqueSetTemplateSpec{
			TopologyConstraint:           &corev1alpha1.TopologyConstraint{PackDomain: corev1alpha1.TopologyDomainRack},
			PodCliqueScalingGroupConfigs: []corev1alpha1.PodCliqueScalingGroupConfig{{Name: "a", ScaleConfig: &corev1alpha1.AutoScalingConfig{MaxReplicas: 4}}}}}},
			wantFields: []string{"spec.template.topologyConstraint.packDomain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := b.ValidatePodCliqueSet(context.Background(), tc.pcs)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
				assert.Contains(t, e.Detail, "koord-scheduler cannot", "the message says what and why")
			}
			assert.Equal(t, tc.wantFields, fields)
		})
	}
}
