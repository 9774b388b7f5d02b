// Package schedulere2e runs grove-scheduler — the real kube-scheduler with Grove's plugins,
// in-process, under the RBAC of config/scheduler — against a real kube-apiserver with fake
// nodes, and checks whole-gang placement scenario by scenario while watching every binding.
package schedulere2e

import (
	"os"
	"testing"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
	"github.com/ai-dynamo/grove/plugins"
)

func TestMain(m *testing.M) {
	// The feature gates cmd/grove-scheduler runs with.
	if err := plugins.ApplyFeatureDefaults(); err != nil {
		panic(err)
	}
	os.Exit(cluster.RunShared(m, cluster.Options{}))
}
