package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/internal/jsoneq"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/peer"
)

// The calls of this file reach into a running server's live MCP session on
// behalf of musterd's own clients (the MCP endpoint, through the router).
// Each call:
//
//   - runs at once on a server that is Running or Connected;
//   - waits, up to CallWait, for a server that is Starting, Connecting or
//     being replaced by Ensure (a drain, the stop of the old instance, the
//     start of the new one), and then fails with ErrNotReady;
//   - fails at once with ErrNotRunning for a server that is stopped,
//     failed, disconnected or unknown;
//   - is counted in flight on its instance, so that a restart for a
//     changed spec drains it (DrainTimeout) before the instance stops;
//   - fails with ErrDied within verdictWait of its server dying, or with
//     ErrStopped when its instance is stopped under it (a delete, a
//     shutdown, a drain that ran out);
//   - forwards the caller's cancellation to the server as
//     notifications/cancelled (the SDK does that for a cancelled context);
//   - passes the server's progress notifications for it to the caller.

// Errors a call fails with when it could not be made or completed on the
// server; a *ServerError wraps one of them.
var (
	// ErrNotRunning: the server is stopped, failed, disconnected or
	// unknown, and nothing is starting it.
	ErrNotRunning = errors.New("is not running")
	// ErrNotReady: the server was starting or being restarted and did not
	// run within CallWait.
	ErrNotReady = errors.New("did not become ready in time")
	// ErrDied: the server died (or its connection broke) while the call
	// was pending.
	ErrDied = errors.New("died while the call was pending")
	// ErrStopped: the server's instance was stopped while the call was
	// pending: a delete, a shutdown, or a restart whose drain ran out.
	ErrStopped = errors.New("was stopped while the call was pending")
)

// verdictWait bounds how long a call whose connection broke waits for the
// monitor's verdict on its server (the exit code and stderr of a crash),
// so that its error says why; the call fails within it either way.
const verdictWait = 500 * time.Millisecond

// ServerError is the error of a call that its server could not serve: it
// names the server, its state and, when it failed, its last error.
type ServerError struct {
	Key   events.Key
	State v1alpha1.MCPServerState // "" for a server the supervisor does not know
	// Err is ErrNotRunning, ErrNotReady, ErrDied or ErrStopped.
	Err error
	// Detail says more: the last error's first line, the wait, the reason
	// of a stop. Redacted.
	Detail string
}

func (e *ServerError) Error() string {
	state := string(e.State)
	if state == "" {
		state = "unknown"
	}
	msg := fmt.Sprintf("mcp server %s %v (state %s)", e.Key, e.Err, state)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

func (e *ServerError) Unwrap() error { return e.Err }

// callState is an instance's bookkeeping of the calls made through it.
type callState struct {
	// Guarded by Supervisor.mu.
	inflight   int
	draining   bool          // a restart drains the instance: no new call
	idle       chan struct{} // closed when inflight reaches 0 during a drain
	stopReason string        // why the drain stopped the instance under its calls

	// suspect asks the monitor to check the server now (capacity 1).
	suspect chan struct{}

	mu     sync.Mutex
	routes map[string]progressRoute // by the progress token musterd sent

	// listsChanged tells the WatchLists watchers that the server said its
	// resources or prompts changed.
	listsChanged func()
	// resourceUpdated tells the WatchResourceUpdates watchers that the
	// server said one of its resources changed (subscribe.go).
	resourceUpdated func(uri string)
}

// progressRoute takes a server's progress notifications for one call back
// to its caller, under the caller's own token.
type progressRoute struct {
	fn    func(*mcp.ProgressNotificationParams)
	token any
}

func (s *Supervisor) newCallState(key events.Key) *callState {
	c := &callState{
		suspect:      make(chan struct{}, 1),
		routes:       map[string]progressRoute{},
		listsChanged: func() { s.tellListWatchers(key) },
	}
	c.resourceUpdated = func(uri string) { s.resourceUpdated(key, uri) } // subscribe.go
	return c
}

// WatchLists registers fn to be called when a running server sends
// notifications/resources/list_changed or notifications/prompts/list_changed,
// so that whoever keeps its resources and prompts lists them again. Calls
// come from the server's session, one at a time per server: fn must be
// quick and must not call into the Supervisor synchronously. The returned
// func ends the registration.
func (s *Supervisor) WatchLists(fn func(key events.Key)) (cancel func()) {
	return s.lists.Add(fn)
}

func (s *Supervisor) tellListWatchers(key events.Key) {
	for _, fn := range s.lists.All() {
		fn(key)
	}
}

// progressTokens numbers the progress tokens musterd sends, unique within
// the process.
var progressTokens atomic.Uint64

// route registers fn for the progress of one call and returns the token to
// send and the function that forgets it. The caller's own token comes back
// in every notification passed to fn.
func (c *callState) route(callerToken any, fn func(*mcp.ProgressNotificationParams)) (string, func()) {
	token := "musterd-" + strconv.FormatUint(progressTokens.Add(1), 10)
	c.mu.Lock()
	c.routes[token] = progressRoute{fn: fn, token: callerToken}
	c.mu.Unlock()
	return token, func() {
		c.mu.Lock()
		delete(c.routes, token)
		c.mu.Unlock()
	}
}

// progress is the session's ProgressNotificationHandler.
func (c *callState) progress(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	token, ok := req.Params.ProgressToken.(string)
	if !ok {
		return // not one of ours
	}
	c.mu.Lock()
	r, ok := c.routes[token]
	c.mu.Unlock()
	if !ok {
		return // its call has returned
	}
	p := *req.Params
	p.Meta = maps.Clone(p.Meta)
	p.ProgressToken = r.token
	r.fn(&p)
}

// CallTool calls the server's own tool params.Name on key's server, and
// returns the server's result unchanged: a tool that failed is a result
// with IsError, not an error. An error means the call could not be made
// or completed: a *ServerError (see ErrNotRunning, ErrNotReady, ErrDied,
// ErrStopped), the caller's cancellation, or the server's JSON-RPC error.
// progress, if set, gets the server's progress notifications for the call,
// with the progress token of params (if any) in place of musterd's. The
// SDK handles notifications apart from responses: one the server sent just
// before its result may be handled after CallTool returned, and is then
// dropped, since the call is over. params is not changed.
func (s *Supervisor) CallTool(ctx context.Context, key events.Key, params *mcp.CallToolParams,
	progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	if params == nil {
		return nil, errors.New("supervisor: CallTool: nil params")
	}
	if s.bridging(ctx, key) { // bridge.go
		res, round, err := s.bridged(ctx, key, "tools/call "+params.Name, progress,
			func(ctx context.Context, progress func(*mcp.ProgressNotificationParams)) (mcp.Result, error) {
				return s.callTool(ctx, key, params, progress)
			})
		return bridgedAs(res, round, err, func(r *bridgeRound) *mcp.CallToolResult {
			return &mcp.CallToolResult{InputRequests: r.requests, RequestState: r.state}
		})
	}
	return s.callTool(ctx, key, params, progress)
}

// callTool is CallTool on key's server, once any bridge is in place.
func (s *Supervisor) callTool(ctx context.Context, key events.Key, params *mcp.CallToolParams,
	progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := s.call(ctx, key, "tools/call "+params.Name, func(ctx context.Context, inst *instance) error {
		p := *params
		p.Meta = relayedMeta(ctx, inst, withoutClientMeta(params.Meta))
		if r, ok := peer.RoundFrom(ctx); ok {
			// A client's retry with its answers to the server's input
			// requests, and the server's own request state.
			p.InputResponses, p.RequestState = r.Responses, r.State
		}
		if progress != nil {
			token, forget := inst.calls.route(params.GetProgressToken(), progress)
			defer forget()
			p.SetProgressToken(token)
		} else if p.Meta != nil {
			delete(p.Meta, "progressToken") // nobody would take the notifications
		}
		var err error
		res, err = inst.callTool(ctx, &p) // inputrequests.go
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// relayedMeta is the _meta of a server's request for a call whose client
// takes input-required results itself (peer.Relays: a client of
// 2026-07-28), on a session of that generation (its call on the shared
// session): meta, made if nil, with the capabilities the client's own
// request declared (peer.RelayedCapabilities; none declared is none
// offered) under mcp.MetaKeyClientCapabilities, encoded as a client of
// that generation sends them. The go-sdk's client keeps that key when it
// is set, so the server judges what it may ask by the client that will
// answer, not by musterd's session to it. Any other call's meta is
// returned as it is: its session's own capabilities stand, since that
// session's client answers (a lane offers what its client offered; a
// session of 2025-11-25 has them from initialize).
func relayedMeta(ctx context.Context, inst *instance, meta mcp.Meta) mcp.Meta {
	if !peer.Relays(ctx) || !inst.modern() {
		return meta
	}
	if meta == nil {
		meta = mcp.Meta{}
	}
	meta[mcp.MetaKeyClientCapabilities] = onTheWire(peer.RelayedCapabilities(ctx)) // inputrequests.go
	return meta
}

// ListResources returns the resources of key's server, all pages, or none
// if it offers no resources.
func (s *Supervisor) ListResources(ctx context.Context, key events.Key) ([]*mcp.Resource, error) {
	var out []*mcp.Resource
	err := s.call(ctx, key, "resources/list", func(ctx context.Context, inst *instance) error {
		if caps := inst.capabilities(); caps == nil || caps.Resources == nil {
			return nil
		}
		for r, err := range inst.session.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ListResourceTemplates returns the resource templates of key's server, all
// pages, or none if it offers no resources.
func (s *Supervisor) ListResourceTemplates(ctx context.Context, key events.Key) ([]*mcp.ResourceTemplate, error) {
	var out []*mcp.ResourceTemplate
	err := s.call(ctx, key, "resources/templates/list", func(ctx context.Context, inst *instance) error {
		if caps := inst.capabilities(); caps == nil || caps.Resources == nil {
			return nil
		}
		for r, err := range inst.session.ResourceTemplates(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// ReadResource reads a resource of key's server, by the server's own URI.
func (s *Supervisor) ReadResource(ctx context.Context, key events.Key, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	if params == nil {
		return nil, errors.New("supervisor: ReadResource: nil params")
	}
	if s.bridging(ctx, key) { // bridge.go
		res, round, err := s.bridged(ctx, key, "resources/read "+params.URI, nil,
			func(ctx context.Context, _ func(*mcp.ProgressNotificationParams)) (mcp.Result, error) {
				return s.readResource(ctx, key, params)
			})
		return bridgedAs(res, round, err, func(r *bridgeRound) *mcp.ReadResourceResult {
			return &mcp.ReadResourceResult{InputRequests: r.requests, RequestState: r.state}
		})
	}
	return s.readResource(ctx, key, params)
}

// readResource is ReadResource on key's server, once any bridge is in
// place.
func (s *Supervisor) readResource(ctx context.Context, key events.Key, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	var res *mcp.ReadResourceResult
	err := s.call(ctx, key, "resources/read "+params.URI, func(ctx context.Context, inst *instance) error {
		p := *params
		p.Meta = relayedMeta(ctx, inst, withoutClientMeta(params.Meta))
		if r, ok := peer.RoundFrom(ctx); ok {
			p.InputResponses, p.RequestState = r.Responses, r.State // as CallTool's
		}
		var err error
		res, err = inst.readResource(ctx, &p) // inputrequests.go
		return err
	})
	return res, err
}

// ListPrompts returns the prompts of key's server, all pages, or none if it
// offers no prompts.
func (s *Supervisor) ListPrompts(ctx context.Context, key events.Key) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	err := s.call(ctx, key, "prompts/list", func(ctx context.Context, inst *instance) error {
		if caps := inst.capabilities(); caps == nil || caps.Prompts == nil {
			return nil
		}
		for p, err := range inst.session.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// GetPrompt gets a prompt of key's server, by the server's own name.
func (s *Supervisor) GetPrompt(ctx context.Context, key events.Key, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	if params == nil {
		return nil, errors.New("supervisor: GetPrompt: nil params")
	}
	if s.bridging(ctx, key) { // bridge.go
		res, round, err := s.bridged(ctx, key, "prompts/get "+params.Name, nil,
			func(ctx context.Context, _ func(*mcp.ProgressNotificationParams)) (mcp.Result, error) {
				return s.getPrompt(ctx, key, params)
			})
		return bridgedAs(res, round, err, func(r *bridgeRound) *mcp.GetPromptResult {
			return &mcp.GetPromptResult{InputRequests: r.requests, RequestState: r.state}
		})
	}
	return s.getPrompt(ctx, key, params)
}

// getPrompt is GetPrompt on key's server, once any bridge is in place.
func (s *Supervisor) getPrompt(ctx context.Context, key events.Key, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	var res *mcp.GetPromptResult
	err := s.call(ctx, key, "prompts/get "+params.Name, func(ctx context.Context, inst *instance) error {
		p := *params
		p.Meta = relayedMeta(ctx, inst, withoutClientMeta(params.Meta))
		if r, ok := peer.RoundFrom(ctx); ok {
			p.InputResponses, p.RequestState = r.Responses, r.State // as CallTool's
		}
		var err error
		res, err = inst.getPrompt(ctx, &p) // inputrequests.go
		return err
	})
	return res, err
}

// Complete asks key's server to complete an argument of a prompt or a
// resource template (completion/complete), as the other calls: waiting for
// a server that starts, failing at once on one that does not run.
func (s *Supervisor) Complete(ctx context.Context, key events.Key, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil {
		return nil, errors.New("supervisor: Complete: nil params")
	}
	p := *params
	p.Meta = withoutClientMeta(params.Meta)
	var res *mcp.CompleteResult
	err := s.call(ctx, key, "completion/complete", func(ctx context.Context, inst *instance) error {
		var err error
		res, err = inst.session.Complete(ctx, &p)
		return err
	})
	return res, err
}

// clientMeta are the _meta keys in which a client of 2026-07-28 says who it
// is and what it speaks, in each request. They describe musterd's client,
// not musterd as its server's client: on the way to a server they are the
// session's own (the go-sdk fills them in on a session of that generation;
// one of an older generation must not carry them at all: a go-sdk server
// refuses a request whose _meta names a version its session does not
// speak).
var clientMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// withoutClientMeta is a copy of a client's _meta to pass on, without
// clientMeta; nil when nothing is left.
func withoutClientMeta(meta mcp.Meta) mcp.Meta {
	if len(meta) == 0 {
		return nil
	}
	out := maps.Clone(meta)
	for _, k := range clientMeta {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// InFlight returns the number of calls in flight on key's server (on its
// instance that runs, or drains).
func (s *Supervisor) InFlight(key events.Key) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	if e == nil || e.inst == nil {
		return 0
	}
	return e.inst.calls.inflight
}

func (inst *instance) capabilities() *mcp.ServerCapabilities {
	if res := inst.session.InitializeResult(); res != nil {
		return res.Capabilities
	}
	return nil
}

// call runs do on the session of key's server, counted in flight, with a
// context that ends when the caller's does or when the instance goes. A
// call whose caller (identity.From) has a connection of its own to the
// server runs on it (users.go), whatever the shared instance does. A call
// whose caller's client needs a session of its own runs on its lane
// (lanes.go); it is counted on the shared instance too, so that a restart
// drains it.
func (s *Supervisor) call(ctx context.Context, key events.Key, what string, do func(context.Context, *instance) error) error {
	key = key.Canonical()
	uc, err := s.userConnFor(ctx, key)
	if err != nil {
		return err
	}
	if uc != nil {
		return s.callUser(ctx, uc, what, do)
	}
	e, shared, err := s.acquire(ctx, key)
	if err != nil {
		return err
	}
	defer s.release(shared)
	inst := shared
	if p, ok := peer.From(ctx); ok {
		if s.wantsLane(shared, p.Capabilities()) {
			var leave func()
			inst, leave, err = s.laneFor(ctx, shared, p)
			if err != nil {
				return err
			}
			defer leave()
		} else {
			shared.join(ctx, p) // its log messages reach p's client (clientrequests.go)
		}
	}

	err, final := invoke(ctx, key, inst, what, do)
	switch {
	case err == nil:
		s.touch(e, shared) // the server answered: lastConnected is now
		return nil
	case final:
		return err
	}
	return s.callError(ctx, e, inst, what, err)
}

// invoke runs do on inst, with a context that ends when the caller's does
// or when inst goes, and within its server's spec.timeout. It returns do's
// error, for the caller to make sense of, or the timeout's own, final.
func invoke(ctx context.Context, key events.Key, inst *instance, what string, do func(context.Context, *instance) error) (err error, final bool) {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	// The instance's context ends when it is stopped or torn down: a call
	// still pending then is cancelled (and notifications/cancelled sent, if
	// the connection still takes it) rather than left to hang on a
	// transport that may never answer.
	stop := context.AfterFunc(inst.ctx, func() { cancel(errInstanceGone) })
	defer stop()
	// The server's spec.timeout bounds every call, however it came
	// (/mcp, /mcp/direct, a workflow step).
	timeout := startTimeout(inst.spec, v1alpha1.DefaultMCPServerTimeout*time.Second)
	callCtx, cancelTimeout := context.WithTimeoutCause(callCtx, timeout, errCallTimeout)
	defer cancelTimeout()
	err = do(callCtx, inst)
	if err != nil && ctx.Err() == nil && context.Cause(callCtx) == errCallTimeout {
		return fmt.Errorf("mcp server %s: %s: no answer within %s (spec.timeout)", key, what, timeout), true
	}
	return err, false
}

// errInstanceGone cancels the calls of an instance that ended.
var errInstanceGone = errors.New("server instance ended")

// errCallTimeout cancels a call that outlived its server's spec.timeout.
var errCallTimeout = errors.New("call timed out")

// callError makes the error of a call that failed.
func (s *Supervisor) callError(ctx context.Context, e *entry, inst *instance, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mcp server %s: %s: %w", e.key, what, context.Cause(ctx))
	}
	if answered, ok := answeredError(inst, err); ok {
		return fmt.Errorf("mcp server %s: %s: %w", e.key, what, answered)
	}
	// The connection failed under the call.
	s.awaitVerdict(inst, err)
	s.mu.Lock()
	state := e.obs.State
	lastError := e.obs.LastError
	if e.inst != inst && e.inst != nil {
		state = "" // replaced meanwhile: its state is the new instance's
	}
	stopReason := inst.calls.stopReason
	s.mu.Unlock()
	cause := context.Cause(inst.ctx)
	switch {
	case errors.Is(cause, errStopping):
		detail := stopReason
		if detail == "" {
			detail = "stopped or deleted"
		}
		return &ServerError{Key: e.key, State: state, Err: ErrStopped, Detail: what + ": " + detail}
	case cause != nil || errors.Is(err, mcp.ErrConnectionClosed):
		detail := what + ": " + inst.scrub.clean(err.Error())
		if lastError != "" && cause != nil {
			detail = what + ": " + Summary(lastError)
		}
		return &ServerError{Key: e.key, State: state, Err: ErrDied, Detail: detail}
	default:
		// A transport error on a server that still seems alive: a remote
		// whose request failed, say. The monitor has been told.
		return fmt.Errorf("mcp server %s: %s: %s", e.key, what, inst.scrub.clean(err.Error()))
	}
}

// answeredError is the JSON-RPC error err carries, if the server answered
// with one, scrubbed: the server is alive. Its code and data go on with it
// (a -32042 carries the URLs a client must visit), so that a view can pass
// the error on as the server answered it.
func answeredError(inst *instance, err error) (*jsonrpc.Error, bool) {
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) {
		return nil, false
	}
	answered := &jsonrpc.Error{Code: rpcErr.Code, Message: inst.scrub.clean(err.Error())}
	if len(rpcErr.Data) > 0 {
		answered.Data = json.RawMessage(inst.scrub.clean(string(rpcErr.Data)))
	}
	return answered, true
}

// suspectDead is the seam from the call path to health monitoring: a call
// saw a transport error on inst, so the server may be dead. It asks inst's
// monitor to check now (today: a ping at once, which fails the server if
// it does not answer) and never blocks.
func (s *Supervisor) suspectDead(inst *instance, err error) {
	select {
	case inst.calls.suspect <- struct{}{}:
		s.log.Debug("mcp server: a call failed on its connection; checking it", "key", inst.key.String(),
			"error", inst.scrub.clean(err.Error()))
	default: // a check is due already
	}
}

// acquire waits until key's server runs, up to CallWait while it starts or
// is replaced, and counts a call in flight on its instance.
func (s *Supervisor) acquire(ctx context.Context, key events.Key) (*entry, *instance, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		s.mu.Lock()
		e := s.entries[key]
		if e != nil && e.inst != nil && e.obs.Running() && !e.inst.calls.draining {
			inst := e.inst
			inst.calls.inflight++
			s.mu.Unlock()
			return e, inst, nil
		}
		var state v1alpha1.MCPServerState
		if e != nil {
			state = e.obs.State
		}
		if state == v1alpha1.MCPServerStateAuthRequired {
			// Its server wants a credential of the caller's own, and the
			// caller has no connection of its own to it (users.go).
			s.mu.Unlock()
			return nil, nil, authorizationRequired(key, "")
		}
		if e == nil || !(state.Transient() || e.replacing || e.inst != nil && e.inst.calls.draining) {
			err := &ServerError{Key: key, State: state, Err: ErrNotRunning}
			if e != nil && e.obs.LastError != "" {
				err.Detail = "last error: " + Summary(e.obs.LastError)
			}
			s.mu.Unlock()
			return nil, nil, err
		}
		changed := s.waitLocked()
		s.mu.Unlock()

		if timer == nil {
			timer = time.NewTimer(s.opts.CallWait)
		}
		select {
		case <-changed:
		case <-timer.C:
			s.mu.Lock()
			if e := s.entries[key]; e != nil {
				state = e.obs.State
			}
			s.mu.Unlock()
			return nil, nil, &ServerError{Key: key, State: state, Err: ErrNotReady,
				Detail: fmt.Sprintf("waited %s for it to run", s.opts.CallWait)}
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("mcp server %s: waiting for it to run (state %s): %w", key, state, context.Cause(ctx))
		}
	}
}

// release ends a call counted by acquire.
func (s *Supervisor) release(inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	inst.calls.inflight--
	if inst.calls.inflight == 0 && inst.calls.idle != nil {
		close(inst.calls.idle)
		inst.calls.idle = nil
	}
}

// waitLocked returns a channel closed at the next observed change of any
// server (or the end of a replacement).
func (s *Supervisor) waitLocked() <-chan struct{} {
	if s.stateCh == nil {
		s.stateCh = make(chan struct{})
	}
	return s.stateCh
}

// broadcastLocked wakes every call waiting in waitLocked. changedLocked
// calls it: every change of observed state passes there.
func (s *Supervisor) broadcastLocked() {
	if s.stateCh != nil {
		close(s.stateCh)
		s.stateCh = nil
	}
}

// drain is Ensure's hook before it stops inst, the running instance of e,
// to start another spec: new calls wait for the new instance from now on,
// and inst keeps running until its calls in flight have finished, for at
// most DrainTimeout, and at most half of what is left of ctx's deadline,
// so that the start that follows keeps time (or until ctx ends, or inst
// dies). Calls still in flight then are cancelled by the stop, with
// ErrStopped.
func (s *Supervisor) drain(ctx context.Context, e *entry, inst *instance) {
	s.mu.Lock()
	if e.inst != inst || !e.obs.Running() {
		s.mu.Unlock()
		return
	}
	e.replacing = true
	inst.calls.draining = true
	n := inst.calls.inflight
	if n == 0 {
		s.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	inst.calls.idle = idle
	s.mu.Unlock()

	bound := s.opts.DrainTimeout
	if deadline, ok := ctx.Deadline(); ok {
		// The restart's caller (a reconcile, bounded by its timeout) must
		// keep time for the start that follows.
		bound = min(bound, time.Until(deadline)/2)
	}
	s.log.Info("mcp server: draining its calls before a restart", "key", e.key.String(), "calls", n,
		"drainFor", bound)
	timer := time.NewTimer(bound)
	defer timer.Stop()
	var reason string
	select {
	case <-idle:
		return
	case <-inst.done:
		return // it ended by itself; its calls have their verdict
	case <-timer.C:
		reason = fmt.Sprintf("restarted for a changed spec; its calls had %s to finish", bound)
	case <-ctx.Done():
		reason = "restarted for a changed spec; the restart could not wait for its calls: " + context.Cause(ctx).Error()
	}
	s.mu.Lock()
	left := inst.calls.inflight
	inst.calls.stopReason = reason
	s.mu.Unlock()
	s.log.Warn("mcp server: calls still in flight at its restart are cancelled", "key", e.key.String(), "calls", left,
		"reason", reason)
}

// Summary is the first line of a server's last error (Observed.LastError),
// without the stderr tail that follows it: what a one-line message shows.
func Summary(lastError string) string {
	line, _, _ := strings.Cut(lastError, "\n")
	return strings.TrimSuffix(line, stderrSeparator)
}

// toolNames returns the names of tools, in their order.
func toolNames(tools []*mcp.Tool) []string {
	if tools == nil {
		return nil
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return names
}

// sameTools reports whether two listings are equal, definitions included.
func sameTools(a, b []*mcp.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !jsoneq.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// awaitVerdict tells inst's monitor that a call failed in the transport
// with err, and gives it up to verdictWait to say what happened to the
// server (its ping): a caller then says the server died rather than that
// one call failed.
func (s *Supervisor) awaitVerdict(inst *instance, err error) {
	if inst.ctx.Err() != nil {
		return
	}
	s.suspectDead(inst, err)
	t := time.NewTimer(verdictWait)
	defer t.Stop()
	select {
	case <-inst.ctx.Done():
	case <-t.C:
	}
}
