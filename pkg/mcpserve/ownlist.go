package mcpserve

import (
	"context"
	"encoding/base64"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A caller whose owner connects to servers of its own (a user logged in to
// a protected server) sees their tools on /mcp/direct as on the
// meta-tools: its tools/list is its owner's set (Backend.ToolsFor), paged
// here, since the go-sdk lists the tools registered on the view's server,
// which are every caller's. Every other caller's tools/list is the
// go-sdk's. Calls of those tools already reach the Backend (unlisted.go).

// personalBackend is a Backend that tells which callers see a set of
// their own (*router.Router does); with another Backend every caller
// lists the exposed set.
type personalBackend interface {
	Personal(ctx context.Context) bool
}

// ownCursorPrefix marks a cursor of an owner's listing: the name it
// continues after follows.
const ownCursorPrefix = "own:"

// listOwnTools is /mcp/direct's receiving middleware for tools/list.
func (s *Server) listOwnTools(next mcp.MethodHandler) mcp.MethodHandler {
	personal, _ := s.opts.Backend.(personalBackend)
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/list" || personal == nil {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if ctx := s.withCaller(ctx, ss); personal.Personal(ctx) {
			return s.ownToolsList(ctx, req)
		}
		return next(ctx, method, req)
	}
}

// ownToolsList answers tools/list with the caller's own set.
func (s *Server) ownToolsList(ctx context.Context, req mcp.Request) (mcp.Result, error) {
	var cursor string
	if list, ok := req.(*mcp.ListToolsRequest); ok && list.Params != nil {
		cursor = list.Params.Cursor
	}
	return ownToolsPage(s.opts.Backend.ToolsFor(ctx), cursor, mcp.DefaultPageSize)
}

// ownToolsPage is the page of tools (sorted by name) after cursor, at
// most size of them, with the cursor of the next page if there is one.
func ownToolsPage(tools []*mcp.Tool, cursor string, size int) (*mcp.ListToolsResult, error) {
	start := 0
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		after, ours := strings.CutPrefix(string(raw), ownCursorPrefix)
		if err != nil || !ours {
			// A cursor of the listing before the caller's own tools came:
			// its place in this one is unknown.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor: the tools changed; list them again from the start"}
		}
		start, _ = slices.BinarySearchFunc(tools, after, func(t *mcp.Tool, name string) int { return strings.Compare(t.Name, name) })
		if start < len(tools) && tools[start].Name == after {
			start++
		}
	}
	end := min(start+size, len(tools))
	res := &mcp.ListToolsResult{Tools: slices.Clone(tools[start:end])}
	if end < len(tools) {
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(ownCursorPrefix + tools[end-1].Name))
	}
	return res, nil
}
