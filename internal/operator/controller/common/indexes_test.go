package common

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ai-dynamo/grove/internal/testenv/backendtest"
	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
)

// ListManaged selects exactly what the label selector did, among the objects grove-operator
// manages: the index narrows by one label and the rest of the selector still applies.
func TestListManagedSelectsWhatTheLabelsSelect(t *testing.T) {
	pod := func(ns, name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	}
	withClique := PodCliqueSelector
	unmanaged := map[string]string{apicommon.LabelPartOfKey: "inf", apicommon.LabelPodClique: "inf-0-w"}
	objs := []client.Object{
		pod("ns", "inf-0-w-a", withClique("inf", "inf-0-w")),
		pod("ns", "inf-0-w-b", withClique("inf", "inf-0-w")),
		pod("ns", "inf-0-r-a", withClique("inf", "inf-0-r")),
		pod("ns", "look-alike", withClique("other", "inf-0-w")), // same clique label, another PodCliqueSet
		pod("ns", "unmanaged", unmanaged),                       // not grove-operator's
		pod("elsewhere", "inf-0-w-a", withClique("inf", "inf-0-w")),
	}
	b := fake.NewClientBuilder().WithScheme(backendtest.Scheme()).WithObjects(objs...)
	for _, ix := range labelIndexes {
		for _, key := range ix.keys {
			b = b.WithIndex(ix.obj, LabelIndex(key), IndexManagedLabel(key))
		}
	}
	c := b.Build()
	names := func(list *corev1.PodList) []string {
		var out []string
		for _, p := range list.Items {
			out = append(out, p.Name)
		}
		slices.Sort(out)
		return out
	}

	cases := []struct {
		name    string
		sel     map[string]string
		indexed string
		want    []string
	}{
		{"a clique's pods", withClique("inf", "inf-0-w"), apicommon.LabelPodClique, []string{"inf-0-w-a", "inf-0-w-b"}},
		{"a PodCliqueSet's pods", apicommon.DefaultLabels("inf"), apicommon.LabelPartOfKey, []string{"inf-0-r-a", "inf-0-w-a", "inf-0-w-b"}},
		{"by the clique label alone", map[string]string{apicommon.LabelPodClique: "inf-0-w"}, apicommon.LabelPodClique, []string{"inf-0-w-a", "inf-0-w-b", "look-alike"}},
		{"nothing carries the value", withClique("inf", "inf-9-w"), apicommon.LabelPodClique, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			list := &corev1.PodList{}
			require.NoError(t, ListManaged(context.Background(), c, list, "ns", tc.sel, tc.indexed))
			assert.Equal(t, tc.want, names(list))
		})
	}

	err := ListManaged(context.Background(), c, &corev1.PodList{}, "ns", apicommon.DefaultLabels("inf"), apicommon.LabelPodClique)
	assert.ErrorContains(t, err, apicommon.LabelPodClique, "a selector without the indexed label is a programming error, not an empty list")
}
