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

// declarePinned declares name with the protocol-version annotation set to
// pin (none if pin is nil) and the given spec lines.
func (h *harness) declarePinned(t *testing.T, name string, pin *string, spec ...string) {
	t.Helper()
	path := "mcpservers/" + name + ".yaml"
	meta := "metadata:\n  name: " + name + "\n"
	if pin != nil {
		meta += "  annotations:\n    " + supervisor.ProtocolVersionAnnotation + ": \"" + *pin + "\"\n"
	}
	src := "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\n" + meta + "spec:\n  " + strings.Join(spec, "\n  ") + "\n"
	docs, err := v1alpha1.DecodeFile(path, []byte(src))
	require.NoError(t, err)
	var out []resources.Doc
	for _, d := range docs {
		out = append(out, resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err, Warnings: d.Warnings.Strings()})
	}
	h.ix.SetFile(path, out, nil, serverKey(name))
}

// The annotation pins the version musterd speaks to the server; a change
// of it restarts the server, one that changes nothing (newest and none)
// does not, and a bad value is a warning in the status with the default
// in force.
func TestTheProtocolVersionAnnotationPinsTheGenerationAndItsChangeRestarts(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("pinned")
	spec := fakeSpec(true, "-tools", "echo")
	pin := func(v string) *string { return &v }

	h.declarePinned(t, "pinned", pin("2025-11-25"), spec...)
	require.NoError(t, h.reconcile(t, k).Err)
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateRunning, st.State)
	assert.Equal(t, "2025-11-25", st.ProtocolVersion)
	assert.Empty(t, st.Warnings)
	first := h.pid(t, k)

	h.declarePinned(t, "pinned", pin("newest"), spec...)
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, "2026-07-28", h.status(t, k).ProtocolVersion)
	second := h.pid(t, k)
	assert.NotEqual(t, first, second, "a changed pin restarts the server")
	assert.Equal(t, 1, h.status(t, k).RestartCount)

	h.declarePinned(t, "pinned", nil, spec...)
	require.NoError(t, h.reconcile(t, k).Err)
	assert.Equal(t, second, h.pid(t, k), "newest is the default: dropping it changes nothing")

	h.declarePinned(t, "pinned", pin("2025-13-01"), spec...)
	require.NoError(t, h.reconcile(t, k).Err)
	st = h.status(t, k)
	assert.Equal(t, second, h.pid(t, k), "a bad value is the default: nothing to restart for")
	assert.Equal(t, "2026-07-28", st.ProtocolVersion)
	require.Len(t, st.Warnings, 1)
	assert.Contains(t, st.Warnings[0], "metadata.annotations[musterd.io/protocol-version]: \"2025-13-01\" is not newest or a protocol version musterd speaks (2026-07-28, 2025-11-25")
	assert.True(t, strings.HasSuffix(st.Warnings[0], "; newest applies"), st.Warnings[0])
}
