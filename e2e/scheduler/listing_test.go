package schedulere2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	corev1alpha1 "github.com/ai-dynamo/grove/pkg/api/core/v1alpha1"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// grove-operator creates grove-scheduler's pods without a scheduling gate, before their PodGang
// exists, and lists each in the PodGang when it has it. The scheduler must hold such a pod (one
// a PodClique controls) until its PodGang exists and lists it: not bound while the PodGang is
// missing, nor when it is created after a PodGang that does not list it (whose quorum is
// there), and bound once it is listed.
func TestUngatedPodIsHeldUntilItsPodGangListsIt(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.addNodes(node{name: "n1", cpu: "8"})

	// A real PodClique owns the pods: the garbage collector would delete pods of a missing owner.
	scheme := runtime.NewScheme()
	require.NoError(t, corev1alpha1.AddToScheme(scheme))
	c, err := client.New(cluster.Shared.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	pclq := &corev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "w"},
		Spec: corev1alpha1.PodCliqueSpec{RoleName: "w", Replicas: 2, PodSpec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}}
	require.NoError(t, c.Create(e.ctx, pclq))

	g := gang{name: "listed", groups: []group{{name: "w", min: 1, replicas: 2, cpu: "1"}}}
	var pods []*v1.Pod
	for i := range int32(2) {
		pod := e.memberPod(g, g.groups[0], i)
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: corev1alpha1.SchemeGroupVersion.String(), Kind: "PodClique",
			Name: pclq.Name, UID: pclq.UID, Controller: ptr.To(true)}}
		pods = append(pods, pod)
	}
	e.createPods(pods[:1])
	unbound := func(names ...string) func() (bool, string) {
		return func() (bool, string) {
			for _, p := range e.pods(g.name) {
				for _, n := range names {
					if p.Name == n && p.Spec.NodeName != "" {
						return false, fmt.Sprintf("%s bound to %s", p.Name, p.Spec.NodeName)
					}
				}
			}
			return true, ""
		}
	}
	e.holds("no pod bound while the PodGang does not exist", 3*time.Second, unbound(pods[0].Name))

	// The PodGang lists the first pod only: it is bound, the second is not.
	pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: g.name},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: "w", MinReplicas: 1,
			PodReferences: []v1alpha1.NamespacedName{{Namespace: e.ns, Name: pods[0].Name}}}}}}
	e.checker.expect(g.name, map[string]int32{"w": 1})
	require.NoError(t, e.podGangs.Create(e.ctx, pg))
	e.waitBound(g.name, 1)
	// A pod created after its PodGang, which does not list it yet (a clique scaled out): the
	// gang's quorum is there, and still the pod waits to be listed.
	e.createPods(pods[1:])
	e.holds("the pod its PodGang does not list stays unbound", 3*time.Second, unbound(pods[1].Name))

	// Listed now: bound.
	require.NoError(t, e.podGangs.Get(e.ctx, client.ObjectKeyFromObject(pg), pg))
	pg.Spec.PodGroups[0].PodReferences = append(pg.Spec.PodGroups[0].PodReferences, v1alpha1.NamespacedName{Namespace: e.ns, Name: pods[1].Name})
	require.NoError(t, e.podGangs.Update(e.ctx, pg))
	e.waitBound(g.name, 2)
}
