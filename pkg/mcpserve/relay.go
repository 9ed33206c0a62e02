package mcpserve

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/peer"
)

// A client of 2026-07-28 takes a server's input-required results itself
// and sends its answers back with the same request again; one of the
// older generation is asked in requests of its session (peer.go). The
// prompts/get and resources/read of every view go through relayPrompt and
// relayResource, as tools/call goes through enter and retryRound: the
// request of a newer client carries peer.WithRelay, its retry's answers a
// peer.Round, and the result's request state is sealed for it
// (requeststate.go). An older client's are left as they were: whatever a
// server asks is asked of the client on its session.

// relays reports whether req comes from a client that takes input-required
// results itself: a request of the newest generation.
func relays(ss *mcp.ServerSession) bool {
	return ss != nil && newGenerationSession(ss) // generations.go
}

// relayPrompt gets a prompt with get for req on view: for a newer client,
// with its answers and the server's state opened (or an invalid-params
// error, if its state does not open), and the result's state sealed.
func (s *Server) relayPrompt(ctx context.Context, view string, req *mcp.GetPromptRequest, get func(context.Context) (*mcp.GetPromptResult, error)) (*mcp.GetPromptResult, error) {
	if !relays(req.Session) {
		return get(ctx)
	}
	c := promptCall(view, req)
	ctx, err := s.retryRound(peer.WithRelay(ctx, req.ClientCapabilities()), c, req.Params.InputResponses, req.Params.RequestState)
	if err != nil {
		return nil, err
	}
	res, err := get(ctx)
	if err != nil {
		return nil, err
	}
	return sealResult(s, res, func(r *mcp.GetPromptResult) *string { return &r.RequestState }, c), nil
}

// relayResource is relayPrompt's twin for resources/read.
func (s *Server) relayResource(ctx context.Context, view string, req *mcp.ReadResourceRequest, read func(context.Context) (*mcp.ReadResourceResult, error)) (*mcp.ReadResourceResult, error) {
	if !relays(req.Session) {
		return read(ctx)
	}
	c := resourceCall(view, req)
	ctx, err := s.retryRound(peer.WithRelay(ctx, req.ClientCapabilities()), c, req.Params.InputResponses, req.Params.RequestState)
	if err != nil {
		return nil, err
	}
	res, err := read(ctx)
	if err != nil {
		return nil, err
	}
	return sealResult(s, res, func(r *mcp.ReadResourceResult) *string { return &r.RequestState }, c), nil
}
