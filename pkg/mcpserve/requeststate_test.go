package mcpserve

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A sealed request state opens once, for the call it was issued for,
// within its time, and gives the server's own state back unchanged; a
// forged, replayed, expired or another call's state does not open.
func TestARequestStateOpensOnceForItsOwnCall(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s := newSealer()
	s.now = func() time.Time { return now }
	alice := binding("direct", kindTool, "x_conf_test", "", "Bearer alice")
	bob := binding("direct", kindTool, "x_conf_test", "", "Bearer bob")

	sealed := s.seal("server-state-1", alice)
	assert.True(t, strings.HasPrefix(sealed, requestStatePrefix))
	assert.NotContains(t, sealed, "server-state-1", "the server's own state is not readable")

	_, err := s.open(sealed, bob)
	assert.ErrorIs(t, err, errRequestState, "another user's call")
	_, err = s.open(sealed, binding("direct", kindTool, "x_other_tool", "", "Bearer alice"))
	assert.ErrorIs(t, err, errRequestState, "another tool")
	_, err = s.open(sealed, binding("direct", kindTool, "x_conf_test", "session-2", "Bearer alice"))
	assert.ErrorIs(t, err, errRequestState, "another session")

	state, err := s.open(sealed, alice)
	require.NoError(t, err)
	assert.Equal(t, "server-state-1", state)
	_, err = s.open(sealed, alice)
	assert.ErrorIs(t, err, errRequestState, "replayed")

	forged := []byte(s.seal("server-state-2", alice))
	forged[len(forged)-3] ^= 1
	_, err = s.open(string(forged), alice)
	assert.ErrorIs(t, err, errRequestState, "forged")
	_, err = s.open("server-state-2", alice)
	assert.ErrorIs(t, err, errRequestState, "a bare server state")
	_, err = s.open(newSealer().seal("server-state-3", alice), alice)
	assert.ErrorIs(t, err, errRequestState, "sealed by another process")

	late := s.seal("server-state-4", alice)
	now = now.Add(requestStateTTL + time.Second)
	_, err = s.open(late, alice)
	assert.ErrorIs(t, err, errRequestState, "expired")
}

// A state is bound to the kind of call it was issued for and what that
// names: a prompt's does not open for a tool of the same name nor the
// other way round, a resource's only for its own URI, on its own view.
func TestARequestStateOpensOnlyForItsKindAndName(t *testing.T) {
	s := newSealer()
	header := http.Header{}
	header.Set("Authorization", "Bearer alice")
	extra := &mcp.RequestExtra{Header: header}
	prompt := stateCall{view: "direct", kind: kindPrompt, name: "greet", extra: extra}
	tool := stateCall{view: "direct", kind: kindTool, name: "greet", extra: extra}
	resource := stateCall{view: "direct", kind: kindResource, name: "file:///a.md", extra: extra}

	forPrompt := s.seal("p", prompt.binding())
	_, err := s.open(forPrompt, tool.binding())
	assert.ErrorIs(t, err, errRequestState, "a prompt's state for a tool of its name")
	forTool := s.seal("t", tool.binding())
	_, err = s.open(forTool, prompt.binding())
	assert.ErrorIs(t, err, errRequestState, "a tool's state for a prompt of its name")

	forResource := s.seal("r", resource.binding())
	other := resource
	other.name = "file:///b.md"
	_, err = s.open(forResource, other.binding())
	assert.ErrorIs(t, err, errRequestState, "another resource's")
	elsewhere := resource
	elsewhere.view = "muster"
	_, err = s.open(forResource, elsewhere.binding())
	assert.ErrorIs(t, err, errRequestState, "the same resource on another view")
	someoneElse := resource
	someoneElse.extra = &mcp.RequestExtra{Header: http.Header{"Authorization": {"Bearer bob"}}}
	_, err = s.open(forResource, someoneElse.binding())
	assert.ErrorIs(t, err, errRequestState, "the same resource read by another user")

	for what, c := range map[string]struct {
		sealed string
		call   stateCall
		want   string
	}{"prompt": {forPrompt, prompt, "p"}, "tool": {forTool, tool, "t"}, "resource": {forResource, resource, "r"}} {
		state, err := s.open(c.sealed, c.call.binding())
		require.NoError(t, err, what)
		assert.Equal(t, c.want, state, what)
	}
}
