package plugins

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopologyAndDRANeedGangInTheirProfile(t *testing.T) {
	cases := []struct {
		name    string
		plugins string
		want    []string
	}{
		{"all three", `multiPoint: {enabled: [{name: Gang}, {name: Topology}, {name: DRA}]}`, nil},
		{"gang alone", `multiPoint: {enabled: [{name: Gang}]}`, nil},
		{"none of them", `score: {enabled: [{name: NodeResourcesFit}]}`, nil},
		{"gang at one extension point, topology at another", `
      preFilter: {enabled: [{name: Gang}]}
      filter: {enabled: [{name: Topology}]}`, nil},
		{"topology without gang", `multiPoint: {enabled: [{name: Topology}]}`,
			[]string{`profiles[1].plugins.multiPoint.enabled: Invalid value: "Topology": Topology needs Gang: enable Gang in profile "grove" too`}},
		{"dra at one extension point without gang", `
      multiPoint: {enabled: [{name: NodeResourcesFit}]}
      preEnqueue: {enabled: [{name: DRA}]}`,
			[]string{`profiles[1].plugins.preEnqueue.enabled: Invalid value: "DRA": DRA needs Gang`}},
		{"both without gang", `multiPoint: {enabled: [{name: DRA}, {name: Topology}]}`,
			[]string{`profiles[1].plugins.multiPoint.enabled: Invalid value: "Topology"`, `profiles[1].plugins.multiPoint.enabled: Invalid value: "DRA"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := decode(t, []byte(`
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: grove
  plugins:
    `+tc.plugins+`
`))
			require.NoError(t, err)
			errs := ValidateProfiles(cfg)
			require.Len(t, errs, len(tc.want), "%v", errs)
			for i, want := range tc.want {
				assert.Contains(t, errs[i].Error(), want)
			}
		})
	}
}
