package gang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/ai-dynamo/grove/plugins/internal/gangcache"
)

// A gang no domain holds is recognised by what the cycle state says, whichever plugin said it;
// the reason is passed on as it is.
func TestWhyNoNodeReadsNoDomainFromTheCycleState(t *testing.T) {
	p, _ := testPlugin(t)
	state := framework.NewCycleState()
	state.Write(gangcache.NoDomainKey, &gangcache.NoDomain{Reason: "no rack holds the PodGang"})
	why, noDomain := p.whyNoNode(state, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-0"}}, "w", nil)
	assert.True(t, noDomain)
	assert.Equal(t, "no rack holds the PodGang", why)
}
