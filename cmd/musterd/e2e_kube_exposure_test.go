package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// The exposure policy on a custom resource: it survives kubectl apply with
// musterd's CRDs installed, and a change of it re-exposes the server's
// tools without a restart, as in files.
func TestE2EKubeExposurePolicyOnACustomResource(t *testing.T) {
	k := startKube(t)
	d := k.musterd(t)
	marker := newMarker()
	manifest := filepath.Join(t.TempDir(), "fx.yaml")
	apply := func(policy string) {
		t.Helper()
		yaml := exposedServerYAML("fx", policy, stdioSpec("-tools", "a,b,"+marker)...)
		yaml = strings.Replace(yaml, "metadata:\n", "metadata:\n  namespace: default\n", 1)
		require.NoError(t, os.WriteFile(manifest, []byte(yaml), 0o644))
		out, err := k.cp.Kubectl(t.Context(), t, nil, "apply", "-f", manifest)
		require.NoError(t, err, out)
		assert.NotContains(t, out, "Warning", "the annotation draws no warning")
	}
	tools := func(want ...string) func(*v1alpha1.MCPServer) bool {
		slices.Sort(want)
		return func(s *v1alpha1.MCPServer) bool {
			return s.Status.State == v1alpha1.MCPServerStateRunning && slices.Equal(s.Status.Tools, want)
		}
	}

	apply(`tools: {include: [a, "` + marker + `"]}`)
	k.waitStatus(t, "fx", "exposes two of its three tools", tools("x_fx_"+marker, "x_fx_a"))
	s, _ := k.server(t, "fx")
	assert.Contains(t, s.Annotations["musterd.io/exposure"], "include", "kept by the API server")
	proc := theServerProc(t, marker)
	direct := d.mcpClient(t, "/mcp/direct", "", nil)
	assert.ElementsMatch(t, []string{"x_fx_" + marker, "x_fx_a"}, with(toolNames(t, direct), "x_fx_a", "x_fx_b", "x_fx_"+marker, "alpha"))

	apply(`{prefix: "", tools: {include: [a], overrides: {a: {name: alpha, description: The first.}}}}`)
	k.waitStatus(t, "fx", "exposes a as alpha", tools("alpha"))
	eventually(t, "/mcp/direct lists alpha alone", func() bool {
		return slices.Equal(with(toolNames(t, direct), "x_fx_a", "x_fx_b", "x_fx_"+marker, "alpha"), []string{"alpha"})
	})
	text, isErr := callTool(t, direct, "alpha", map[string]any{"message": "hi"})
	assert.False(t, isErr, text)
	assert.Equal(t, `a {"message":"hi"}`, text, "alpha reaches the server's a")
	own := d.mcpClient(t, "/mcp/servers/fx", "", nil)
	assert.Equal(t, []string{"a"}, toolNames(t, own), "the server's own view: filtered, not renamed")

	apply(`tools: {exclude: ["[b"]}`)
	bad := k.waitStatus(t, "fx", "warns of the bad glob", func(s *v1alpha1.MCPServer) bool {
		return slices.ContainsFunc(s.Status.Warnings, func(w string) bool { return strings.Contains(w, "tools.exclude[0]") })
	})
	i := slices.IndexFunc(bad.Status.Warnings, func(w string) bool { return strings.Contains(w, "tools.exclude[0]") })
	assert.Contains(t, bad.Status.Warnings[i], `metadata.annotations[musterd.io/exposure]: tools.exclude[0]: pattern "[b": unterminated character class`)
	assert.Contains(t, bad.Status.Warnings[i], "the last good policy stays in force")
	assert.Equal(t, []string{"alpha"}, bad.Status.Tools, "the last good policy stays")
	assert.True(t, proc.alive(), "the same process throughout: no restart")
}
