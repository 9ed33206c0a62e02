//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package supervisor

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/identity"
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
// (listeners), when those clients are all one user's: a message cannot be
// told apart by call, and one user's call may have made it. Without a
// user (no OAuth), every client is the one shared identity, as in muster,
// and all get it; once the callers are two users or more, nobody does.
//
// A lane's instance (lanes.go) claims exactly what its one client offered,
// and passes each request and log message to that client: on the stream
// of the client's call when the lane has one call in flight, else on the
// client's own stream. What the client did not offer is refused, saying
// so.
//
// A user connection's instance (users.go) claims nothing, as a shared
// one: it serves every MCP session of its user, none of which is the one
// to ask. The server's requests on it are refused, saying so; its log
// messages go to the user's clients that called through it.

// Methods a server sends its client and musterd passes on, or refuses.
const (
	methodListRoots     = "roots/list"
	methodCreateMessage = "sampling/createMessage"
	methodElicit        = "elicitation/create"

	notificationSubscriptionsAcked = "notifications/subscriptions/acknowledged"
)

// offerClient sets what inst's client offers its server, and the handlers
// that pass the server's requests and notifications on.
func (inst *instance) offerClient(opts *mcp.ClientOptions) {
	l := inst.lane
	if l == nil {
		opts.Capabilities = &mcp.ClientCapabilities{} // nothing; left nil, the go-sdk would claim roots
		opts.LoggingMessageHandler = func(ctx context.Context, req *mcp.LoggingMessageRequest) {
			inst.logToListeners(ctx, req.Params)
		}
		return
	}
	caps := l.peer.Capabilities()
	// The extensions the client negotiates (MCP Apps' UI, say) are the
	// server's to see: they change what it may send, and only the client
	// at the end can honour them. Experimental capabilities likewise.
	opts.Capabilities = &mcp.ClientCapabilities{RootsV2: caps.RootsV2, Sampling: caps.Sampling, Elicitation: caps.Elicitation,
		Extensions: maps.Clone(caps.Extensions), Experimental: maps.Clone(caps.Experimental)}
	if caps.Sampling != nil {
		opts.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return ask(ctx, l, func(ctx context.Context, p peer.Peer) (*mcp.CreateMessageWithToolsResult, error) {
				return p.CreateMessage(ctx, req.Params)
			})
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
		case notificationSubscriptionsAcked:
			if params, ok := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams); ok {
				inst.acks.acknowledged(params) // subscribe.go
			}
			return next(ctx, method, req)
		default:
			return next(ctx, method, req)
		}
		if reason := inst.refusal(method); reason != "" {
			inst.log.Debug("mcp server: refused a request of the server's", "key", inst.key.String(), "method", method, "reason", reason)
			// Invalid request, not method not found: the go-sdk replaces the
			// message of a -32601 with its own, and the reason would be lost.
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: reason}
		}
		// Passed on here, not by the go-sdk's client: it answers roots/list
		// from a root set of its own, and checks an elicitation's schema
		// against rules older than the client's (enums of SEP-1330 fail
		// them). The client at the other end checks what it is asked.
		switch r := req.(type) {
		case *mcp.ListRootsRequest:
			return ask(ctx, inst.lane, func(ctx context.Context, p peer.Peer) (*mcp.ListRootsResult, error) {
				return p.ListRoots(ctx, r.Params)
			})
		case *mcp.ElicitRequest:
			return ask(ctx, inst.lane, func(ctx context.Context, p peer.Peer) (*mcp.ElicitResult, error) {
				return p.Elicit(ctx, r.Params)
			})
		}
		return next(ctx, method, req)
	}
}

// refusal says why inst's client cannot take a request of method from its
// server, or "" if it can.
func (inst *instance) refusal(method string) string {
	l := inst.lane
	if inst.user != nil {
		return fmt.Sprintf("musterd: %s refused: it came on a user's own connection to MCP server %s, which serves every MCP session "+
			"of that user and cannot tell which of them to ask; musterd passes no such request on a user's connection yet",
			method, inst.key.Name)
	}
	if l == nil {
		return fmt.Sprintf("musterd: %s refused: it came on the session to MCP server %s shared by all of musterd's clients, "+
			"which cannot tell whose call it belongs to (a client that offers sampling, elicitation or roots gets a session of its own "+
			"with a remote server; annotate a stdio MCPServer %s: %s for the same)",
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

// errClientGone answers a server's request whose client went away before
// it answered.
var errClientGone = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "musterd: the client's session ended before it answered"}

// errLaneEnding answers a server's request pending as its client's own
// session with it ends (a stop, a restart).
var errLaneEnding = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "musterd: the client's session with this server is ending"}

// ask passes a server's request to the lane's client, and answers the
// server at once when the client's session ends first, or the server
// cancels: the server gets an answer, never a wait on a client that is
// gone, whatever the client's transport does with a request it can no
// longer deliver.
func ask[R any](ctx context.Context, l *lane, f func(context.Context, peer.Peer) (R, error)) (R, error) {
	defer l.passing()()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		r   R
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := f(ctx, l.target())
		answered <- answer{r, err}
	}()
	var zero R
	select {
	case a := <-answered:
		return a.r, a.err
	case <-l.peer.Done():
		return zero, errClientGone
	case <-l.asking.Done():
		return zero, errLaneEnding
	case <-ctx.Done():
		return zero, ctx.Err()
	}
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
	if level == "" || inst.modern() {
		return nil // a 2026-07-28 request carries its level itself (requestMeta)
	}
	if caps := inst.capabilities(); caps == nil || caps.Logging == nil {
		return nil
	}
	return inst.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
}

// requestMeta is the sending middleware of inst's client. A 2026-07-28
// session has no logging/setLevel: each request carries the logging level
// it wants in its _meta. It gets the level musterd would have set on an
// older session: a lane's client's own, or on a shared instance the most
// verbose of its listeners'. The go-sdk has put the request's other _meta
// keys there already, and keeps a key that is set.
func (inst *instance) requestMeta(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") || inst.session == nil || !inst.modern() {
			return next(ctx, method, req)
		}
		params := req.GetParams()
		if v := reflect.ValueOf(params); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
			return next(ctx, method, req)
		}
		if level := inst.logLevel(); level != "" {
			if meta := params.GetMeta(); meta != nil {
				if _, set := meta[mcp.MetaKeyLogLevel]; !set {
					meta[mcp.MetaKeyLogLevel] = level
				}
			}
		}
		return next(ctx, method, req)
	}
}

// logLevel is the logging level inst's clients asked for, "" for none.
func (inst *instance) logLevel() mcp.LoggingLevel {
	if inst.lane != nil {
		return inst.lane.peer.LogLevel()
	}
	inst.listeners.mu.Lock()
	defer inst.listeners.mu.Unlock()
	return inst.listeners.level
}

// listeners are the clients a shared instance's log messages go to: those
// that have called its server, until their session ends, while they are
// one user's. Each gets what its own level lets through (Peer.Log). The
// server's level is the most verbose any of them asked for; it is never
// lowered while the instance runs.
type listeners struct {
	mu    sync.Mutex
	peers map[string]listener // by the client's session ID
	level mcp.LoggingLevel    // as set on the server; "" before any
	// withheld: a message was withheld because the listeners were several
	// users' (said once in musterd's log).
	withheld bool
}

type listener struct {
	peer peer.Peer
	user string // identity.Identity.Owner of a signed-in user; "" for none
}

// userOf is who a log message of a call with ctx may reach: the signed-in
// user's owner, or "" for the identity every caller without one shares.
func userOf(ctx context.Context) string {
	if id, ok := identity.From(ctx); ok && id.Subject != "" {
		return id.Owner()
	}
	return ""
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
			ls.peers = map[string]listener{}
		}
		ls.peers[client.ID()] = listener{peer: client, user: userOf(ctx)}
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

// logToListeners passes a shared server's log message to its listeners,
// unless they are several users'.
func (inst *instance) logToListeners(ctx context.Context, params *mcp.LoggingMessageParams) {
	if params == nil {
		return
	}
	ls := &inst.listeners
	ls.mu.Lock()
	peers := make([]peer.Peer, 0, len(ls.peers))
	users := map[string]bool{}
	for _, l := range ls.peers {
		peers = append(peers, l.peer)
		users[l.user] = true
	}
	if len(users) > 1 {
		first := !ls.withheld
		ls.withheld = true
		ls.mu.Unlock()
		if first {
			inst.log.Info("mcp server: its log messages are withheld from its callers while they are several users': a message cannot be told apart by call",
				"key", inst.key.String())
		}
		return
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
