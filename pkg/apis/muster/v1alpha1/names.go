package v1alpha1

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// validName and validNamespace check metadata.name and metadata.namespace
// as Kubernetes does, returning its messages. Every document's identity is
// checked, the default namespace included, and Kubernetes checks by regexp:
// the names it accepts are recognised here first, the others left to it
// for its messages.
func validName(s string) []string {
	if len(s) <= validation.DNS1123SubdomainMaxLength && isDNSSubdomain(s) {
		return nil
	}
	return validation.IsDNS1123Subdomain(s)
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
