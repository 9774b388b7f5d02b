package gang

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
)

// Quorums before elastic pods. A member beyond its PodGroup's minReplicas (an elastic pod of a
// gang whose quorum has nodes) is best effort: it must not take room another gang of the same
// or a higher priority needs to reach its quorum. So while such a gang waits for its quorum,
// elastic pods wait too — unless that gang could not fit even on empty nodes, in which case
// holding room back would help nobody. Quorums are placed in queue order (priority, then age)
// as room appears; elastic pods get what is left once no quorum waits.

// elasticWaits returns why the elastic member pod of gang key may not be placed now ("" when
// it may): a waiting quorum of the same or a higher priority that fits the cluster.
func (p *Plugin) elasticWaits(pod *v1.Pod, key string, nodeInfos []fwk.NodeInfo) string {
	for _, w := range p.gangs.WaitingQuorums(corev1helpers.PodPriority(pod), key) {
		if p.nodesToReserve(w.Pod, w.Key, w.Gang, nodeInfos) == nil {
			// Not even the empty nodes hold it: it cannot use the room now either.
			continue
		}
		return fmt.Sprintf("pod %s is beyond its PodGroup's minReplicas; it waits while PodGang %s, of the same or a higher priority, waits for its quorum: %s",
			pod.Name, w.Key, w.Gang.Quorum.Progress())
	}
	return ""
}

// elasticWaiting holds the gangs whose elastic members wait for other gangs' quorums: no
// cluster event brings them back when those quorums are placed or go away.
type elasticWaiting struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (e *elasticWaiting) add(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.keys == nil {
		e.keys = map[string]struct{}{}
	}
	e.keys[key] = struct{}{}
}

func (e *elasticWaiting) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.keys))
	for k := range e.keys {
		out = append(out, k)
	}
	e.keys = nil
	return out
}

// retryElastic brings the waiting elastic members back to the active queue.
func (p *Plugin) retryElastic() {
	for _, key := range p.elastic.take() {
		p.activate(p.gangs.Pending(key))
	}
}
