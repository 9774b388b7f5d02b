package main

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestMissingNamesAnUndocumentedConstant(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"api.go": "package api\n\nconst (\n\tLabelPodGang = \"grove.io/podgang\"\n\tLabelNew = \"grove.io/new\"\n" +
			"\tConditionReady = \"Ready\"\n\tnotDocumented = \"x\"\n)\n",
		"ref.md": "| `grove.io/podgang` | pods |\n\n`Ready` is a condition; grove.io/new appears without backticks only.\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Missing(root, []string{"api.go"}, []string{"ref.md"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`api.go: LabelNew = "grove.io/new"`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Missing = %q, want %q", got, want)
	}
}

// TestTheRepositorysReferenceIsComplete runs the check on the real pages.
func TestTheRepositorysReferenceIsComplete(t *testing.T) {
	missing, err := Missing("../..", sources, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Error(m)
	}
}
