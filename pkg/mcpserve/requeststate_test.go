package mcpserve

import (
	"strings"
	"testing"
	"time"

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
	alice := binding("direct", "x_conf_test", "", "Bearer alice")
	bob := binding("direct", "x_conf_test", "", "Bearer bob")

	sealed := s.seal("server-state-1", alice)
	assert.True(t, strings.HasPrefix(sealed, requestStatePrefix))
	assert.NotContains(t, sealed, "server-state-1", "the server's own state is not readable")

	_, err := s.open(sealed, bob)
	assert.ErrorIs(t, err, errRequestState, "another user's call")
	_, err = s.open(sealed, binding("direct", "x_other_tool", "", "Bearer alice"))
	assert.ErrorIs(t, err, errRequestState, "another tool")
	_, err = s.open(sealed, binding("direct", "x_conf_test", "session-2", "Bearer alice"))
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
