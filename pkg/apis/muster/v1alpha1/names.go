package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// ValidName checks a definition's metadata.name, returning what is wrong
// in Kubernetes' words. A name is a Kubernetes name (a lowercase RFC 1123
// subdomain) or, as muster's filesystem mode accepts, one with underscores
// where a Kubernetes name may have hyphens ("special-chars-workflow_123"):
// still lower case, and safe as a key, in a file path and in a tool's
// name. An API server refuses the underscores, so in Kubernetes mode such a
// name is refused when it is created.
//
// validNamespace checks metadata.namespace as Kubernetes does. Every
// document's identity is checked, the default namespace included, and
// Kubernetes checks by regexp: the names it accepts are recognised here
// first, the others left to it for its messages.
func ValidName(s string) []string {
	if len(s) <= validation.DNS1123SubdomainMaxLength && isDNSSubdomain(s) {
		return nil
	}
	msgs := validation.IsDNS1123Subdomain(s)
	if len(msgs) > 0 && strings.Contains(s, "_") && len(validation.IsDNS1123Subdomain(strings.ReplaceAll(s, "_", "-"))) == 0 {
		return nil
	}
	return msgs
}

func validNamespace(s string) []string {
	if len(s) <= validation.DNS1123LabelMaxLength && isDNSLabel(s) {
		return nil
	}
	return validation.IsDNS1123Label(s)
}

// isDNSLabel matches [a-z0-9]([-a-z0-9]*[a-z0-9])?, whatever its length.
func isDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// isDNSSubdomain matches labels joined by dots, whatever its length.
func isDNSSubdomain(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !isDNSLabel(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}
