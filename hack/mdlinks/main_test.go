package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCheckFindsBrokenFileLinksAndAnchors builds a small repository whose index links to an
// existing page, a missing page, an existing and a missing heading of that page, and its own
// headings, and requires exactly the broken ones to be reported.
func TestCheckFindsBrokenFileLinksAndAnchors(t *testing.T) {
	root := t.TempDir()
	write(t, root, "docs/guide.md", "# Guide\n\n## Install on a cluster\n\n## `kubectl grove`\n\n## Step\n\n## Step\n")
	write(t, root, "docs/dir/keep.txt", "x")
	write(t, root, "README.md", strings.Join([]string{
		"# Title",                                       // 1
		"See [the guide](docs/guide.md).",               // 2: fine
		"See [nothing](docs/missing.md).",               // 3: broken file
		"[install](docs/guide.md#install-on-a-cluster)", // 4: fine
		"[upgrade](docs/guide.md#upgrade)",              // 5: broken anchor
		"[plugin](docs/guide.md#kubectl-grove) [second step](docs/guide.md#step-1)", // 6: fine, fine
		"[top](#title) [gone](#no-such-heading)",                                    // 7: fine, broken anchor in this file
		"[site](https://example.com/x.md) [mail](mailto:a@b.c)",                     // 8: external, not checked
		"```sh",                              // 9
		"[in code](docs/missing-in-code.md)", // 10: inside a code block, ignored
		"```",                                // 11
		"`[in a span](docs/missing-in-span.md)` [dir](docs/dir/)", // 12: span ignored, directory fine
		"[up](../outside.md)",           // 13: outside the repository
		"[ref]: docs/also-missing.md",   // 14: broken reference definition
		"[rooted](/docs/guide.md#step)", // 15: fine, from the root
	}, "\n"))

	got, err := Check(root, []string{"README.md"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, p := range got {
		lines = append(lines, p.String())
	}
	want := []string{
		`README.md:3: docs/missing.md: no such file or directory`,
		`README.md:5: docs/guide.md#upgrade: no heading or anchor "upgrade" in docs/guide.md`,
		`README.md:7: #no-such-heading: no heading or anchor "no-such-heading" in README.md`,
		`README.md:13: ../outside.md: points outside the repository`,
		`README.md:14: docs/also-missing.md: no such file or directory`,
	}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlugIsGitHubs(t *testing.T) {
	for heading, want := range map[string]string{
		"Status, `kubectl get` and `kubectl grove`": "status-kubectl-get-and-kubectl-grove",
		"2a. Helm": "2a-helm",
		"Plugin arguments (`pluginConfig[].args`)": "plugin-arguments-pluginconfigargs",
		"The install test: `make e2e-install`":     "the-install-test-make-e2e-install",
		"grove.io/v1alpha1":                        "groveiov1alpha1",
		"**Bold** and [a link](x.md)":              "bold-and-a-link",
		"`GROVE_PCS_NAME` and `grove.io/podgang`":  "grove_pcs_name-and-groveiopodgang",
		"Gang termination and partly bound gangs":  "gang-termination-and-partly-bound-gangs",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestAnchorsNumberRepeatedHeadingsAndSkipCode(t *testing.T) {
	got := Anchors("# A\n## A\n```\n# Not a heading\n```\n<a id=\"custom\"></a>\n### A\n")
	want := map[string]bool{"a": true, "a-1": true, "a-2": true, "custom": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}
