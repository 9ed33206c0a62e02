package supervisor

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/peer"
)

// What a managed server may ask of the client at musterd's end of its
// session, and where it goes.
//
// A shared instance (one session for every client of musterd) claims no
// capabilities. A server's roots/list, sampling/createMessage and
// elicitation/create on it cannot be given to the client whose call caused
// them: a stdio session carries no hint of the call, and one initialize
// cannot offer each client's own capabilities. They are refused with an
// error that says so, never guessed. Its notifications/message go to the
// clients that have called the server through it and set a logging level
// (listeners).
//
// A lane's instance (lanes.go) claims exactly what its one client offered,
// and passes each request and log message to that client: on the stream
// of the client's call when the lane has one call in flight, else on the
// client's own stream. What the client did not offer is refused, saying
// so.

// Methods a server sends its client and musterd passes on, or refuses.
const (
	methodListRoots     = "roots/list"
	methodCreateMessage = "sampling/createMessage"
	methodElicit        = "elicitation/create"
)

// offerClient sets what inst's client offers its server, and the handlers
// that pass the server's requests and notifications on.
func (inst *instance) offerClient(opts *mcp.ClientOptions) {
	l := inst.lane
	if l == nil {
		opts.Capabilities = &mcp.ClientCapabilities{} // nothing; left nil, the go-sdk would claim roots
		opts.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			inst.listeners.log(ctx, req.Params)
		}
		return
	}
	caps := l.peer.Capabilities()
	opts.Capabilities = &mcp.ClientCapabilities{RootsV2: caps.RootsV2, Sampling: caps.Sampling, Elicitation: caps.Elicitation}
	if caps.Sampling != nil {
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return l.target().CreateMessage(ctx, req.Params)
		}
	}
	if caps.Elicitation != nil {
		// Never called: serverRequests passes elicitation/create on itself.
		// Set, so that the go-sdk takes the capability as offered.
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return l.target().Elicit(ctx, req.Params)
		}
		opts.ElicitationCompleteHandler = func(ctx context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			_ = l.peer.NotifyElicitationComplete(ctx, req.Params)
		}
	}
	opts.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
		_ = l.target().Log(ctx, req.Params)
	}
}

// serverRequests is the receiving middleware of inst's client: it refuses
// a server's request the client cannot take, and answers roots/list from
// the lane's client (the go-sdk answers it from a root set of its own).
func (inst *instance) serverRequests(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case methodListRoots, methodCreateMessage, methodElicit:
		default:
			return next(ctx, method, req)
		}
		if reason := inst.refusal(method); reason != "" {
			inst.log.Debug("mcp server: refused a request of the server's", "key", inst.key.String(), "method", method, "reason", reason)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: reason}
		}
		// Passed on here, not by the go-sdk's client: it answers roots/list
		// from a root set of its own, and checks an elicitation's schema
		// against rules older than the client's (enums of SEP-1330 fail
		// them). The client at the other end checks what it is asked.
		switch r := req.(type) {
		case *mcp.ListRootsRequest:
			return inst.lane.target().ListRoots(ctx, r.Params)
		case *mcp.ElicitRequest:
			return inst.lane.target().Elicit(ctx, r.Params)
		}
		return next(ctx, method, req)
	}
}

// refusal says why inst's client cannot take a request of method from its
// server, or "" if it can.
func (inst *instance) refusal(method string) string {
	l := inst.lane
	if l == nil {
		return fmt.Sprintf("musterd: %s refused: MCP server %s has one session shared by all of musterd's clients, "+
			"which cannot tell whose call the request belongs to; annotate the MCPServer %s: %s to give each client a session of its own",
			method, inst.key, ClientSessionsAnnotation, ClientSessionsPerClient)
	}
	caps := l.peer.Capabilities()
	offered := map[string]bool{
		methodListRoots:     caps.RootsV2 != nil,
		methodCreateMessage: caps.Sampling != nil,
		methodElicit:        caps.Elicitation != nil,
	}[method]
	if offered {
		return ""
	}
	feature := map[string]string{methodListRoots: "roots", methodCreateMessage: "sampling", methodElicit: "elicitation"}[method]
	return fmt.Sprintf("musterd: %s refused: the client (MCP session %s) offered no %s capability", method, l.peer.ID(), feature)
}

// applyLogLevel sets a lane's logging level to its client's at the start,
// so that a client that set its level before its first call gets the
// server's messages of that call.
func (inst *instance) applyLogLevel() error {
	if inst.lane == nil {
		return nil
	}
	return inst.setLogLevel(inst.ctx, inst.lane.peer.LogLevel())
}

// setLogLevel sends logging/setLevel to inst's server, if it offers
// logging and level is set.
func (inst *instance) setLogLevel(ctx context.Context, level mcp.LoggingLevel) error {
	if level == "" {
		return nil
	}
	if caps := inst.capabilities(); caps == nil || caps.Logging == nil {
		return nil
	}
	return inst.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
}

// listeners are the clients a shared instance's log messages go to: those
// that have called its server, until their session ends. Each gets what
// its own level lets through (Peer.Log). The server's level is the most
// verbose any of them asked for; it is never lowered while the instance
// runs.
type listeners struct {
	mu    sync.Mutex
	peers map[string]peer.Peer
	level mcp.LoggingLevel // as set on the server; "" before any
}

// join adds p's client to inst's listeners and raises the server's level
// to p's if p's is more verbose.
func (inst *instance) join(ctx context.Context, p peer.Peer) {
	ls := &inst.listeners
	client := p.Session()
	level := p.LogLevel()
	ls.mu.Lock()
	_, known := ls.peers[client.ID()]
	if !known {
		if ls.peers == nil {
			ls.peers = map[string]peer.Peer{}
		}
		ls.peers[client.ID()] = client
		go func() {
			select {
			case <-client.Done():
			case <-inst.ctx.Done():
			}
			ls.mu.Lock()
			delete(ls.peers, client.ID())
			ls.mu.Unlock()
		}()
	}
	raise := level != "" && (ls.level == "" || levelRank(level) < levelRank(ls.level))
	if raise {
		ls.level = level
	}
	ls.mu.Unlock()
	if raise {
		if err := inst.setLogLevel(ctx, level); err != nil {
			inst.log.Debug("mcp server: logging/setLevel failed", "key", inst.key.String(), "error", inst.scrub.clean(err.Error()))
		}
	}
}

// log passes a shared server's log message to its listeners.
func (ls *listeners) log(ctx context.Context, params *mcp.LoggingMessageParams) {
	if params == nil {
		return
	}
	ls.mu.Lock()
	peers := make([]peer.Peer, 0, len(ls.peers))
	for _, p := range ls.peers {
		peers = append(peers, p)
	}
	ls.mu.Unlock()
	for _, p := range peers {
		_ = p.Log(ctx, params)
	}
}

// loggingLevels are MCP's levels, most verbose first.
var loggingLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// levelRank is level's place in loggingLevels; an unknown level ranks last.
func levelRank(level mcp.LoggingLevel) int {
	if i := slices.Index(loggingLevels, level); i >= 0 {
		return i
	}
	return len(loggingLevels)
}
