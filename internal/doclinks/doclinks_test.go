package doclinks

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top, from this package's directory.
const root = "../.."

var (
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	inline  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	scheme  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

func TestEveryRelativeLinkLeadsToAFileAndHeading(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	checked := 0
	for _, page := range pages {
		text := read(t, page)
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
			target := m[1]
			if scheme.MatchString(target) {
				continue
			}
			checked++
			path, fragment, _ := strings.Cut(target, "#")
			full := page
			if path != "" {
				full = filepath.Join(filepath.Dir(page), path)
			}
			if _, err := os.Stat(full); err != nil {
				t.Errorf("%s: link %s: %v", rel(page), target, err)
				continue
			}
			if fragment != "" && strings.HasSuffix(full, ".md") && !anchors(read(t, full))[fragment] {
				t.Errorf("%s: link %s: %s has no heading with the anchor #%s", rel(page), target, rel(full), fragment)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the pages moved, or the pattern broke")
	}
}

// TestAnchorsAreGitHubs pins the anchor rule against headings of the kinds
// the pages use, so that the test above checks what GitHub renders.
func TestAnchorsAreGitHubs(t *testing.T) {
	got := anchors("# musterd\n## CRDs and `make generate`\n## Leader election: what each replica keeps\n" +
		"```\n# not a heading\n```\n## Tests on a real control plane: `make envtest-assets`\n## Twice\n## Twice\n")
	for _, want := range []string{"musterd", "crds-and-make-generate", "leader-election-what-each-replica-keeps",
		"tests-on-a-real-control-plane-make-envtest-assets", "twice", "twice-1"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block was taken for a heading")
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown text:
// the heading's text lower-cased, links reduced to their text, everything
// but letters, digits, spaces, hyphens and underscores dropped, spaces made
// hyphens; a repeated anchor gets -1, -2, ….
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(text, ""), -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(inline.ReplaceAllString(m[1], "$1")) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func rel(path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
