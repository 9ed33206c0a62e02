package mcpserve

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/router"
)

// Completer is a Backend that completes the arguments of the exposed
// prompts and resource templates; *router.Router is one. With it, /mcp and
// /mcp/direct advertise the completions capability and answer
// completion/complete.
type Completer interface {
	// Complete routes params, whose reference names an exposed prompt or
	// URI template, to the server that offers it.
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
}

// completionHandler is the completion/complete handler of /mcp and
// /mcp/direct, or nil when the Backend cannot complete.
func (s *Server) completionHandler() func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	c, ok := s.opts.Backend.(Completer)
	if !ok {
		return nil
	}
	return func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		res, err := c.Complete(ctx, req.Params)
		if err != nil {
			return nil, completionError(err)
		}
		return res, nil
	}
}

// completionError is the JSON-RPC error of a completion that failed: a
// reference nothing offers, or one whose server offers no completions, is
// invalid params (-32602), naming the prompt, template or server (not
// method not found, -32601: the go-sdk replaces the message of an error
// of that code by its own, which would not name the server); anything
// else (a server down) is its text, as a call's.
func completionError(err error) error {
	msg := redact.String(err.Error())
	switch {
	case errors.Is(err, router.ErrUnknownPrompt), errors.Is(err, router.ErrUnknownTemplate),
		errors.Is(err, router.ErrBadReference), errors.Is(err, router.ErrNoCompletions):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
	}
	return errors.New(msg)
}
