package version

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKubernetesVersionFollowsClientGo(t *testing.T) {
	cases := []struct {
		name string
		deps []*debug.Module
		want string
	}{
		{"staging version", []*debug.Module{{Path: "k8s.io/api", Version: "v0.30.0"}, {Path: "k8s.io/client-go", Version: "v0.37.1"}}, "v1.37.1"},
		{"replaced", []*debug.Module{{Path: "k8s.io/client-go", Version: "v0.0.0", Replace: &debug.Module{Path: "k8s.io/client-go", Version: "v0.37.1"}}}, "v1.37.1"},
		{"absent", []*debug.Module{{Path: "k8s.io/api", Version: "v0.37.1"}}, "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, kubernetesFromDeps(tc.deps))
		})
	}
}

func TestLineNamesProgramGroveAndKubernetes(t *testing.T) {
	assert.Equal(t, "grove-x v1.2.3 (Kubernetes v1.37.1, go1 linux/arm64)",
		Info{Grove: "v1.2.3", Kubernetes: "v1.37.1", GoVersion: "go1", Platform: "linux/arm64"}.Line("grove-x"))
}

func TestImageIsThisBuildsRegistryAndVersion(t *testing.T) {
	defer func(r, v string) { imageRegistry, gitVersion = r, v }(imageRegistry, gitVersion)
	assert.Equal(t, "localhost/grove/grove-operator:v0.0.0-dev", Image("grove-operator"), "an unstamped build")
	imageRegistry, gitVersion = "registry.example.com/ml/", "v1.2.3"
	assert.Equal(t, "registry.example.com/ml/grove-operator:v1.2.3", Image("grove-operator"))
}
