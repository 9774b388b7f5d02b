package common

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func TestSlowStart(t *testing.T) {
	cases := []struct {
		name      string
		n         int
		failAt    int // -1: never
		wantOK    int
		wantCalls int32
	}{
		{"all succeed", 10, -1, 10, 10},
		{"none", 0, -1, 0, 0},
		// Batches 1, 2, 4: index 5 fails in the third batch; no fourth batch runs.
		{"stops after the failing batch", 20, 5, 6, 7},
		{"first call fails", 20, 0, 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			ok, err := SlowStart(context.Background(), tc.n, func(_ context.Context, i int) error {
				calls.Add(1)
				if i == tc.failAt {
					return errors.New("rejected")
				}
				return nil
			})
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantCalls, calls.Load())
			assert.Equal(t, tc.failAt >= 0, err != nil)
		})
	}
}

func testPCS() *corev1alpha1.PodCliqueSet {
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	pcs.Spec.Template.PriorityClassName = "high"
	pcs.Spec.Template.Cliques = []*corev1alpha1.PodCliqueTemplateSpec{{
		Name: "a", Labels: map[string]string{"team": "x", apicommon.LabelPodGang: "overridden"},
		Annotations: map[string]string{"note": "y"},
		Spec:        corev1alpha1.PodCliqueSpec{Replicas: 3, StartsAfter: []string{"b"}},
	}}
	return pcs
}

func TestMutatePodClique(t *testing.T) {
	pcs := testPCS()
	clique := pcs.Spec.Template.Cliques[0]
	cases := []struct {
		name         string
		target       PodCliqueTarget
		existing     *corev1alpha1.PodClique
		wantName     string
		wantReplicas int32
		wantLabels   map[string]string
		absentLabels []string
	}{
		{
			name: "new standalone clique", target: PodCliqueTarget{PCS: pcs, Replica: 1, Clique: clique},
			existing: &corev1alpha1.PodClique{}, wantName: "p-1-a", wantReplicas: 3,
			wantLabels: map[string]string{"team": "x", apicommon.LabelPodGang: "p-1", apicommon.LabelPodCliqueSetReplicaIndex: "1",
				apicommon.LabelComponentKey: apicommon.ComponentPCSPodClique, apicommon.LabelPartOfKey: "p"},
			absentLabels: []string{apicommon.LabelBasePodGang, apicommon.LabelPodCliqueScalingGroup},
		},
		{
			name:     "existing clique keeps its scaled replicas and foreign labels",
			target:   PodCliqueTarget{PCS: pcs, Replica: 0, Clique: clique},
			existing: &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7", Labels: map[string]string{"added-by": "someone"}}, Spec: corev1alpha1.PodCliqueSpec{Replicas: 9}},
			wantName: "p-0-a", wantReplicas: 9, wantLabels: map[string]string{"added-by": "someone", apicommon.LabelPodGang: "p-0"},
		},
		{
			name:     "scaling-group replica below minAvailable is in the base gang",
			target:   PodCliqueTarget{PCS: pcs, Replica: 0, Clique: clique, Member: &ScalingGroupMember{Name: "p-0-g", Replica: 1, MinAvailable: 2}},
			existing: &corev1alpha1.PodClique{}, wantName: "p-0-g-1-a", wantReplicas: 3,
			wantLabels: map[string]string{apicommon.LabelPodGang: "p-0", apicommon.LabelPodCliqueScalingGroup: "p-0-g",
				apicommon.LabelPodCliqueScalingGroupReplicaIndex: "1", apicommon.LabelComponentKey: apicommon.ComponentPCSGPodClique},
			absentLabels: []string{apicommon.LabelBasePodGang},
		},
		{
			name:     "scaling-group replica at minAvailable forms a scaled gang",
			target:   PodCliqueTarget{PCS: pcs, Replica: 0, Clique: clique, Member: &ScalingGroupMember{Name: "p-0-g", Replica: 3, MinAvailable: 2}},
			existing: &corev1alpha1.PodClique{}, wantName: "p-0-g-3-a", wantReplicas: 3,
			wantLabels: map[string]string{apicommon.LabelPodGang: "p-0-g-1", apicommon.LabelBasePodGang: "p-0"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantName, tc.target.Name())
			pclq := tc.existing
			MutatePodClique(pclq, tc.target)
			assert.Equal(t, tc.wantReplicas, pclq.Spec.Replicas)
			for k, v := range tc.wantLabels {
				assert.Equal(t, v, pclq.Labels[k], k)
			}
			for _, k := range tc.absentLabels {
				assert.NotContains(t, pclq.Labels, k)
			}
			assert.NotEmpty(t, pclq.Labels[apicommon.LabelPodTemplateHash])
			assert.NotEmpty(t, pclq.Labels[apicommon.LabelPodCliqueSetGenerationHash])
			assert.Equal(t, "y", pclq.Annotations["note"])
			assert.Equal(t, "high", pclq.Spec.PodSpec.PriorityClassName)
			assert.Equal(t, ptr.To[int32](3), pclq.Spec.MinAvailable, "defaults to the template's replicas without the webhook")
			assert.Nil(t, pclq.Spec.StartsAfter)
		})
	}
}

// startupPCS has a standalone router, then a scaling group "w" (minAvailable 2) of prefill and
// decode, then a standalone frontend.
func startupPCS(startup corev1alpha1.CliqueStartupType) *corev1alpha1.PodCliqueSet {
	pcs := &corev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	pcs.Spec.Template.StartupType = &startup
	for _, name := range []string{"router", "prefill", "decode", "frontend"} {
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &corev1alpha1.PodCliqueTemplateSpec{Name: name})
	}
	pcs.Spec.Template.Clique("decode").Spec.StartsAfter = []string{"prefill", "router"}
	pcs.Spec.Template.Clique("frontend").Spec.StartsAfter = []string{"decode"}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []corev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "w", CliqueNames: []string{"prefill", "decode"}, MinAvailable: ptr.To[int32](2),
	}}
	return pcs
}

func TestStartsAfter(t *testing.T) {
	member := func(j int) *ScalingGroupMember {
		return &ScalingGroupMember{Name: "p-1-w", Replica: j, MinAvailable: 2}
	}
	cases := []struct {
		name    string
		startup corev1alpha1.CliqueStartupType
		clique  string
		member  *ScalingGroupMember
		want    []string
	}{
		{"any order: no parents", corev1alpha1.CliqueStartupTypeAnyOrder, "decode", member(0), nil},
		{"in order: the first clique starts first", corev1alpha1.CliqueStartupTypeInOrder, "router", nil, nil},
		{"in order: a base-gang member waits for the standalone clique before it", corev1alpha1.CliqueStartupTypeInOrder, "prefill", member(1),
			[]string{"p-1-router"}},
		{"in order: a member's parent in its group means the group's base-gang replicas", corev1alpha1.CliqueStartupTypeInOrder, "decode", member(0),
			[]string{"p-1-w-0-prefill", "p-1-w-1-prefill"}},
		{"in order: a standalone clique after a group waits for the base-gang replicas", corev1alpha1.CliqueStartupTypeInOrder, "frontend", nil,
			[]string{"p-1-w-0-decode", "p-1-w-1-decode"}},
		{"in order: a scaled replica waits only inside itself", corev1alpha1.CliqueStartupTypeInOrder, "decode", member(3),
			[]string{"p-1-w-3-prefill"}},
		{"in order: a scaled replica ignores parents outside its group", corev1alpha1.CliqueStartupTypeInOrder, "prefill", member(2), nil},
		{"explicit: base-gang member", corev1alpha1.CliqueStartupTypeExplicit, "decode", member(1),
			[]string{"p-1-w-0-prefill", "p-1-w-1-prefill", "p-1-router"}},
		{"explicit: scaled replica keeps only its own group's parents", corev1alpha1.CliqueStartupTypeExplicit, "decode", member(2),
			[]string{"p-1-w-2-prefill"}},
		{"explicit: standalone clique after a member", corev1alpha1.CliqueStartupTypeExplicit, "frontend", nil,
			[]string{"p-1-w-0-decode", "p-1-w-1-decode"}},
		{"explicit: no startsAfter", corev1alpha1.CliqueStartupTypeExplicit, "router", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := startupPCS(tc.startup)
			target := PodCliqueTarget{PCS: pcs, Replica: 1, Clique: pcs.Spec.Template.Clique(tc.clique), Member: tc.member}
			assert.Equal(t, tc.want, target.StartsAfter())
		})
	}
}
