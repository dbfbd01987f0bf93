package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is how long README.md may grow: it is the front page, and
// the rest lives in docs/, one page per topic.
const readmeMaxLines = 300

// TestReadmeIsAFrontPage checks that README.md stays a front page (at most
// readmeMaxLines lines) and links every page of docs/, so that a page
// added there can be found from it.
func TestReadmeIsAFrontPage(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(readme), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines; want at most %d (move the detail to a page in docs/)", n, readmeMaxLines)
	}
	linked := map[string]bool{}
	for _, l := range markdownLinks(string(readme)) {
		file, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(file)] = true
	}
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no docs/*.md pages found")
	}
	for _, p := range pages {
		if name := "docs/" + filepath.Base(p); !linked[name] {
			t.Errorf("README.md does not link %s", name)
		}
	}
}

// TestDocsLinksResolve checks every relative link of README.md and of the
// pages in docs/: its file exists and, for a link with #anchor into a
// markdown page, that page has a heading with that anchor (GitHub's rule:
// lower case, punctuation dropped, spaces as hyphens).
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = headingAnchors(string(text))
		return anchors[path], nil
	}
	checked := 0
	for _, page := range append([]string{"../../README.md"}, pages...) {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range markdownLinks(string(text)) {
			checked++
			file, anchor, _ := strings.Cut(l.target, "#")
			target := filepath.Clean(page)
			if file != "" {
				target = filepath.Join(filepath.Dir(page), file)
			}
			where := fmt.Sprintf("%s:%d: link %q", strings.TrimPrefix(page, "../../"), l.line, l.target)
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: %v", where, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				t.Errorf("%s: %v", where, err)
			} else if !a[anchor] {
				t.Errorf("%s: %s has no heading with anchor #%s", where, strings.TrimPrefix(target, "../../"), anchor)
			}
		}
	}
	if checked < 10 {
		t.Errorf("checked %d links; want the README's and the docs' links (is the link pattern still right?)", checked)
	}
}

// TestHeadingAnchor pins the anchor rule the link check relies on.
func TestHeadingAnchor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ heading, want string }{
		{"Set-up on a fresh machine", "set-up-on-a-fresh-machine"},
		{"Least privilege: `rlbench acl`", "least-privilege-rlbench-acl"},
		{"Open loop (`--rate`)", "open-loop---rate"},
		{"JSON (`--json FILE`, `--json -` for stdout)", "json---json-file---json---for-stdout"},
		{"Hash-field counters (Redis 7.4)", "hash-field-counters-redis-74"},
		{"What rlbench will never do to your server", "what-rlbench-will-never-do-to-your-server"},
	} {
		if got := headingAnchor(tc.heading); got != tc.want {
			t.Errorf("headingAnchor(%q) = %q; want %q", tc.heading, got, tc.want)
		}
	}
	// A second heading of the same text gets -1, as on GitHub.
	a := headingAnchors("# A\n\n## B\n\n```\n# not a heading\n```\n\n## B\n")
	for _, want := range []string{"a", "b", "b-1"} {
		if !a[want] {
			t.Errorf("headingAnchors: no #%s in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Errorf("headingAnchors: a comment in a code block became #not-a-heading")
	}
}

// mdLink is one relative link of a markdown page.
type mdLink struct {
	target string // as written: a path, path#anchor or #anchor
	line   int
}

var (
	linkPattern = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
)

// markdownLinks returns the relative links of a page, outside code blocks
// and code spans; links to a URL (http:, https:, mailto:) are left out.
func markdownLinks(text string) []mdLink {
	var links []mdLink
	for i, line := range proseLines(text) {
		if line == "" {
			continue
		}
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			if target := m[1]; !strings.Contains(target, ":") {
				links = append(links, mdLink{target: target, line: i + 1})
			}
		}
	}
	return links
}

// proseLines returns the page's lines with those of code blocks (fenced,
// or indented by four spaces) blanked, so that line numbers stay those of
// the page.
func proseLines(text string) []string {
	lines := strings.Split(text, "\n")
	inFence := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			lines[i] = ""
		} else if inFence || strings.HasPrefix(line, "    ") {
			lines[i] = ""
		}
	}
	return lines
}

// headingAnchors returns the anchors of a page's headings, numbered -1,
// -2 ... when a heading's text repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(text) {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimLeft(line, "#")
		if heading == "" || heading[0] != ' ' {
			continue
		}
		a := headingAnchor(heading)
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// headingAnchor is GitHub's anchor of a heading's text: lower case,
// letters, digits, hyphens and underscores kept, spaces as hyphens, the
// rest dropped.
func headingAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
