package v1alpha1

import (
	"regexp"
	"strings"
)

// crdPattern is a pattern of the CRDs. Those that are a character class
// followed by another, repeated (^[first][rest]*$, ^[rest]+$), are matched
// by table: validation matches every step ID, and regexp costs more than
// the rest of a step's validation.
type crdPattern struct {
	re *regexp.Regexp
	// For the patterns matched by table, the bytes each class holds: the
	// first character's and the others'.
	first, rest *[256]bool
}

func (p *crdPattern) String() string { return p.re.String() }

// MatchString reports whether s matches the pattern, as p.re would.
func (p *crdPattern) MatchString(s string) bool {
	if p.first == nil {
		return p.re.MatchString(s)
	}
	if s == "" || !p.first[s[0]] {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !p.rest[s[i]] {
			return false
		}
	}
	return true
}

// regexpPattern is a pattern matched by regexp alone.
func regexpPattern(expr string) *crdPattern {
	return &crdPattern{re: regexp.MustCompile(expr)}
}

// classPattern is the pattern ^[first][rest]*$ of two classes of ASCII
// characters, given by their ranges ("a-zA-Z"); with first "" it is
// ^[rest]+$.
func classPattern(first, rest string) *crdPattern {
	p := &crdPattern{first: asciiClass(first), rest: asciiClass(rest)}
	if first == "" {
		p.first = p.rest
		p.re = regexp.MustCompile(`^[` + rest + `]+$`)
	} else {
		p.re = regexp.MustCompile(`^[` + first + `][` + rest + `]*$`)
	}
	return p
}

// asciiClass is the table of a character class written as in a regexp:
// ranges (a-z) and single characters, a '-' last standing for itself.
func asciiClass(class string) *[256]bool {
	if strings.ContainsAny(class, "\\^[]") {
		panic("v1alpha1: asciiClass takes ranges and plain characters only: " + class)
	}
	var t [256]bool
	for i := 0; i < len(class); i++ {
		if i+2 < len(class) && class[i+1] == '-' {
			for c := int(class[i]); c <= int(class[i+2]); c++ {
				t[c] = true
			}
			i += 2
			continue
		}
		t[class[i]] = true
	}
	return &t
}
