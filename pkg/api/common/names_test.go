package common

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{HeadlessServiceName("disagg", 1), "disagg-1"},
		{HeadlessServiceAddress("disagg", 1, "ns"), "disagg-1.ns.svc.cluster.local"},
		{BasePodGangName("disagg", 0), "disagg-0"},
		{StandalonePodCliqueName("disagg", 0, "router"), "disagg-0-router"},
		{PodCliqueScalingGroupName("disagg", 0, "workers"), "disagg-0-workers"},
		{ScalingGroupPodCliqueName("disagg-0-workers", 2, "prefill"), "disagg-0-workers-2-prefill"},
		{ScaledPodGangName("disagg-0-workers", 3, 1), "disagg-0-workers-2"},
		{ScalingGroupReplicaName("disagg-0-workers", 1), "disagg-0-workers-1"},
		{PodGangNameForScalingGroupReplica("disagg", 0, "disagg-0-workers", 0, 1), "disagg-0"},
		{PodGangNameForScalingGroupReplica("disagg", 0, "disagg-0-workers", 1, 1), "disagg-0-workers-0"},
		{PodHostname("disagg-0-router", 3), "disagg-0-router-3"},
		{PodGenerateName("disagg-0-router"), "disagg-0-router-"},
		{PodRoleName("disagg"), "grove.io:pcs:disagg"},
		{StartupWaiterTokenSecretName("disagg"), "disagg-startup-waiter-token"},
		{AllReplicasResourceClaimName("disagg", "gpu"), "disagg-all-gpu"},
		{PerReplicaResourceClaimName("disagg-0-router", 2, "gpu"), "disagg-0-router-2-gpu"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.got)
	}
}

func TestShortenLabelValue(t *testing.T) {
	assert.Equal(t, "short", ShortenLabelValue("short"))
	long := strings.Repeat("a", 80)
	got := ShortenLabelValue(long)
	assert.LessOrEqual(t, len(got), 63)
	assert.NotEqual(t, got, ShortenLabelValue(strings.Repeat("a", 79)+"b"), "different long values stay distinct")
}

func TestPodResourceClaimNameIsADNSLabel(t *testing.T) {
	assert.Equal(t, "disagg-0-router-2-gpu", PodResourceClaimName("disagg-0-router-2-gpu"), "a DNS label is kept")

	long := "disaggregated-inference-0-workers-12-prefill-all-gpu-partitions"
	dotted := "disagg-all-gpu.example.com"
	for _, claim := range []string{long, long + "x", dotted, ".a"} {
		got := PodResourceClaimName(claim)
		assert.LessOrEqual(t, len(got), 63, claim)
		assert.Regexp(t, `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`, got, claim)
	}
	assert.True(t, strings.HasPrefix(PodResourceClaimName(dotted), "disagg-all-gpu-example-com-h"), PodResourceClaimName(dotted))
	assert.NotEqual(t, PodResourceClaimName(long+"a"), PodResourceClaimName(long+"b"), "different claims keep different entries")
	assert.NotEqual(t, PodResourceClaimName("a.b-all-x"), PodResourceClaimName("a-b-all-x"), "sanitising never merges two claims")
}

func TestShortenNameKeepsADNSSubdomainLength(t *testing.T) {
	assert.Equal(t, "disagg-0-router", ShortenName("disagg-0-router"))
	long := strings.Repeat("a", 300)
	got := ShortenName(long)
	assert.Len(t, got, 253)
	assert.True(t, strings.HasPrefix(got, strings.Repeat("a", 219)+"-h"), got)
	assert.NotEqual(t, got, ShortenName(strings.Repeat("a", 299)+"b"), "different long names stay distinct")
}
