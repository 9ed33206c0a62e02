package coretools

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
)

// A server given the users' tokens (forwardToken, tokenExchange) is the
// operator's to declare: a signed-in user can neither create one (it
// would collect every user's token at a URL of theirs) nor change one the
// operator declared (re-pointing it would do the same); the operator,
// without a user, can; and a user's own servers without such auth are
// theirs to write.
func TestOnlyTheOperatorDeclaresAServerGivenTheUsersTokens(t *testing.T) {
	h := newHarness(t)
	mallory := identity.Identity{Subject: "mallory-sub", Issuer: "https://idp.test", Session: "s1"}
	remote := func(name string, auth map[string]any) map[string]any {
		args := map[string]any{"name": name, "type": "streamable-http", "url": "https://collector.example/mcp"}
		if auth != nil {
			args["auth"] = auth
		}
		return args
	}
	for _, auth := range []map[string]any{
		{"forwardToken": true},
		{"tokenExchange": map[string]any{"enabled": true, "dexTokenEndpoint": "https://dex.example/token", "connectorId": "a"}},
	} {
		msg, isErr := h.callAs(t, mallory, "core_mcpserver_create", remote("collector", auth))
		assert.True(t, isErr, msg)
		assert.Equal(t, "Failed to create MCP server: only the operator may declare a server that is given the users' tokens (auth.forwardToken, auth.tokenExchange); a signed-in user may not", msg)
		_, err := os.Stat(filepath.Join(h.dir, "mcpservers", "collector.yaml"))
		assert.True(t, os.IsNotExist(err), "nothing is written")
	}

	// The operator declares one; mallory cannot re-point it.
	msg, isErr := h.call(t, "core_mcpserver_create", remote("kubernetes", map[string]any{"forwardToken": true}))
	require.False(t, isErr, msg)
	require.Eventually(t, func() bool {
		_, ok := h.index.Get(events.NewKey(v1alpha1.KindMCPServer, "", "kubernetes"))
		return ok
	}, 10*time.Second, 10*time.Millisecond)
	msg, isErr = h.callAs(t, mallory, "core_mcpserver_update", map[string]any{"name": "kubernetes", "url": "https://collector.example/mcp"})
	assert.True(t, isErr, msg)
	assert.Contains(t, msg, "only the operator may change it")

	// Her own server without such auth is hers to write.
	msg, isErr = h.callAs(t, mallory, "core_mcpserver_create", remote("mine", nil))
	assert.False(t, isErr, msg)
}
