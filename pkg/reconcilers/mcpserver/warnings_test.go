package mcpserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/supervisor"
)

// A server whose file has a field musterd ignores runs as declared, and
// its status names the field.
func TestIgnoredFieldsAreWarningsInTheStatus(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := serverKey("warned")
	h.declare(t, "warned", append(fakeSpec(true, "-tools", "echo"), "replicas: 3")...)

	require.NoError(t, h.reconcile(t, k).Err)
	st := h.status(t, k)
	assert.Equal(t, v1alpha1.MCPServerStateRunning, st.State)
	assert.Equal(t, []string{"x_warned_echo"}, st.Tools)
	assert.Equal(t, []string{"mcpservers/warned.yaml:11: spec.replicas: unknown field, ignored"}, st.Warnings)
}
