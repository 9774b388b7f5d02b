package gang

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/pkg/api/common"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

func cpuNode(name, cpu string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.NodeStatus{Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("1Gi"), v1.ResourcePods: resource.MustParse("110")}}})
	return ni
}

// A gang lets a waiting quorum ahead of it in the order go first while that quorum fits — but
// not one that failed with the room as it is (a filter refused it although counted capacity
// says it fits): the two would otherwise wake each other in a loop. A room change makes the
// one ahead worth waiting for again.
func TestQuorumAheadIsNotWaitedForOnceItFailedWithThisRoom(t *testing.T) {
	p, h := testPlugin(t)
	ahead := addGang(p, "ahead", 2, 0, 0, 2)
	behind := addGang(p, "behind", 2, 0, 0, 2)
	setCreated(p, "ns/ahead", t0)
	setCreated(p, "ns/behind", t0.Add(time.Second))
	p.gangs.MarkQueued("ns/ahead")
	nodes := []fwk.NodeInfo{cpuNode("n1", "4")}
	h.pods = nil

	assert.Contains(t, p.quorumAheadFits(behind[0], "ns/behind", nodes), "PodGang ns/ahead, ahead of this gang")
	assert.ElementsMatch(t, []string{"ns/ahead-0", "ns/ahead-1"}, h.pods, "the gang ahead is brought to the front")
	assert.Empty(t, p.quorumAheadFits(ahead[0], "ns/ahead", nodes), "never the other way round")

	// The gang ahead fails (a filter refused its domain): the one behind goes on.
	h.pods = nil
	p.unplaceable("ns/ahead", "pod ahead-0 fits no node (InterPodAffinity)", ledger.WaitFilterRejected)
	assert.Empty(t, p.quorumAheadFits(behind[0], "ns/behind", nodes))
	assert.Empty(t, h.pods, "nor is the failed gang woken up again")
	w := p.gangs.WaitingAhead(p.entry("ns/behind", 2, behind[0]), nil)
	if assert.Len(t, w, 1) {
		assert.False(t, p.quorumWaits(w[0], nodes), "nor does it hold elastic members or scale-out back")
	}

	// A node added or a pod deleted: it may fit now.
	p.gangs.RoomChanged()
	assert.Contains(t, p.quorumAheadFits(behind[0], "ns/behind", nodes), "PodGang ns/ahead")
}

// The scale-out of one replica waits for the base quorum of another (order.Base before
// order.ScaleOut), and that base quorum never waits for the scale-out, even when the scaled
// PodGang is older: the pair of rules that deadlocked in issue 39.
func TestBaseQuorumNeverWaitsForAnOlderScaleOut(t *testing.T) {
	p, _ := testPlugin(t)
	scaled := addGang(p, "p-0-sg-0", 1, 0, 0, 2)
	base := addGang(p, "p-1", 1, 0, 0, 2)
	label := func(key string, labels map[string]string, at time.Time) {
		g, _ := p.gangs.Get(key)
		pg := g.PodGang.DeepCopy()
		pg.Labels, pg.CreationTimestamp = labels, metav1.NewTime(at)
		p.gangs.UpsertPodGang(pg)
	}
	label("ns/p-0-sg-0", map[string]string{common.LabelPartOfKey: "p", common.LabelBasePodGang: "p-0"}, t0)
	label("ns/p-1", map[string]string{common.LabelPartOfKey: "p"}, t0.Add(time.Minute))
	p.gangs.MarkQueued("ns/p-0-sg-0")
	p.gangs.MarkQueued("ns/p-1")
	nodes := []fwk.NodeInfo{cpuNode("n1", "2")}

	assert.Empty(t, p.quorumAheadFits(base[0], "ns/p-1", nodes), "the older scale-out is behind the base quorum")
	g, _ := p.gangs.Get("ns/p-0-sg-0")
	assert.Contains(t, p.scaleOutWaits(scaled[0], "ns/p-0-sg-0", g, nodes), "waits while base PodGang ns/p-1")
}
