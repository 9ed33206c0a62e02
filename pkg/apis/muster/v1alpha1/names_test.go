package v1alpha1

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestNameChecksAgreeWithKubernetes holds validName and validNamespace to
// Kubernetes' checks on every string of up to four characters from an
// alphabet of their edges, on random longer ones and at the length limits.
func TestNameChecksAgreeWithKubernetes(t *testing.T) {
	alphabet := []string{"a", "z", "0", "9", "-", ".", "A", "_", " ", "é", "\n"}
	strs := stringsOver(alphabet, 4)
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(20) {
			b.WriteString(alphabet[r.IntN(len(alphabet)-4)])
		}
		strs = append(strs, b.String())
	}
	for _, n := range []int{62, 63, 64, 252, 253, 254} {
		strs = append(strs, strings.Repeat("a", n), strings.Repeat("a.", n/2)+"b")
	}
	for _, s := range strs {
		if got, want := validName(s), validation.IsDNS1123Subdomain(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("validName(%q) = %q, Kubernetes says %q", s, got, want)
		}
		if got, want := validNamespace(s), validation.IsDNS1123Label(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("validNamespace(%q) = %q, Kubernetes says %q", s, got, want)
		}
	}
}
