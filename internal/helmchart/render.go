// Package helmchart renders and lints Grove's Helm chart (charts/grove) with the Helm v4 Go
// SDK, for tests and for the install end-to-end test; no helm binary is involved.
package helmchart

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"helm.sh/helm/v4/pkg/action"
	chartcommon "helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	releasev1 "helm.sh/helm/v4/pkg/release/v1"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// Dir is the chart's directory relative to the module root.
const Dir = "charts/grove"

// Render renders the chart as `helm template` would (values validated against
// values.schema.json) and returns the objects in manifest order.
func Render(chartDir, release, namespace string, values map[string]any) ([]*unstructured.Unstructured, error) {
	ch, err := loader.LoadDir(chartDir)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	cfg := action.NewConfiguration()
	cfg.Releases = storage.Init(driver.NewMemory())
	install := action.NewInstall(cfg)
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = release
	install.Namespace = namespace
	install.Replace = true
	kv, err := chartcommon.ParseKubeVersion("v1.37.1")
	if err != nil {
		return nil, err
	}
	install.KubeVersion = kv
	rel, err := install.RunWithContext(context.Background(), ch, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s: %w", chartDir, err)
	}
	r, ok := rel.(*releasev1.Release)
	if !ok {
		return nil, fmt.Errorf("rendering chart %s: unexpected release type %T", chartDir, rel)
	}
	return SplitManifest(r.Manifest)
}

// SplitManifest parses a multi-document YAML stream, skipping empty documents.
func SplitManifest(manifest string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	for i, doc := range strings.Split(manifest, "\n---") {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs, nil
}

// Lint runs `helm lint --strict` on the chart with the given values and returns its messages
// of severity warning and above.
func Lint(chartDir, namespace string, values map[string]any) []error {
	l := action.NewLint()
	l.Strict = true
	l.Namespace = namespace
	abs, err := filepath.Abs(chartDir)
	if err != nil {
		return []error{err}
	}
	return l.Run([]string{abs}, values).Errors
}
