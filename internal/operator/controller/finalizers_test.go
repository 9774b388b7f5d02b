package controller_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	apicommon "github.com/ai-dynamo/grove/pkg/api/common"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
)

// TestChildrenAreCreatedWithTheirFinalizers: the PodCliques and PodCliqueScalingGroups a
// PodCliqueSet makes carry their controller's finalizer in their first version (as a watch
// sees it), so no controller patches it in after the create. It failed for scaling groups,
// whose controller patched their finalizer in after the create.
func TestChildrenAreCreatedWithTheirFinalizers(t *testing.T) {
	e := newEnv(t)
	var (
		mu    sync.Mutex
		first = map[string][]string{} // kind/name → finalizers of the first version
	)
	for _, list := range []client.ObjectList{&corev1alpha1.PodCliqueList{}, &corev1alpha1.PodCliqueScalingGroupList{}} {
		events, stop := e.watchAll(list)
		t.Cleanup(stop)
		go func() {
			for ev := range events {
				obj, ok := ev.Object.(client.Object)
				if !ok || ev.Type != watch.Added {
					continue
				}
				mu.Lock()
				first[kindOf(obj)+"/"+obj.GetName()] = obj.GetFinalizers()
				mu.Unlock()
			}
		}()
	}
	e.create(disaggregated(e.ns, "fin", 1))
	e.eventually(func(c *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		want := map[string]string{
			"PodClique/fin-0-router":              apicommon.FinalizerPodClique,
			"PodClique/fin-0-workers-0-prefill":   apicommon.FinalizerPodClique,
			"PodClique/fin-0-workers-1-decode":    apicommon.FinalizerPodClique,
			"PodCliqueScalingGroup/fin-0-workers": apicommon.FinalizerPodCliqueScalingGroup,
		}
		for key, finalizer := range want {
			got, seen := first[key]
			if assert.True(c, seen, "%s created", key) {
				assert.True(c, slices.Contains(got, finalizer), "%s: first version has %s, has %v", key, finalizer, got)
			}
		}
	})
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1alpha1.PodClique:
		return "PodClique"
	case *corev1alpha1.PodCliqueScalingGroup:
		return "PodCliqueScalingGroup"
	}
	return obj.GetObjectKind().GroupVersionKind().Kind
}
