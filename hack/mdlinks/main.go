// Command mdlinks fails when a link in the given Markdown files does not resolve: a relative
// link to a file or directory that does not exist (or lies outside the repository), or a
// #fragment that names no heading or anchor of the Markdown file it points to. External links
// (http, https, mailto, …) are not checked.
//
//	go run ./hack/mdlinks README.md docs
//
// Directories are walked for *.md files. Paths are resolved against the current directory,
// which is the repository root; a link starting with "/" is resolved from that root, as
// GitHub does.
package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mdlinks FILE_OR_DIR...")
		os.Exit(2)
	}
	root, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	files, err := markdownFiles(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	problems, err := Check(root, files)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("%d broken link(s) in %d Markdown file(s)\n", len(problems), len(files))
		os.Exit(1)
	}
	fmt.Printf("mdlinks: every link in %d Markdown file(s) resolves\n", len(files))
}

// markdownFiles expands directories into the *.md files under them, sorted.
func markdownFiles(args []string) ([]string, error) {
	var files []string
	for _, a := range args {
		info, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	return files, nil
}

// Problem is one link that does not resolve.
type Problem struct {
	File   string // as given
	Line   int
	Target string
	Reason string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Target, p.Reason)
}

// Check reports every link of files (paths relative to root or absolute) that does not resolve.
func Check(root string, files []string) ([]Problem, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	anchors := map[string]map[string]bool{} // absolute path of a Markdown file -> its anchors
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := Anchors(string(b))
		anchors[path] = a
		return a, nil
	}
	var problems []Problem
	for _, f := range files {
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, f)
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, err
		}
		for _, l := range Links(string(b)) {
			bad := func(reason string) {
				problems = append(problems, Problem{File: f, Line: l.Line, Target: l.Target, Reason: reason})
			}
			if isExternal(l.Target) {
				continue
			}
			path, fragment, _ := strings.Cut(l.Target, "#")
			target := abs
			if path != "" {
				if strings.HasPrefix(path, "/") {
					target = filepath.Join(root, filepath.FromSlash(path))
				} else {
					target = filepath.Join(filepath.Dir(abs), filepath.FromSlash(path))
				}
				if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
					bad("points outside the repository")
					continue
				}
				info, err := os.Stat(target)
				if err != nil {
					bad("no such file or directory")
					continue
				}
				if info.IsDir() {
					if fragment != "" {
						bad("an anchor on a directory")
					}
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				continue // line anchors of source files (#L10) and the like are GitHub's
			}
			a, err := anchorsOf(target)
			if err != nil {
				return nil, err
			}
			if !a[fragment] {
				bad(fmt.Sprintf("no heading or anchor %q in %s", fragment, relTo(root, target)))
			}
		}
	}
	return problems, nil
}

func relTo(root, path string) string {
	if rel, err := filepath.Rel(root, path); err == nil {
		return filepath.ToSlash(rel)
	}
	return path
}

var scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

func isExternal(target string) bool {
	return scheme.MatchString(target) || strings.HasPrefix(target, "//")
}

// Link is a link target and the line it is on.
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'|\([^)]*\)))?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlHref   = regexp.MustCompile(`<a\s[^>]*href="([^"]*)"`)
	codeSpan   = regexp.MustCompile("(`+)[^`]*?`+")
)

// Links returns the link targets of a Markdown document outside code blocks and code spans:
// inline links and images, reference definitions and HTML <a href>.
func Links(doc string) []Link {
	var links []Link
	forEachTextLine(doc, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: n, Target: strings.Trim(m[1], "<>")})
		}
		if m := refDef.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: n, Target: strings.Trim(m[1], "<>")})
		}
		for _, m := range htmlHref.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: n, Target: m[1]})
		}
	})
	return links
}

var (
	atxHeading = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor = regexp.MustCompile(`<a\s[^>]*(?:id|name)="([^"]+)"`)
	mdLink     = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// Anchors returns the fragments a Markdown document answers to as GitHub renders it: the
// slug of every ATX heading outside code blocks (a repeated slug gets -1, -2, … in order) and
// every HTML anchor's id or name.
func Anchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	forEachTextLine(doc, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		slug := Slug(m[2])
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			anchors[fmt.Sprintf("%s-%d", slug, n+1)] = true
			return
		}
		seen[slug] = 0
		anchors[slug] = true
	})
	return anchors
}

// Slug is GitHub's anchor for a heading: the heading's text (code spans keep their content,
// links their text, emphasis markers and HTML tags go) lower-cased, every character that is
// not a letter, mark, number, connector (such as _), space or hyphen dropped, and spaces
// turned into hyphens.
func Slug(heading string) string {
	text := mdLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	inCode := false
	for _, r := range text {
		switch {
		case r == '`':
			inCode = !inCode
		case r == '*' && !inCode:
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r) ||
			unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Pc, r):
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

var fence = regexp.MustCompile("^ {0,3}(```+|~~~+)")

// forEachTextLine calls f with every line (numbered from 1) that is not inside a fenced code
// block.
func forEachTextLine(doc string, f func(n int, line string)) {
	var open string
	for i, line := range strings.Split(doc, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
				continue
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(strings.TrimLeft(line, " "+string(open[0]))) == "":
				open = ""
				continue
			}
		}
		if open == "" {
			f(i+1, line)
		}
	}
}
