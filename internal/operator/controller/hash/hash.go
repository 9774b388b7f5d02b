// Package hash computes the hashes Grove puts on objects to tell which template they were
// built from: the pod template hash of a clique and the generation hash of a PodCliqueSet.
package hash

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// PodTemplate is the hash of what a clique's pods are made of: its labels, annotations, pod
// spec and the PodCliqueSet's priority class. Any change to them changes the hash.
func PodTemplate(clique *corev1alpha1.PodCliqueTemplateSpec, priorityClassName string) string {
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: clique.Labels, Annotations: clique.Annotations},
		Spec:       clique.Spec.PodSpec,
	}
	tmpl.Spec.PriorityClassName = priorityClassName
	return sum(tmpl)
}

// PodCliqueSetGeneration is the hash of every clique's pod template, independent of clique
// order: replicas converge to it (rolling updates compare against it).
func PodCliqueSetGeneration(t *corev1alpha1.PodCliqueSetTemplateSpec) string {
	return NewTemplates(t).Generation()
}

// Templates holds the hashes of one PodCliqueSet template, computed once. Hashing JSON-encodes
// a clique's whole pod spec: a reconcile of a scaling group with hundreds of members that
// hashed per member spent more time there than on anything else.
// The template must not change while a Templates made from it is in use.
type Templates struct {
	cliques    map[string]string
	generation string
}

// NewTemplates hashes each clique of t and the template as a whole.
func NewTemplates(t *corev1alpha1.PodCliqueSetTemplateSpec) *Templates {
	type entry struct {
		Name string `json:"name"`
		Hash string `json:"hash"`
	}
	h := &Templates{cliques: make(map[string]string, len(t.Cliques))}
	entries := make([]entry, 0, len(t.Cliques))
	for _, c := range t.Cliques {
		if c != nil {
			e := entry{Name: c.Name, Hash: PodTemplate(c, t.PriorityClassName)}
			h.cliques[c.Name] = e.Hash
			entries = append(entries, e)
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	h.generation = sum(entries)
	return h
}

// Clique is the PodTemplate hash of the clique named name ("" when the template has none).
func (h *Templates) Clique(name string) string { return h.cliques[name] }

// Generation is PodCliqueSetGeneration of the template.
func (h *Templates) Generation() string { return h.generation }

// sum is FNV-64a over the JSON encoding (maps are encoded with sorted keys, so it is stable),
// made safe for label values.
func sum(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only unsupported types fail to marshal; API types never do.
		panic(fmt.Sprintf("hashing %T: %v", v, err))
	}
	h := fnv.New64a()
	_, _ = h.Write(b)
	return rand.SafeEncodeString(fmt.Sprint(h.Sum64()))
}
