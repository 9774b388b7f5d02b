// Command docsref fails when a wire-contract name defined in pkg/api is missing from the
// reference pages: every label, annotation, environment variable, condition type, reason,
// event reason, finalizer and scheduling gate constant must appear, in backticks, on one of
// docs/reference/labels-annotations-env.md and docs/reference/conditions.md. A new constant
// therefore comes with its documentation.
//
//	go run ./hack/docsref
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// sources are the Go files whose constants are the wire contract.
var sources = []string{
	"pkg/api/common/labels.go",
	"pkg/api/scheduler/v1alpha1/podgang.go",
}

// pages document them.
var pages = []string{
	"docs/reference/labels-annotations-env.md",
	"docs/reference/conditions.md",
}

// documented are the prefixes of the constant names that must be documented.
var documented = []string{"Label", "Annotation", "Env", "Condition", "Reason", "EventReason",
	"Finalizer", "SchedulingGate", "PodGangCondition", "Component"}

func main() {
	missing, err := Missing(".", sources, pages)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, m := range missing {
		fmt.Println(m)
	}
	if len(missing) > 0 {
		fmt.Printf("%d wire-contract name(s) not on %s\n", len(missing), strings.Join(pages, " or "))
		os.Exit(1)
	}
	fmt.Println("docsref: every label, annotation, variable, condition and reason is documented")
}

// Missing lists "file: Name = value" for every documented constant of sources whose value does
// not appear in backticks on any of pages (paths relative to root).
func Missing(root string, sources, pages []string) ([]string, error) {
	var text strings.Builder
	for _, p := range pages {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		text.Write(b)
	}
	doc := text.String()
	var missing []string
	for _, src := range sources {
		consts, err := stringConstants(filepath.Join(root, src))
		if err != nil {
			return nil, err
		}
		for _, name := range sortedKeys(consts) {
			if !hasPrefix(name, documented) {
				continue
			}
			v := consts[name]
			if !strings.Contains(doc, "`"+v+"`") && !strings.Contains(doc, "`"+v+":") {
				missing = append(missing, fmt.Sprintf("%s: %s = %q", src, name, v))
			}
		}
	}
	return missing, nil
}

func hasPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// stringConstants returns the file's constants with a string literal value.
func stringConstants(path string) (map[string]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					continue
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					return nil, err
				}
				out[n.Name] = v
			}
		}
	}
	return out, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
