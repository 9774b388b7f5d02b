package hash

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

func clique(name, image string) *corev1alpha1.PodCliqueTemplateSpec {
	c := &corev1alpha1.PodCliqueTemplateSpec{Name: name}
	c.Spec.Replicas = 2
	c.Spec.PodSpec.Containers = []corev1.Container{{Name: "c", Image: image}}
	return c
}

func TestPodTemplate(t *testing.T) {
	base := PodTemplate(clique("a", "img:1"), "")
	assert.Regexp(t, `^[bcdfghjklmnpqrstvwxz2456789]+$`, base, "label-safe")
	assert.LessOrEqual(t, len(base), 63)
	assert.Equal(t, base, PodTemplate(clique("a", "img:1"), ""), "deterministic")

	cases := []struct {
		name   string
		mutate func(*corev1alpha1.PodCliqueTemplateSpec) string
		same   bool
	}{
		{"image", func(c *corev1alpha1.PodCliqueTemplateSpec) string {
			c.Spec.PodSpec.Containers[0].Image = "img:2"
			return ""
		}, false},
		{"label", func(c *corev1alpha1.PodCliqueTemplateSpec) string { c.Labels = map[string]string{"k": "v"}; return "" }, false},
		{"annotation", func(c *corev1alpha1.PodCliqueTemplateSpec) string {
			c.Annotations = map[string]string{"k": "v"}
			return ""
		}, false},
		{"priority class", func(*corev1alpha1.PodCliqueTemplateSpec) string { return "high" }, false},
		{"replicas do not matter", func(c *corev1alpha1.PodCliqueTemplateSpec) string { c.Spec.Replicas = 9; return "" }, true},
		{"minAvailable does not matter", func(c *corev1alpha1.PodCliqueTemplateSpec) string {
			c.Spec.MinAvailable = new(int32)
			return ""
		}, true},
		{"clique name does not matter", func(c *corev1alpha1.PodCliqueTemplateSpec) string { c.Name = "b"; return "" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := clique("a", "img:1")
			pc := tc.mutate(c)
			if tc.same {
				assert.Equal(t, base, PodTemplate(c, pc))
			} else {
				assert.NotEqual(t, base, PodTemplate(c, pc))
			}
		})
	}
}

func TestPodCliqueSetGeneration(t *testing.T) {
	tmpl := func(cliques ...*corev1alpha1.PodCliqueTemplateSpec) *corev1alpha1.PodCliqueSetTemplateSpec {
		return &corev1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques}
	}
	base := PodCliqueSetGeneration(tmpl(clique("a", "img:1"), clique("b", "img:1")))
	cases := []struct {
		name string
		t    *corev1alpha1.PodCliqueSetTemplateSpec
		same bool
	}{
		{"clique order does not matter", tmpl(clique("b", "img:1"), clique("a", "img:1")), true},
		{"one clique's image", tmpl(clique("a", "img:1"), clique("b", "img:2")), false},
		{"a clique renamed", tmpl(clique("a", "img:1"), clique("c", "img:1")), false},
		{"a clique removed", tmpl(clique("a", "img:1")), false},
		{"priority class", &corev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("a", "img:1"), clique("b", "img:1")}, PriorityClassName: "high"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.same {
				assert.Equal(t, base, PodCliqueSetGeneration(tc.t))
			} else {
				assert.NotEqual(t, base, PodCliqueSetGeneration(tc.t))
			}
		})
	}
}

// The hashes are on every existing PodClique and pod: a change of the encoding would start a
// rollout of every PodCliqueSet on upgrade. The value was computed by an earlier release.
func TestTemplatesKeepTheHashesObjectsCarry(t *testing.T) {
	tmpl := &corev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*corev1alpha1.PodCliqueTemplateSpec{clique("b", "img:1"), clique("a", "img:2")}, PriorityClassName: "high"}
	h := NewTemplates(tmpl)
	assert.Equal(t, "b6c4494dbf44d9d79fb", h.Generation())
	assert.Equal(t, h.Generation(), PodCliqueSetGeneration(tmpl))
	assert.Equal(t, PodTemplate(tmpl.Cliques[0], "high"), h.Clique("b"))
	assert.Equal(t, PodTemplate(tmpl.Cliques[1], "high"), h.Clique("a"))
	assert.Empty(t, h.Clique("c"))
}
