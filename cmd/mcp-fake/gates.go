package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A gate lets a test hold a call at the server for as long as it needs,
// with no timing: a step calls gate and waits; the test calls gate_waiting
// to know the step is there, does what it must meanwhile, then gate_open.
// Gates are made on first use, by any of the three, and live as long as
// the process.
type gate struct {
	arrived chan struct{} // closed when a call first waits at it
	opened  chan struct{} // closed by gate_open
}

var gates = struct {
	sync.Mutex
	m map[string]*gate
}{m: map[string]*gate{}}

// gateNamed returns the gate of the call's "name" argument, made if new.
func gateNamed(req *mcp.CallToolRequest) (string, *gate, error) {
	name, _ := arguments(req)["name"].(string)
	if name == "" {
		return "", nil, fmt.Errorf(`%s: the argument "name" (a string) is required`, req.Params.Name)
	}
	gates.Lock()
	defer gates.Unlock()
	g := gates.m[name]
	if g == nil {
		g = &gate{arrived: make(chan struct{}), opened: make(chan struct{})}
		gates.m[name] = g
	}
	return name, g, nil
}

// closeOnce closes ch unless it is closed already; under gates' lock, so
// that two calls never both close it.
func closeOnce(ch chan struct{}) {
	gates.Lock()
	defer gates.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func gateTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, g, err := gateNamed(req)
	if err != nil {
		return nil, err
	}
	closeOnce(g.arrived)
	logf("gate %s: waiting", name)
	select {
	case <-g.opened:
		return textResult(fmt.Sprintf(`{"gate":%q}`, name)), nil
	case <-ctx.Done():
		logf("gate %s: cancelled", name)
		return nil, ctx.Err()
	}
}

func gateWaitingTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, g, err := gateNamed(req)
	if err != nil {
		return nil, err
	}
	select {
	case <-g.arrived:
		return textResult(fmt.Sprintf(`{"waiting":%q}`, name)), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func gateOpenTool(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, g, err := gateNamed(req)
	if err != nil {
		return nil, err
	}
	closeOnce(g.opened)
	logf("gate %s: opened", name)
	return textResult(fmt.Sprintf(`{"opened":%q}`, name)), nil
}
