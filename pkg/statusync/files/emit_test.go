package files

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// viaLibrary is encode's slow way: the JSON parsed as YAML, every node in
// the default style, emitted by the library.
func viaLibrary(t *testing.T, raw []byte) []byte {
	var tree yaml.Node
	require.NoError(t, yaml.Unmarshal(raw, &tree))
	plainStyle(&tree)
	out, err := yaml.Marshal(&tree)
	require.NoError(t, err)
	return out
}

// sameAsLibrary requires blockYAML to write v as the library does, or to
// decline; it reports whether it wrote.
func sameAsLibrary(t *testing.T, v any) bool {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	got, ok := blockYAML(raw)
	if ok {
		require.Equal(t, string(viaLibrary(t, raw)), string(got), "%s", raw)
	}
	return ok
}

func TestBlockYAMLWritesTheCommonStatusesAsTheLibraryDoes(t *testing.T) {
	at := time.Date(2026, 11, 24, 16, 34, 55, 264442641, time.UTC)
	for _, doc := range []Document{
		{APIVersion: APIVersion, Kind: "Workflow", Metadata: Metadata{Name: "wf00001", Namespace: "default"},
			Status: v1alpha1.WorkflowStatus{ValidationErrors: []string{"step only: tool x_bench_tool is not offered by any running server"},
				ReferencedTools: []string{"x_bench_tool"}, MissingTools: []string{"x_bench_tool"}, StepCount: 1,
				Conditions: []metav1.Condition{{Type: "Ready", Status: "False", LastTransitionTime: metav1.NewTime(at.Truncate(time.Second)), Reason: "ToolsMissing",
					Message: "tools not offered by any running server: x_bench_tool"}}},
			Reconcile: Reconcile{State: "Synced", LastReconcileTime: &at, CorrelationID: "7e384303e51f4558"}},
		{APIVersion: APIVersion, Kind: "MCPServer", Metadata: Metadata{Name: "git", Namespace: "team-a"},
			Status: map[string]any{"state": "Running", "restartCount": 2, "ratio": 0.25, "none": nil, "on": true, "empty": map[string]any{},
				"list": []any{}, "nested": map[string]any{"deeper": map[string]any{"k": "v", "l": []any{"a", 1, false}}},
				"items": []any{map[string]any{"a": "b", "c": map[string]any{"d": "e"}, "f": []any{"g"}, "h": []any{}, "i": map[string]any{}}}},
			Reconcile: Reconcile{State: "Error", LastError: "exit status 1", RetryCount: 3, NextRetry: &at}},
		{APIVersion: APIVersion, Kind: "Workflow", Metadata: Metadata{Name: "paused", Namespace: "default"},
			Reconcile: Reconcile{State: "Pending", ReconciliationDisabled: true}},
	} {
		require.True(t, sameAsLibrary(t, doc), "the common case is written here")
	}
}

// Random documents of awkward text: whatever blockYAML writes is what the
// library writes, and it writes most of them.
func TestBlockYAMLNeverDiffersFromTheLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "Z", "q", "0", "9", " ", "  ", ":", ": ", "#", " #", "-", "- ", "'", `"`, ",", "[", "]", "{", "}",
		"&", "*", "!", "|", ">", "%", "@", "`", "?", ".", "_", "/", "\\", "\t", "\n", "é", "~", "=", "+", "<", "true", "False",
		"null", "NULL", "yes", "on", "1", "1.5", "0x1F", "2026-11-24T16:34:55Z", "2026-11-24", "...", "---"}
	tame := []string{"a", "b", "Zed", "x_y", "0", "7", "e", "f", "9f", "ok.", "/", "-", " ", ": ", "#", " #", "'", "True", "null", "yes",
		"2026-11-24T16:34:55Z", "2026-11-24T16:34:55.123456789Z", "word ", "step only", "x_bench_tool"}
	word := func() string {
		var b strings.Builder
		from := alphabet
		if rng.IntN(10) < 7 {
			from = tame
		}
		for range rng.IntN(6) {
			b.WriteString(from[rng.IntN(len(from))])
		}
		if rng.IntN(20) == 0 {
			b.WriteString(strings.Repeat("long text ", rng.IntN(10)))
		}
		return b.String()
	}
	key := func() string {
		if rng.IntN(10) < 8 {
			return []string{"state", "valid", "restartCount", "x-y", "a.b", "k8s", "True", "on", "z_"}[rng.IntN(9)]
		}
		return word()
	}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := rng.IntN(10); {
		case n < 5 || depth > 3:
			return word()
		case n == 5:
			return rng.IntN(1000) - 500
		case n == 6:
			return rng.IntN(2) == 0
		case n == 7:
			m := map[string]any{}
			for range rng.IntN(4) {
				m[key()] = value(depth + 1)
			}
			return m
		case n == 8:
			var s []any
			for range rng.IntN(4) {
				s = append(s, value(depth+1))
			}
			return s
		default:
			return nil
		}
	}
	written := 0
	for range 20000 {
		m := map[string]any{}
		for range 1 + rng.IntN(4) {
			m[key()] = value(0)
		}
		if sameAsLibrary(t, m) {
			written++
		}
	}
	t.Logf("written here: %d of 20000", written)
	require.Greater(t, written, 1000, "the random documents include many it can write")
}
