package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/supervisor"
)

// declareExposed declares name as declare does, with policy as its
// annotation musterd.io/exposure.
func (h *harness) declareExposed(t *testing.T, name, policy string, spec ...string) {
	t.Helper()
	path := "mcpservers/" + name + ".yaml"
	src := "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: " + name +
		"\n  annotations:\n    musterd.io/exposure: " + policy +
		"\nspec:\n  " + strings.Join(spec, "\n  ") + "\n"
	docs, err := v1alpha1.DecodeFile(path, []byte(src))
	require.NoError(t, err)
	var out []resources.Doc
	for _, d := range docs {
		out = append(out, resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err, Warnings: d.Warnings.Strings()})
	}
	h.ix.SetFile(path, out, nil, serverKey(name))
}

// A policy names the server's tools in status; a change of it restarts
// nothing; a bad one is an error naming file and field, and the last good
// one stays in force.
func TestAnExposurePolicyIsReconciledWithoutARestartAndABadOneKeepsTheLastGood(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("p")
	spec := fakeSpec(true, "-tools", "echo,reverse")
	h.declareExposed(t, "p", `'{tools: {include: [echo]}}'`, spec...)
	require.NoError(t, h.reconcile(t, k).Err)
	st := h.status(t, k)
	assert.Equal(t, []string{"x_p_echo"}, st.Tools)
	assert.Equal(t, "serving 1 of its 2 tools", st.Conditions[0].Message)
	pid := h.pid(t, k)

	h.declareExposed(t, "p", `'{prefix: "", tools: {overrides: {echo: {name: say}}}}'`, spec...)
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, []string{"reverse", "say"}, h.status(t, k).Tools)
	assert.Equal(t, pid, h.pid(t, k), "a change of policy restarts nothing")

	for policy, want := range map[string]string{
		`'{tools: {include: ["[e"]}}'`:                    `mcpservers/p.yaml: metadata.annotations[musterd.io/exposure]: tools.include[0]: pattern "[e": unterminated character class at offset 0; the last good policy stays in force`,
		`'{tools: {overrides: {echo: {name: reverse}}}}'`: `mcpservers/p.yaml: metadata.annotations[musterd.io/exposure]: tools.overrides.echo.name: "reverse" is the name of the server's tool reverse: two tools cannot share a name; the last good policy stays in force`,
	} {
		h.declareExposed(t, "p", policy, spec...)
		res := h.reconcile(t, k)
		require.Error(t, res.Err, policy)
		assert.Equal(t, want, res.Err.Error())
		st := h.status(t, k)
		assert.Equal(t, []string{"reverse", "say"}, st.Tools, "the last good policy stays: %s", policy)
		assert.Contains(t, st.Warnings, want)
		assert.Equal(t, pid, h.pid(t, k))
	}

	h.ix.RemoveFile("mcpservers/p.yaml")
	h.reconcileOnce(t, k)
	assert.Nil(t, h.cat.Exposure(k), "a deleted server's policy goes with it")
}

// A policy that never parsed exposes nothing of its server, rather than
// what it meant to hide.
func TestAServerWhosePolicyNeverParsedExposesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("q")
	h.declareExposed(t, "q", `'{tools: {exclude: [reverse], bogus: 1}}'`, fakeSpec(true, "-tools", "echo,reverse")...)
	res := h.reconcile(t, k)
	require.Error(t, res.Err)
	assert.Equal(t, "mcpservers/q.yaml: metadata.annotations[musterd.io/exposure]: tools.bogus: unknown field (known: include, exclude, overrides); nothing of the server is exposed until it is fixed", res.Err.Error())
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateRunning, st.State, "the server runs")
	assert.Empty(t, st.Tools)
	assert.Equal(t, "serving 0 of its 2 tools", st.Conditions[0].Message)
}
