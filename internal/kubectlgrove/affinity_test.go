package kubectlgrove

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	schedv1alpha1 "github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// Each replica's role groups show which domain each role's bound pods are in; pods of other
// gangs, unbound pods and keys that are no level of the topology are left out.
func TestRenderRolesShowsEachRolesDomain(t *testing.T) {
	ct := &corev1alpha1.ClusterTopology{Spec: corev1alpha1.ClusterTopologySpec{Levels: []corev1alpha1.TopologyLevel{{Domain: "rack", Key: "rk"}}}}
	nodes := []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "h0", Labels: map[string]string{"rk": "r0"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "h1", Labels: map[string]string{"rk": "r1"}}},
	}
	pod := func(name, gang, clique, node string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{common.LabelPodGang: gang, common.LabelPodClique: clique}}, Spec: corev1.PodSpec{NodeName: node}}
	}
	pods := []corev1.Pod{
		pod("a", "s-0", "s-0-prefill", "h0"), pod("b", "s-0", "s-0-decode", "h1"), pod("c", "s-0", "s-0-decode", "h1"),
		pod("d", "s-0", "s-0-router", ""), pod("e", "s-1", "s-0-router", "h0"),
	}
	member := func(name string) schedv1alpha1.RoleAffinityMember {
		return schedv1alpha1.RoleAffinityMember{Name: name, PodGroupNames: []string{"s-0-" + name}}
	}
	gangs := []schedv1alpha1.PodGang{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s-0"}, Spec: schedv1alpha1.PodGangSpec{
		AffinityGroups: []schedv1alpha1.RoleAffinityGroup{
			{Name: "pd", TopologyKey: "rk", Members: []schedv1alpha1.RoleAffinityMember{member("prefill"), member("decode")}},
			{Name: "elsewhere", TopologyKey: "zk", Members: []schedv1alpha1.RoleAffinityMember{member("prefill"), member("decode")}}},
		AntiAffinityGroups: []schedv1alpha1.RoleAffinityGroup{
			{Name: "apart", TopologyKey: "rk", Required: true, Members: []schedv1alpha1.RoleAffinityMember{member("router"), member("decode")}}},
	}}}
	var out bytes.Buffer
	renderRoles(&out, ct, nodes, pods, gangs)
	assert.Equal(t, `roles ns/s-0 apart in rack (required) "apart": router: -; decode: r1
roles ns/s-0 together in rack (preferred) "pd": prefill: r0; decode: r1
`, out.String())
}
