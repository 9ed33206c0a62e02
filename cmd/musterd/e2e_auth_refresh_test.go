package main

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A protected server that stops taking a user's token before it expires
// (its grant revoked, say) answers 401: musterd refreshes the token with
// the provider once and sends the request again, and the user's call goes
// through with no new login. The server saw one refusal and two tokens.
func TestE2EATokenRefusedBeforeItsExpiryIsRefreshedOnceAndTheCallGoesThrough(t *testing.T) {
	r := startLoginRigScoped(t, "openid email offline_access")
	alice := r.mcpClient(t, "/mcp", "2025-11-25", nil)
	r.login(t, alice, "alice")
	before, isErr := musterCall(t, alice, "x_protected_whoami", nil)
	require.False(t, isErr, before)
	require.Len(t, presentedTokens(t, r.serverURL), 1)

	base := strings.TrimSuffix(r.serverURL, "/mcp")
	refusals := func() string {
		resp, err := http.Get(base + "/refusals")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return strings.TrimSpace(string(body))
	}
	// The 401s musterd's own connection got, with no user's token.
	refusedBefore, err := strconv.Atoi(refusals())
	require.NoError(t, err)
	resp, err := http.Post(base+"/refuse-taken", "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)

	after, isErr := musterCall(t, alice, "x_protected_whoami", nil)
	require.False(t, isErr, "the call after the refusal: %s\n%s", after, r.stderr)
	assert.Equal(t, before, after, "still alice")
	assert.Len(t, presentedTokens(t, r.serverURL), 2, "the refused token, and the one refreshed for it")
	assert.Equal(t, strconv.Itoa(refusedBefore+1), refusals(), "one refusal: the refreshed token was taken at once")
	out, isErr := musterCall(t, alice, "core_auth_login", map[string]any{"server": "protected"})
	assert.False(t, isErr)
	assert.Equal(t, "Server 'protected' is already authenticated.", out)
}
