package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
	"github.com/ai-dynamo/grove/plugins/internal/ledger"
)

// A gang no domain holds is recognised by what the cycle state says, whichever plugin said it;
// the reason is passed on as it is.
func TestWhyNoNodeReadsNoDomainFromTheCycleState(t *testing.T) {
	p, _ := testPlugin(t)
	state := framework.NewCycleState()
	state.Write(gangcache.NoDomainKey, &gangcache.NoDomain{Reason: "no rack holds the PodGang"})
	why, cause, noDomain := p.whyNoNode(state, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0"}}, "w", nil)
	assert.True(t, noDomain)
	assert.Equal(t, "no rack holds the PodGang", why)
	assert.Equal(t, ledger.WaitNoDomain, cause, "no cause told: a domain is what is missing")

	state.Write(gangcache.NoDomainKey, &gangcache.NoDomain{Reason: "every rack was ruled out", Cause: ledger.WaitFilterRejected})
	_, cause, _ = p.whyNoNode(state, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0"}}, "w", nil)
	assert.Equal(t, ledger.WaitFilterRejected, cause, "the cause told is passed on")
}

// Why a member fit no node, as data: the filter that rejected it says which.
func TestFilterCause(t *testing.T) {
	for plugin, want := range map[string]string{
		"":                 ledger.WaitNoRoom,
		"NodeResourcesFit": ledger.WaitNoRoom,
		Name:               ledger.WaitReservedForOther,
		"DRA":              ledger.WaitDRA,
		"DynamicResources": ledger.WaitDRA,
		"Topology":         ledger.WaitNoDomain,
		"InterPodAffinity": ledger.WaitFilterRejected,
		"NodePorts":        ledger.WaitFilterRejected,
		"TaintToleration":  ledger.WaitFilterRejected,
	} {
		assert.Equal(t, want, filterCause(plugin), "plugin %q", plugin)
	}
}
