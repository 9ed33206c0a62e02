package v1alpha1

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// TestNameChecksAgreeWithKubernetes holds ValidName and validNamespace to
// Kubernetes' checks on every string of up to four characters from an
// alphabet of their edges, on random longer ones and at the length limits;
// ValidName also takes an underscore wherever Kubernetes takes a hyphen.
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
		want := validation.IsDNS1123Subdomain(s)
		if len(validation.IsDNS1123Subdomain(strings.ReplaceAll(s, "_", "-"))) == 0 {
			want = nil // underscores where Kubernetes allows hyphens: a name of files
		}
		if got := ValidName(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("ValidName(%q) = %q, want %q", s, got, want)
		}
		if got, want := validNamespace(s), validation.IsDNS1123Label(s); !reflect.DeepEqual(got, want) {
			t.Fatalf("validNamespace(%q) = %q, Kubernetes says %q", s, got, want)
		}
	}
}

// A file may name its definition with underscores, as muster's filesystem
// mode allows; the file's name is a valid default too.
func TestAFileNameWithUnderscoresIsAName(t *testing.T) {
	for _, src := range []string{
		"apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: special-chars-workflow_123\nspec:\n  steps:\n  - id: a\n    tool: t\n",
		"apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nspec:\n  steps:\n  - id: a\n    tool: t\n",
	} {
		docs, err := DecodeFile("workflows/special-chars-workflow_123.yaml", []byte(src))
		if err != nil || len(docs) != 1 || docs[0].Err != nil {
			t.Fatalf("%v %v", err, docs)
		}
		if docs[0].Name != "special-chars-workflow_123" {
			t.Fatalf("name %q", docs[0].Name)
		}
	}
}
