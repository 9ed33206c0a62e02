package v1alpha1

import (
	"math/rand/v2"
	"regexp"
	"testing"
)

// TestClassPatternsMatchAsRegexp holds the table-matched patterns to the
// CRDs' expressions: the same spelling in errors, the same verdicts on every
// string of up to three characters from an alphabet of their edges, and on
// random longer ones.
func TestClassPatternsMatchAsRegexp(t *testing.T) {
	for p, expr := range map[*crdPattern]string{
		identifierPattern:    `^[a-zA-Z][a-zA-Z0-9_-]*$`,
		argIdentifierPattern: `^[a-zA-Z][a-zA-Z0-9_]*$`,
		stepIDPattern:        `^[a-zA-Z0-9_-]+$`,
	} {
		if p.String() != expr {
			t.Fatalf("pattern %s, want %s", p, expr)
		}
		re := regexp.MustCompile(expr)
		alphabet := []string{"a", "z", "A", "Z", "0", "9", "_", "-", "@", "[", "`", "{", "/", ":", ".", " ", "\n", "é", "\x00", "\xff"}
		strs := stringsOver(alphabet, 3)
		r := rand.New(rand.NewPCG(1, 2))
		for range 10000 {
			var s string
			for range r.IntN(12) {
				s += alphabet[r.IntN(len(alphabet))]
			}
			strs = append(strs, s)
		}
		for _, s := range strs {
			if got, want := p.MatchString(s), re.MatchString(s); got != want {
				t.Fatalf("%s on %q: %v, regexp says %v", expr, s, got, want)
			}
		}
	}
}
