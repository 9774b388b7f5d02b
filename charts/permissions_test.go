package charts

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/ai-dynamo/grove/internal/testenv/cluster"
)

type grant = Grant

func tableGrants(backends []string) map[grant]bool { return TableGrants(backends) }

func operatorGrants(t *testing.T, objs map[string]*unstructured.Unstructured) map[grant]bool {
	t.Helper()
	list := make([]*unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		list = append(list, o)
	}
	got, err := OperatorGrants(list, "grove-operator", namespace)
	require.NoError(t, err)
	return got
}

func keys(m map[grant]bool) []string {
	var out []string
	for k := range m {
		out = append(out, string(k))
	}
	sort.Strings(out)
	return out
}

// TestOperatorRBACIsTheTable: every verb the chart grants grove-operator is in
// OperatorPermissions (the docs' table), and nothing in the table is left ungranted: with the
// default values, and with every optional backend enabled. Backend grants are rendered only
// while their profile is enabled.
func TestOperatorRBACIsTheTable(t *testing.T) {
	for name, tc := range map[string]struct {
		values   string
		backends []string
	}{
		"defaults":      {"", []string{}},
		"kai":           {"config: {scheduler: {profiles: [{name: kai-scheduler}], defaultProfileName: kai-scheduler}}", []string{"kai-scheduler"}},
		"every backend": {"config: {scheduler: {profiles: [{name: grove-scheduler}, {name: kai-scheduler}, {name: koord-scheduler}, {name: volcano}], defaultProfileName: grove-scheduler}}", nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := operatorGrants(t, render(t, values(t, tc.values)))
			want := tableGrants(tc.backends)
			var extra, missing []string
			for _, g := range keys(got) {
				if !want[grant(g)] {
					extra = append(extra, g)
				}
			}
			for _, g := range keys(want) {
				if !got[grant(g)] {
					missing = append(missing, g)
				}
			}
			assert.Empty(t, extra, "granted but not in charts/permissions.go (scope | group | resource | names | verb)")
			assert.Empty(t, missing, "in charts/permissions.go but not granted")
		})
	}
}

// TestOperatorReadsNoSecrets: the operator reads and writes no Secret outside its own
// namespace, and there only its certificate.
func TestOperatorReadsNoSecrets(t *testing.T) {
	got := operatorGrants(t, render(t, values(t, "config: {scheduler: {profiles: [{name: grove-scheduler}, {name: kai-scheduler}, {name: koord-scheduler}, {name: volcano}], defaultProfileName: grove-scheduler}}")))
	for _, g := range keys(got) {
		if strings.Contains(g, "| secrets |") {
			assert.True(t, strings.HasPrefix(g, scopeNamespace), "a cluster-wide Secret grant: %s", g)
			assert.True(t, strings.HasSuffix(g, "| create") || strings.Contains(g, "| grove-webhook-server-cert |"), "a Secret grant beyond its certificate: %s", g)
		}
	}
}

// TestBackendRBACMatchesConfig: config/rbac/backends holds, per optional backend, what the
// chart renders when that backend's profile is enabled.
func TestBackendRBACMatchesConfig(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	got := render(t, values(t, "config: {scheduler: {profiles: [{name: grove-scheduler}, {name: kai-scheduler}, {name: koord-scheduler}, {name: volcano}], defaultProfileName: grove-scheduler}}"))
	for _, backend := range []string{"kai-scheduler", "koord-scheduler", "volcano"} {
		objs, err := cluster.ReadManifests(filepath.Join(root, "config", "rbac", "backends", backend+".yaml"))
		require.NoError(t, err)
		require.Len(t, objs, 2, backend)
		for _, w := range objs {
			g, ok := got[key(w)]
			if assert.True(t, ok, "%s is not rendered", key(w)) {
				assert.Equal(t, normalize(t, w), normalize(t, g), key(w))
			}
		}
		assert.NotContains(t, render(t, nil), "ClusterRole//grove-operator-"+backend, "off by default")
	}
}

// TestDocsListEveryPermission: the "What grove-operator can do" table of the security page is
// PermissionsTable(), so the docs say exactly what the chart grants. Regenerate it with
// `GROVE_WRITE_PERMISSIONS_TABLE=1 go test ./charts -run TestDocsListEveryPermission`.
func TestDocsListEveryPermission(t *testing.T) {
	root, err := cluster.ModuleRoot()
	require.NoError(t, err)
	path := filepath.Join(root, "docs", "operations", "security.md")
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	const begin, end = "<!-- permissions table: charts/permissions.go -->\n", "<!-- end of permissions table -->"
	i, j := strings.Index(string(page), begin), strings.Index(string(page), end)
	require.True(t, i >= 0 && j > i, "%s has no permissions table markers", path)
	want := string(page[:i+len(begin)]) + PermissionsTable() + string(page[j:])
	if os.Getenv("GROVE_WRITE_PERMISSIONS_TABLE") != "" {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, string(page), "the table in %s is not PermissionsTable()", path)
}
