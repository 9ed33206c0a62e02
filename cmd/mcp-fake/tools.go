package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools with these names, given in -tools, do more than echo. They are
// what the workflow tests call: a result as JSON, a failure, a slow call
// whose cancellation the server sees, a large result, a call held until
// the test lets it go.
//
//   - json: its arguments as a JSON object (text).
//   - fail: an error result (isError), saying "failed as asked".
//   - sleep: sleeps "ms" milliseconds (default 60000), sending a progress
//     notification every 100 ms when the client asked for progress, then
//     answers {"slept":ms}. A call cancelled by the client ends at once and
//     is counted.
//   - sleeps: {"running":n,"cancelled":n,"finished":n} of sleep calls.
//   - big: a text of "bytes" bytes (default 2 MiB).
//   - gate, gate_waiting, gate_open: a gate named by the argument "name"
//     (gates.go). gate waits until it is open, then answers {"gate":name};
//     gate_waiting waits until a call waits at it (or has passed it);
//     gate_open opens it for good. A cancelled call ends at once.
//   - protocol: the protocol version the client initialized the session
//     with, or "none" when it initialized none (2026-07-28 discovers).
//   - client_caps: the calling client's capabilities as JSON: those its
//     request declared in 2026-07-28, else those of its initialize.
var specialTools = map[string]mcp.ToolHandler{
	"protocol":     protocolTool,
	"client_caps":  clientCapsTool,
	"json":         jsonTool,
	"fail":         failTool,
	"sleep":        sleepTool,
	"sleeps":       sleepsTool,
	"big":          bigTool,
	"gate":         gateTool,
	"gate_waiting": gateWaitingTool,
	"gate_open":    gateOpenTool,
}

var sleepsRunning, sleepsCancelled, sleepsFinished atomic.Int64

func protocolTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if p := req.Session.InitializeParams(); p != nil {
		return textResult(p.ProtocolVersion), nil
	}
	return textResult("none"), nil
}

// clientCapsTool answers the calling client's capabilities as JSON: those
// of the request's _meta in 2026-07-28, else those of its initialize.
func clientCapsTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	data, err := json.Marshal(req.ClientCapabilities())
	if err != nil {
		return nil, err
	}
	return textResult(string(data)), nil
}

func arguments(req *mcp.CallToolRequest) map[string]any {
	args := map[string]any{}
	if len(req.Params.Arguments) > 0 {
		_ = json.Unmarshal(req.Params.Arguments, &args)
	}
	return args
}

func jsonTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	data, _ := json.Marshal(arguments(req))
	return textResult(string(data)), nil
}

func failTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	data, _ := json.Marshal(arguments(req))
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed as asked: " + string(data)}}}, nil
}

func sleepTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ms := 60000.0
	if v, ok := arguments(req)["ms"].(float64); ok {
		ms = v
	}
	sleepsRunning.Add(1)
	defer sleepsRunning.Add(-1)
	logf("sleep: sleeping %vms", ms)
	done := time.After(time.Duration(ms) * time.Millisecond)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	token := req.Params.GetProgressToken()
	for n := 1.0; ; n++ {
		select {
		case <-ctx.Done():
			sleepsCancelled.Add(1)
			logf("sleep: cancelled")
			return nil, ctx.Err()
		case <-done:
			sleepsFinished.Add(1)
			return textResult(fmt.Sprintf(`{"slept":%v}`, ms)), nil
		case <-tick.C:
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: "sleeping"})
			}
		}
	}
}

func sleepsTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text := fmt.Sprintf(`{"running":%d,"cancelled":%d,"finished":%d}`, sleepsRunning.Load(), sleepsCancelled.Load(), sleepsFinished.Load())
	return textResult(text), nil
}

func bigTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := 2 << 20
	if v, ok := arguments(req)["bytes"].(float64); ok {
		n = int(v)
	}
	return textResult(strings.Repeat("x", n)), nil
}

// textResult is a result of one text item.
func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
