package mcpserve

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/tooldef"
)

// answerUnlisted is /mcp/direct's receiving middleware for a tools/call of
// a name the exposed set does not hold. The go-sdk would answer such a
// call "unknown tool" before musterd sees it, yet a name may be claimed
// (claim.go): a workflow that is declared but cannot run is not listed, and
// its call must say what is missing, as call_tool's do. So the call goes to the Backend like any other: a claimed name is
// answered by its claimer, and an unknown one gets musterd's error naming
// it (an invalid-params JSON-RPC error, as the go-sdk and the
// specification answer an unknown tool).
//
// Every other request, and every call of a listed name, passes straight
// to the go-sdk: the cost on the call path is one map lookup.
func (s *Server) answerUnlisted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		name := call.Params.Name
		if s.listed.Load().has[name] {
			// Listed, and so (unless the go-sdk rejected its schema)
			// registered: the go-sdk's handler serves it.
			return next(ctx, method, req)
		}
		res, err := s.forward(ctx, name, call)
		if errors.Is(err, ErrUnknownTool) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: redact.String(err.Error())}
		}
		if err != nil {
			return tooldef.Error(redact.String(err.Error())), nil
		}
		return res, nil
	}
}
