package events_test

import (
	"cmp"
	"testing"

	"github.com/musterd/musterd/pkg/events"
)

func TestCompareKeysOrdersAsTheSpellingsCompare(t *testing.T) {
	parts := []string{"", "a", "a-b", "a.b", "a/", "ab", "b", "A", "a0", "MCPServer", "MCPServerX", "Workflow", "default", "é"}
	var keys []events.Key
	for _, k := range parts {
		for _, ns := range parts {
			for _, n := range []string{"", "a", "a-b", "ab", "b"} {
				keys = append(keys, events.NewKey(k, ns, n))
			}
		}
	}
	for _, a := range keys {
		for _, b := range keys {
			if got, want := events.CompareKeys(a, b), cmp.Compare(a.String(), b.String()); got != want {
				t.Fatalf("CompareKeys(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}
