package peer_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/peer"
)

func TestARelayingClientsCapabilitiesTravelWithItsCall(t *testing.T) {
	ctx := context.Background()
	assert.False(t, peer.Relays(ctx))
	assert.Nil(t, peer.RelayedCapabilities(ctx))

	caps := &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
	relayed := peer.WithRelay(ctx, caps)
	assert.True(t, peer.Relays(relayed))
	assert.Same(t, caps, peer.RelayedCapabilities(relayed))
	assert.True(t, peer.Relays(peer.WithRelay(ctx, nil)), "a client that declared nothing still relays")
}

// A workflow's step on behalf of a relaying client is neither relayed nor
// a retry.
func TestWithoutRelayDropsTheRelayAndTheRound(t *testing.T) {
	ctx := peer.WithRound(peer.WithRelay(context.Background(), &mcp.ClientCapabilities{}), peer.Round{State: "s"})
	step := peer.WithoutRelay(ctx)
	assert.False(t, peer.Relays(step))
	assert.Nil(t, peer.RelayedCapabilities(step))
	_, isRetry := peer.RoundFrom(step)
	assert.False(t, isRetry)
	assert.True(t, peer.Unrelayable(step))
	assert.False(t, peer.Unrelayable(ctx))
	_, stillRetry := peer.RoundFrom(ctx)
	assert.True(t, stillRetry, "the caller's own context is unchanged")

	plain := peer.WithRound(context.Background(), peer.Round{State: "s"})
	assert.Equal(t, plain, peer.WithoutRelay(plain), "a call that does not relay is left as it is")
}
