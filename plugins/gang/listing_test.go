package gang

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/pkg/api/scheduler/v1alpha1"
)

// operatorPod is an ungated pod grove-operator made for PodClique group of PodGang gang: its
// controller is the PodClique.
func operatorPod(gang, group string, i int, labels map[string]string) *v1.Pod {
	name := fmt.Sprintf("%s-%s-%d", gang, group, i)
	l := map[string]string{common.LabelPodGang: gang, common.LabelPodClique: group}
	for k, v := range labels {
		l[k] = v
	}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: l,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "grove.io/v1alpha1", Kind: "PodClique", Name: group, UID: "pclq", Controller: ptr.To(true)}}}}
}

// podGang is PodGang ns/name of one PodGroup group of minReplicas min that lists pods.
func podGang(name, group string, minReplicas int32, generation int64, labels map[string]string, pods ...*v1.Pod) *v1alpha1.PodGang {
	pg := &v1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation, Labels: labels},
		Spec: v1alpha1.PodGangSpec{PodGroups: []v1alpha1.PodGroup{{Name: group, MinReplicas: minReplicas, PodReferences: []v1alpha1.NamespacedName{}}}}}
	for _, p := range pods {
		pg.Spec.PodGroups[0].PodReferences = append(pg.Spec.PodGroups[0].PodReferences, v1alpha1.NamespacedName{Namespace: "ns", Name: p.Name})
	}
	return pg
}

func bind(p *Plugin, pod *v1.Pod) {
	b := pod.DeepCopy()
	b.Spec.NodeName = "node-" + pod.Name
	p.gangs.UpsertPod(b)
}

// TestUngatedPodsWaitForTheirPodGangToListThem walks the events that release grove-operator's
// ungated pods, which the plugin holds at PreEnqueue instead of a scheduling gate: each case
// records pods and PodGangs as the informers would, then checks that the event it names
// activates exactly the pods it releases (the requeue: the plugin watches PodGangs itself and
// activates pods, GangEvent) and what PreEnqueue then says of every pod.
func TestUngatedPodsWaitForTheirPodGangToListThem(t *testing.T) {
	type step func(p *Plugin) []*v1.Pod
	base := map[string]string{common.LabelBasePodGang: "g"}
	cases := []struct {
		name string
		// before records the state; it returns the pods whose PreEnqueue is checked.
		before func(p *Plugin) []*v1.Pod
		// event is the change under test.
		event step
		// heldBefore are the messages PreEnqueue gives before the event, by pod index ("" = admitted).
		heldBefore []string
		activated  []int
		heldAfter  []string
	}{{
		name: "PodGang created listing its pods",
		before: func(p *Plugin) []*v1.Pod {
			return record(p, operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil))
		},
		event: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 2, 1, nil, pods...))
			return pods
		},
		heldBefore: []string{"waiting for PodGang ns/g to exist", "waiting for PodGang ns/g to exist"},
		activated:  []int{0, 1},
		heldAfter:  []string{"", ""},
	}, {
		name: "PodGang updated to list a pod created after it",
		before: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 1, nil, pods[0]))
			return record(p, pods...)
		},
		event: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 2, nil, pods...))
			return pods
		},
		heldBefore: []string{"", "waiting for PodGang ns/g to list the pod"},
		activated:  []int{0, 1},
		heldAfter:  []string{"", ""},
	}, {
		name: "a listed pod of a PodGang short of its quorum appears",
		before: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 2, 1, nil, pods...))
			record(p, pods[0])
			return pods[:1]
		},
		event: func(p *Plugin) []*v1.Pod {
			return append([]*v1.Pod{operatorPod("g", "w", 0, nil)}, record(p, operatorPod("g", "w", 1, nil))...)
		},
		heldBefore: []string{`PodGroup "w" has 1 of 2`},
		activated:  []int{0, 1},
		heldAfter:  []string{"", ""},
	}, {
		name: "PodGang status update that lists nothing new",
		before: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 1, nil, pods[0]))
			return record(p, pods...)
		},
		event: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 1, nil, pods[0])) // same generation
			return pods
		},
		heldBefore: []string{"", "waiting for PodGang ns/g to list the pod"},
		activated:  nil,
		heldAfter:  []string{"", "waiting for PodGang ns/g to list the pod"},
	}, {
		name: "base PodGang placed releases its scaled PodGang",
		before: func(p *Plugin) []*v1.Pod {
			b := []*v1.Pod{operatorPod("g", "w", 0, nil), operatorPod("g", "w", 1, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 2, 1, nil, b...))
			record(p, b...)
			bind(p, b[0])
			s := operatorPod("g-s", "x", 0, base)
			p.gangs.UpsertPodGang(podGang("g-s", "x", 1, 1, base, s))
			return record(p, s)
		},
		event: func(p *Plugin) []*v1.Pod {
			bind(p, operatorPod("g", "w", 1, nil))
			return []*v1.Pod{operatorPod("g-s", "x", 0, base)}
		},
		heldBefore: []string{"waiting for base PodGang ns/g to be scheduled"},
		activated:  []int{0},
		heldAfter:  []string{""},
	}, {
		name: "a scaled PodGang's pods wait while the base PodGang does not exist",
		before: func(p *Plugin) []*v1.Pod {
			s := operatorPod("g-s", "x", 0, base)
			p.gangs.UpsertPodGang(podGang("g-s", "x", 1, 1, base, s))
			return record(p, s)
		},
		event: func(p *Plugin) []*v1.Pod {
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 1, nil, operatorPod("g", "w", 0, nil)))
			return []*v1.Pod{operatorPod("g-s", "x", 0, base)}
		},
		heldBefore: []string{"waiting for base PodGang ns/g to be scheduled"},
		activated:  nil,
		heldAfter:  []string{"waiting for base PodGang ns/g to be scheduled"},
	}, {
		name: "PodGang deleted: its listed pods wait again",
		before: func(p *Plugin) []*v1.Pod {
			pods := []*v1.Pod{operatorPod("g", "w", 0, nil)}
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 1, nil, pods...))
			return record(p, pods...)
		},
		event: func(p *Plugin) []*v1.Pod {
			p.gangs.DeletePodGang("ns", "g")
			return []*v1.Pod{operatorPod("g", "w", 0, nil)}
		},
		heldBefore: []string{""},
		activated:  nil,
		heldAfter:  []string{"waiting for PodGang ns/g to exist"},
	}, {
		name: "pods made by hand join a PodGang that lists none of its pods",
		before: func(p *Plugin) []*v1.Pod {
			pod := operatorPod("g", "w", 0, nil)
			pod.OwnerReferences = nil
			return record(p, pod)
		},
		event: func(p *Plugin) []*v1.Pod {
			p.gangs.UpsertPodGang(podGang("g", "w", 1, 1, nil))
			pod := operatorPod("g", "w", 0, nil)
			pod.OwnerReferences = nil
			return []*v1.Pod{pod}
		},
		heldBefore: []string{"waiting for PodGang ns/g to exist"},
		activated:  []int{0},
		heldAfter:  []string{""},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, a := testPlugin(t)
			p.handle = &flowHandle{activations: a, waiting: map[types.UID]*waitingPod{}}
			ctx := t.Context()
			check := func(pods []*v1.Pod, want []string, when string) {
				t.Helper()
				require.Len(t, pods, len(want))
				for i, pod := range pods {
					st := p.PreEnqueue(ctx, pod)
					if want[i] == "" {
						assert.True(t, st.IsSuccess(), "%s: pod %s admitted, got %v", when, pod.Name, st)
						continue
					}
					require.Equal(t, fwk.UnschedulableAndUnresolvable, st.Code(), "%s: pod %s held", when, pod.Name)
					assert.Contains(t, st.Message(), want[i], "%s: pod %s", when, pod.Name)
				}
			}
			check(tc.before(p), tc.heldBefore, "before")
			a.pods = nil
			pods := tc.event(p)
			var want []string
			for _, i := range tc.activated {
				want = append(want, "ns/"+pods[i].Name)
			}
			got := slices.Clone(a.pods)
			slices.Sort(got)
			got = slices.Compact(got)
			assert.Equal(t, want, got, "pods activated by the event")
			check(pods, tc.heldAfter, "after")
		})
	}
}
