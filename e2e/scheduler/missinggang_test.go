package schedulere2e

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ai-dynamo/grove/pkg/api/common"
)

// podScheduled returns the pod's PodScheduled condition, nil when it has none.
func (e *env) podScheduled(name string) *v1.PodCondition {
	pod, err := e.admin.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == v1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podEvents counts the events about a pod with the given reason.
func (e *env) podEvents(name, reason string) int {
	list, err := e.admin.EventsV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, ev := range list.Items {
		if ev.Regarding.Kind == "Pod" && ev.Regarding.Name == name && ev.Reason == reason {
			n++
		}
	}
	return n
}

// A pod that names a PodGang that does not exist, or a PodGroup its PodGang does not have, is
// not scheduled, and says why: a PodScheduled=False condition and a warning event with the
// reason. Once its PodGang lists it, it is scheduled.
func TestPodOfAMissingPodGangOrPodGroupSaysWhy(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.addNodes(node{name: "n1", cpu: "8"})
	missing := gang{name: "nowhere", groups: []group{{name: "w", min: 1, replicas: 1, cpu: "1"}}}
	lacking := gang{name: "lacking", groups: []group{{name: "w", min: 1, replicas: 1, cpu: "1"}}}
	stray := e.memberPod(lacking, group{name: "other", cpu: "1"}, 0)
	e.createGang(lacking)
	e.createPods([]*v1.Pod{e.memberPod(missing, missing.groups[0], 0), stray})

	for pod, reason := range map[string]string{"nowhere-w-0": common.ReasonPodGangNotFound, stray.Name: common.ReasonPodGroupNotFound} {
		e.eventually(pod+" says "+reason, func() (bool, string) {
			c := e.podScheduled(pod)
			if c == nil {
				return false, "no PodScheduled condition"
			}
			events := e.podEvents(pod, reason)
			return c.Status == v1.ConditionFalse && c.Reason == reason && events > 0,
				fmt.Sprintf("PodScheduled %s %s %q, %d events", c.Status, c.Reason, c.Message, events)
		})
	}
	assert.Contains(t, e.podScheduled("nowhere-w-0").Message, "PodGang "+e.ns+"/nowhere does not exist")
	e.waitBound("lacking", 1)

	e.createGangObjectOnly(missing)
	e.waitBound("nowhere", 1)
}
