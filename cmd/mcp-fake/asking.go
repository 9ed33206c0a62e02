//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools that ask the client while, or after, they run: what the
// pass-through tests call.
//
//   - sample: asks the client's model (sampling/createMessage) with the
//     argument "prompt", and answers "sampled: <the model's text>".
//   - elicit: asks the client's user (elicitation/create) with the
//     argument "message" for a "name", and answers "elicited: <action>
//     <content as JSON>".
//   - roots: asks the client for its roots (roots/list), and answers them
//     as "roots: <uri> <uri>…".
//   - log: sends notifications/message at the levels of the argument
//     "levels" (a comma-separated list, default "debug,info,error"), each
//     saying "<level> from <the argument "from">", then answers "logged".
//   - ask_later: answers "asking later" at once, then, outside any call,
//     asks the client for its roots;
//   - asked_later: waits (up to 10 s) for that question's outcome and
//     answers it ("roots: …" or "error: …").
//   - roots_changes: how many notifications/roots/list_changed the server
//     has had from its clients.
//   - url_required: fails with a URL elicitation required error (-32042)
//     whose data names the URL to visit.
//   - asked: the outcome of the last elicit or sample whose caller went
//     away before it answered ("" until then), for the tests of a client
//     that disconnects while a server waits.
//
// Each failed question answers "error: <the error>" as an error result.
var askingTools = map[string]mcp.ToolHandler{
	"sample":        sampleTool,
	"elicit":        elicitTool,
	"roots":         rootsTool,
	"log":           logTool,
	"ask_later":     askLaterTool,
	"asked_later":   askedLaterTool,
	"asked":         askedTool,
	"url_required":  urlRequiredTool,
	"roots_changes": rootsChangesTool,
}

func init() {
	for name, h := range askingTools {
		specialTools[name] = h
	}
}

func askError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "error: " + err.Error()}}}
}

// lastAsked is the outcome of the last question whose call was cancelled.
var lastAsked struct {
	sync.Mutex
	outcome string
}

// noteIfAbandoned records err when the call asking was cancelled, so that
// a test can see what the server got when its client went away.
func noteIfAbandoned(ctx context.Context, err error) {
	if ctx.Err() == nil && err == nil {
		return
	}
	lastAsked.Lock()
	defer lastAsked.Unlock()
	if err != nil {
		lastAsked.outcome = "error: " + err.Error()
	} else {
		lastAsked.outcome = "cancelled"
	}
}

func sampleTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	prompt, _ := arguments(req)["prompt"].(string)
	res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
		MaxTokens: 100,
		Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: prompt}}},
	})
	noteIfAbandoned(ctx, err)
	if err != nil {
		return askError(err), nil
	}
	text := ""
	if t, ok := res.Content.(*mcp.TextContent); ok {
		text = t.Text
	}
	return textResult("sampled: " + text), nil
}

func elicitTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	message, _ := arguments(req)["message"].(string)
	res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message:         message,
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`),
	})
	noteIfAbandoned(ctx, err)
	if err != nil {
		return askError(err), nil
	}
	content, _ := json.Marshal(res.Content)
	return textResult(fmt.Sprintf("elicited: %s %s", res.Action, content)), nil
}

func rootsTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	res, err := req.Session.ListRoots(ctx, nil)
	if err != nil {
		return askError(err), nil
	}
	return textResult(rootsText(res)), nil
}

func rootsText(res *mcp.ListRootsResult) string {
	uris := make([]string, 0, len(res.Roots))
	for _, r := range res.Roots {
		uris = append(uris, r.URI)
	}
	return "roots: " + strings.Join(uris, " ")
}

func logTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := arguments(req)
	levels, _ := args["levels"].(string)
	if levels == "" {
		levels = "debug,info,error"
	}
	from, _ := args["from"].(string)
	for level := range strings.SplitSeq(levels, ",") {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: mcp.LoggingLevel(level), Logger: "mcp-fake", Data: level + " from " + from}); err != nil {
			return askError(err), nil
		}
	}
	return textResult("logged"), nil
}

// later is the outcome of ask_later's question, once it has one.
var later struct {
	sync.Mutex
	outcome string
	done    chan struct{}
}

func askLaterTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	later.Lock()
	done := make(chan struct{})
	later.done, later.outcome = done, ""
	later.Unlock()
	session := req.Session
	go func() {
		time.Sleep(50 * time.Millisecond) // the call has been answered by then
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := session.ListRoots(ctx, nil)
		outcome := ""
		if err != nil {
			outcome = "error: " + err.Error()
		} else {
			outcome = rootsText(res)
		}
		later.Lock()
		later.outcome = outcome
		later.Unlock()
		close(done)
	}()
	return textResult("asking later"), nil
}

func askedLaterTool(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	later.Lock()
	done := later.done
	later.Unlock()
	if done == nil {
		return askError(fmt.Errorf("ask_later was not called")), nil
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return askError(fmt.Errorf("no outcome within 10s")), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	later.Lock()
	defer later.Unlock()
	return textResult(later.outcome), nil
}

func askedTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	lastAsked.Lock()
	defer lastAsked.Unlock()
	return textResult(lastAsked.outcome), nil
}

// urlRequiredTool answers every call with the JSON-RPC error a server
// sends when its client must first visit a URL (-32042), naming it in the
// error's data.
func urlRequiredTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	data, _ := json.Marshal(map[string]any{"elicitations": []map[string]any{{
		"mode": "url", "elicitationId": "visit-1", "url": "https://example.com/consent", "message": "consent first",
	}}})
	return nil, &jsonrpc.Error{Code: mcp.CodeURLElicitationRequired, Message: "visit the URL first", Data: data}
}

// rootsChanges counts the clients' notifications/roots/list_changed.
var rootsChanges atomic.Int64

// countRootsChanges makes a server with opts count its clients'
// notifications/roots/list_changed (roots_changes).
func countRootsChanges(opts *mcp.ServerOptions) {
	opts.RootsListChangedHandler = func(context.Context, *mcp.RootsListChangedRequest) { rootsChanges.Add(1) }
}

func rootsChangesTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return textResult(strconv.FormatInt(rootsChanges.Load(), 10)), nil
}
