//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package peer

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Peer is the MCP client session a call comes from.
type Peer interface {
	// ID identifies the client session, unique within the process.
	ID() string
	// Capabilities are what the client offered in initialize; never nil.
	// Shared: never change them.
	Capabilities() *mcp.ClientCapabilities
	// Done is closed when the client session ends.
	Done() <-chan struct{}
	// Session returns this client unbound to any call.
	Session() Peer

	// CreateMessage asks the client for a completion of its model
	// (sampling/createMessage), and returns its answer unchanged.
	CreateMessage(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	// Elicit asks the client's user (elicitation/create).
	Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ListRoots asks the client for its roots (roots/list).
	ListRoots(ctx context.Context, params *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	// NotifyElicitationComplete tells the client that a URL-mode
	// elicitation finished.
	NotifyElicitationComplete(ctx context.Context, params *mcp.ElicitationCompleteParams) error
	// Log sends a log message to the client, if it asked for its level
	// (logging/setLevel).
	Log(ctx context.Context, params *mcp.LoggingMessageParams) error

	// LogLevel is the level the client last set with logging/setLevel; ""
	// until it sets one.
	LogLevel() mcp.LoggingLevel
	// RootsChanges counts the client's notifications/roots/list_changed.
	RootsChanges() uint64
	// Changed is closed at the client's next change of LogLevel or
	// RootsChanges; call it again for the one after.
	Changed() <-chan struct{}
}

type peerKey struct{}

// With returns ctx carrying p as the caller's client.
func With(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// From returns the caller's client ctx carries, if it carries one.
func From(ctx context.Context) (Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(Peer)
	return p, ok && p != nil
}

// Offers reports whether caps offer a server anything to ask of the
// client: sampling, elicitation or roots.
func Offers(caps *mcp.ClientCapabilities) bool {
	return caps != nil && (caps.Sampling != nil || caps.Elicitation != nil || caps.RootsV2 != nil)
}

// Round is a client's retry of a call whose server answered that it needs
// input (MCP 2026-07-28's input-required result): the client's answers,
// by the server's request IDs, and the server's own request state, as the
// server issued it.
type Round struct {
	Responses mcp.InputResponseMap
	State     string
}

type roundKey struct{}

// WithRound returns ctx carrying the client's answers for the call.
func WithRound(ctx context.Context, r Round) context.Context {
	return context.WithValue(ctx, roundKey{}, r)
}

// RoundFrom returns the answers ctx carries, if any.
func RoundFrom(ctx context.Context) (Round, bool) {
	r, ok := ctx.Value(roundKey{}).(Round)
	return r, ok
}

type relayKey struct{}

// relay is what WithRelay puts in a context.
type relay struct{ caps *mcp.ClientCapabilities }

// WithRelay returns ctx saying the caller's client takes a server's
// input-required results itself (MCP 2026-07-28): they are relayed to it
// as they are, its retry coming back with a Round, rather than asked of
// it in requests it could not receive. caps are the capabilities its
// request declared in its _meta (nil if it declared none): what it can
// be asked for, in this request only.
func WithRelay(ctx context.Context, caps *mcp.ClientCapabilities) context.Context {
	return context.WithValue(ctx, relayKey{}, relay{caps: caps})
}

type unrelayableKey struct{}

// WithoutRelay returns ctx for a call made on behalf of a relaying client
// that cannot take the call's input-required result itself: a workflow's
// step, whose result the workflow consumes, or a meta-tool's call, whose
// result it wraps. The call is no retry either, and Unrelayable says why
// it takes no questions.
func WithoutRelay(ctx context.Context) context.Context {
	if !Relays(ctx) {
		return ctx
	}
	ctx = context.WithValue(context.WithValue(ctx, relayKey{}, nil), roundKey{}, nil)
	return context.WithValue(ctx, unrelayableKey{}, true)
}

// Unrelayable reports whether ctx is a call of WithoutRelay's: its client
// takes input-required results itself, but not this call's.
func Unrelayable(ctx context.Context) bool {
	v, _ := ctx.Value(unrelayableKey{}).(bool)
	return v
}

// Relays reports whether ctx's client takes input-required results itself.
func Relays(ctx context.Context) bool {
	_, ok := ctx.Value(relayKey{}).(relay)
	return ok
}

// RelayedCapabilities returns the capabilities the request of ctx's
// client declared, if it takes input-required results itself (Relays);
// nil if it is not such a client or declared none. Shared: never change
// them.
func RelayedCapabilities(ctx context.Context) *mcp.ClientCapabilities {
	r, _ := ctx.Value(relayKey{}).(relay)
	return r.caps
}
