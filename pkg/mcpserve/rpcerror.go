package mcpserve

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/redact"
)

// serverError is err as a view answers it: the server's own JSON-RPC
// error (its code and data, the message redacted) when a server answered
// with one, else err's redacted text.
func serverError(err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return &jsonrpc.Error{Code: rpcErr.Code, Message: redact.String(err.Error()), Data: rpcErr.Data}
	}
	return errors.New(redact.String(err.Error()))
}

// mustStayAnError reports whether a server's error for a tool call must
// reach the client as a JSON-RPC error rather than a tool's error result:
// a URL elicitation the client must complete before it calls again
// (-32042), whose data its client acts on.
func mustStayAnError(err error) bool {
	var rpcErr *jsonrpc.Error
	return errors.As(err, &rpcErr) && rpcErr.Code == mcp.CodeURLElicitationRequired
}
