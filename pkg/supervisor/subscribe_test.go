package supervisor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/supervisor"
)

// Session is what the router renews resource subscriptions by: the same
// while a session lasts, another once the server started again, none
// once it stopped.
func TestSessionIsAnotherForEachStartOnly(t *testing.T) {
	t.Parallel()
	h := newHarness(t, supervisor.Options{})
	k := key("session")
	_, ok := h.sup.Session(k)
	assert.False(t, ok, "unknown")

	spec := fake("-tools", "echo")
	h.ensure(t, k, spec)
	first, ok := h.sup.Session(k)
	require.True(t, ok, "running")
	spec.Description = "restarts nothing"
	h.ensure(t, k, spec)
	same, _ := h.sup.Session(k)
	assert.Equal(t, first, same, "the same session")

	h.ensure(t, k, fake("-tools", "echo,sum"))
	second, ok := h.sup.Session(k)
	require.True(t, ok)
	assert.NotEqual(t, first, second, "a changed spec restarted it: a new session")

	require.NoError(t, h.sup.Stop(t.Context(), k))
	_, ok = h.sup.Session(k)
	assert.False(t, ok, "stopped")
}
