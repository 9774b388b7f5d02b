// Package version is the single place that says which Grove release a binary is and which
// Kubernetes release it was built against. The Makefile stamps the Grove version with
// -ldflags "-X github.com/ai-dynamo/grove/pkg/version.gitVersion=<git describe>". It is public,
// and imports only the standard library, because pkg/api's operator configuration defaults the
// startup waiter to this build's image: the API must not depend on the programs' internals.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by the linker; the defaults describe an unstamped developer build.
var (
	gitVersion = "v0.0.0-dev"
	// kubernetesVersion overrides what the build information says; normally left empty.
	kubernetesVersion = ""
	// imageRegistry is where this build's images are published: the Makefile stamps its
	// IMAGE_REGISTRY (the chart's imageRegistry and config/default's images: say the same).
	imageRegistry = "localhost/grove"
)

// Image is this build's image of a Grove program: <registry>/<program>:<Grove version>.
// grove-operator's image also runs the startup waiter.
func Image(program string) string {
	return strings.TrimSuffix(imageRegistry, "/") + "/" + program + ":" + gitVersion
}

// Info is what `--version` prints.
type Info struct {
	// Grove is the Grove release, e.g. v0.2.0 or v0.2.0-3-gabc1234.
	Grove string `json:"grove"`
	// Kubernetes is the Kubernetes release whose libraries the binary links, e.g. v1.37.1.
	Kubernetes string `json:"kubernetes"`
	GoVersion  string `json:"goVersion"`
	Platform   string `json:"platform"`
}

// Get returns the version of the running binary.
func Get() Info {
	return Info{
		Grove:      gitVersion,
		Kubernetes: kubernetes(),
		GoVersion:  runtime.Version(),
		Platform:   runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// Line is the one-line form printed by `<program> --version`.
func (i Info) Line(program string) string {
	return fmt.Sprintf("%s %s (Kubernetes %s, %s %s)", program, i.Grove, i.Kubernetes, i.GoVersion, i.Platform)
}

// kubernetes derives the Kubernetes release from the linked client-go module: staging modules
// are versioned v0.X.Y for Kubernetes v1.X.Y, so the build cannot disagree with go.mod.
func kubernetes() string {
	if kubernetesVersion != "" {
		return kubernetesVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	return kubernetesFromDeps(bi.Deps)
}

func kubernetesFromDeps(deps []*debug.Module) string {
	for _, m := range deps {
		if m.Path != "k8s.io/client-go" {
			continue
		}
		v := m.Version
		if m.Replace != nil && m.Replace.Version != "" {
			v = m.Replace.Version
		}
		if rest, ok := strings.CutPrefix(v, "v0."); ok {
			return "v1." + rest
		}
		return v
	}
	return "unknown"
}
