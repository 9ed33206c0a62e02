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
// whose cancellation the server sees, a large result.
//
//   - json: its arguments as a JSON object (text).
//   - fail: an error result (isError), saying "failed as asked".
//   - sleep: sleeps "ms" milliseconds (default 60000), sending a progress
//     notification every 100 ms when the client asked for progress, then
//     answers {"slept":ms}. A call cancelled by the client ends at once and
//     is counted.
//   - sleeps: {"running":n,"cancelled":n,"finished":n} of sleep calls.
//   - big: a text of "bytes" bytes (default 2 MiB).
var specialTools = map[string]mcp.ToolHandler{
	"json":   jsonTool,
	"fail":   failTool,
	"sleep":  sleepTool,
	"sleeps": sleepsTool,
	"big":    bigTool,
}

var sleepsRunning, sleepsCancelled, sleepsFinished atomic.Int64

func arguments(req *mcp.CallToolRequest) map[string]any {
	args := map[string]any{}
	if len(req.Params.Arguments) > 0 {
		_ = json.Unmarshal(req.Params.Arguments, &args)
	}
	return args
}

func jsonTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	data, _ := json.Marshal(arguments(req))
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil
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
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(`{"slept":%v}`, ms)}}}, nil
		case <-tick.C:
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: n, Message: "sleeping"})
			}
		}
	}
}

func sleepsTool(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	text := fmt.Sprintf(`{"running":%d,"cancelled":%d,"finished":%d}`, sleepsRunning.Load(), sleepsCancelled.Load(), sleepsFinished.Load())
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
}

func bigTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	n := 2 << 20
	if v, ok := arguments(req)["bytes"].(float64); ok {
		n = int(v)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", n)}}}, nil
}
