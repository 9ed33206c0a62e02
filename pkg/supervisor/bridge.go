//lint:file-ignore SA1019 roots, sampling and logging are deprecated in 2026-07-28 but still part of MCP, and musterd bridges them between the generations

package supervisor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/peer"
)

// A client of 2026-07-28 has no session a server could send a request on:
// what a server needs of it comes in an input-required result, and the
// client calls again with its answers (peer.Relays). A server of
// 2025-11-25 asks its client mid-call instead (elicitation/create,
// sampling/createMessage, roots/list), and waits. musterd bridges the two.
//
// Such a call (tools/call, prompts/get or resources/read: the requests a
// server may answer with an input-required result) runs on a lane of its
// own (lanes.go), opened for the call and
// offering the server what the client's request declared it can be asked
// (peer.RelayedCapabilities); when the server asks, the call is parked: it
// goes on running, and the client's request ends with an input-required
// result asking the same, whose request state names the parked call (the
// endpoint seals it, bound to the view, the tool, prompt or resource, the
// client's session and Authorization: pkg/mcpserve). The client's retry delivers its answers to
// the waiting server and waits again, for the result or the next question.
//
// A lane is a process for a stdio server, so which calls are bridged
// follows the server's ClientSessions as for any client: a remote server's
// (auto), every server's (per-client), none (shared: the server's requests
// are refused, saying why). A call to a server of 2026-07-28 needs no
// bridge: its input-required result is relayed as it is.
//
// The bound on a client that never comes back is the server's spec.timeout,
// counted from the call's first request, as for a client that never
// answers a classic request: then the call is cancelled, the server's
// pending request answered with an error (errClientGone), the lane closed,
// and a late retry told the call ended. A client that cancels its request
// (its POST ends) while the server works cancels the call. The server's log
// messages during a bridged call reach no client: a sessionless client has
// no stream to take them between its requests.

// bridgeStatePrefix begins the request state of a parked call, the server
// state musterd gives a client for it.
const bridgeStatePrefix = "musterd-bridge:"

// errBridgeEnded answers a retry whose parked call is no more.
var errBridgeEnded = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
	Message: "musterd: the call this retry answers has ended (its server's spec.timeout passed, or the server stopped): call the tool again without requestState"}

// bridgeSet holds the calls parked or running under a bridge, by ID.
type bridgeSet struct {
	mu    sync.Mutex
	calls map[string]*bridgedCall
}

// bridgedCall is one client's call to a server of the older generation,
// bridged to the client's input-required rounds.
type bridgedCall struct {
	id   string
	key  events.Key
	name string // the request and what it names: "tools/call NAME", …
	caps *mcp.ClientCapabilities
	// cancel ends the call: the client cancelled it.
	cancel context.CancelCauseFunc
	done   chan struct{} // closed once res and err are set
	res    mcp.Result
	err    error

	mu       sync.Mutex
	asked    []*question          // the server's questions not yet put to the client
	put      map[string]*question // put to the client in the last round, by ID
	round    int                  // the rounds ended with an input-required result
	nextQ    int
	changed  chan struct{} // closed and replaced at each question
	progress func(*mcp.ProgressNotificationParams)
}

// question is one request of the server's, waiting for the client.
type question struct {
	id      string
	request mcp.InputRequest
	answer  chan answer // buffered: delivered once
}

type answer struct {
	response mcp.InputResponse
	err      error
}

// bridging reports whether a call of a relaying client (peer.Relays) to
// key's server needs a bridge: the server speaks the older generation, the
// client's request offers it something to ask, and the server's
// ClientSessions gives the call a lane.
func (s *Supervisor) bridging(ctx context.Context, key events.Key) bool {
	if !peer.Relays(ctx) {
		return false
	}
	if _, ok := peer.From(ctx); ok {
		return false
	}
	if s.hasUserConn(ctx, key) {
		return false // the caller's own connection takes its calls, and refuses the server's requests (users.go)
	}
	caps := peer.RelayedCapabilities(ctx)
	s.mu.Lock()
	e := s.entries[key.Canonical()]
	var inst *instance
	if e != nil && e.obs.Running() {
		inst = e.inst
	}
	s.mu.Unlock()
	// A client that offers nothing could be asked nothing: the shared
	// session refuses the server's requests as a lane would.
	return peer.Offers(caps) && inst != nil && inst.session != nil && !inst.modern() && s.wantsLane(inst, caps)
}

// bridgedState is the request state of b's round.
func (b *bridgedCall) state() string {
	return bridgeStatePrefix + b.id + "." + strconv.Itoa(b.round)
}

// bridgeRound is a round of a bridged call that ends the client's
// request: the server's questions, and the request state naming the call.
type bridgeRound struct {
	requests mcp.InputRequestMap
	state    string
}

// bridged runs a request of a relaying client's (name: "tools/call NAME",
// "prompts/get NAME" or "resources/read URI") to key's server under a
// bridge: run, started now, or, for a retry (a Round whose state names a
// parked call), the parked run resumed. It returns the run's result, or
// the round of questions that ends the client's request. progress, if set,
// gets the server's progress for the client's request that waits.
func (s *Supervisor) bridged(ctx context.Context, key events.Key, name string, progress func(*mcp.ProgressNotificationParams),
	run func(context.Context, func(*mcp.ProgressNotificationParams)) (mcp.Result, error)) (mcp.Result, *bridgeRound, error) {
	if r, ok := peer.RoundFrom(ctx); ok && strings.HasPrefix(r.State, bridgeStatePrefix) {
		return s.resumeBridged(ctx, key, name, r, progress)
	}
	id := make([]byte, 16)
	_, _ = rand.Read(id)
	b := &bridgedCall{
		id: hex.EncodeToString(id), key: key.Canonical(), name: name, caps: peer.RelayedCapabilities(ctx),
		done: make(chan struct{}), changed: make(chan struct{}), progress: progress,
	}
	if b.caps == nil {
		b.caps = &mcp.ClientCapabilities{}
	}
	s.bridges.mu.Lock()
	if s.bridges.calls == nil {
		s.bridges.calls = map[string]*bridgedCall{}
	}
	s.bridges.calls[b.id] = b
	s.bridges.mu.Unlock()

	// The call outlives the client's request: it ends at its result, its
	// spec.timeout, or the client's cancellation (next).
	callCtx, cancel := context.WithCancelCause(peer.With(context.WithoutCancel(ctx), (*bridgePeer)(b)))
	b.cancel = cancel
	go func() {
		res, err := run(callCtx, b.notifyProgress)
		cancel(nil)
		s.bridges.mu.Lock()
		delete(s.bridges.calls, b.id)
		s.bridges.mu.Unlock()
		b.res, b.err = res, err
		close(b.done)
	}()
	return b.next(ctx)
}

// bridgedAs is what bridged returned as the result of its request: the
// run's result, or asked's for a round of questions.
func bridgedAs[R mcp.Result](res mcp.Result, round *bridgeRound, err error, asked func(*bridgeRound) R) (R, error) {
	var zero R
	switch {
	case round != nil:
		return asked(round), nil
	case err != nil:
		return zero, err
	}
	r, _ := res.(R)
	return r, nil
}

// resumeBridged delivers a retry's answers to its parked call, and waits
// for what comes next.
func (s *Supervisor) resumeBridged(ctx context.Context, key events.Key, name string, r peer.Round,
	progress func(*mcp.ProgressNotificationParams)) (mcp.Result, *bridgeRound, error) {
	id, round, _ := strings.Cut(strings.TrimPrefix(r.State, bridgeStatePrefix), ".")
	s.bridges.mu.Lock()
	b := s.bridges.calls[id]
	s.bridges.mu.Unlock()
	if b == nil || b.key != key.Canonical() || b.name != name {
		return nil, nil, errBridgeEnded
	}
	b.mu.Lock()
	if strconv.Itoa(b.round) != round || b.put == nil {
		b.mu.Unlock()
		return nil, nil, errBridgeEnded // a round answered already
	}
	put := b.put
	b.put = nil
	b.progress = progress
	for qid, q := range put {
		resp, ok := r.Responses[qid]
		if !ok {
			// Unanswered: asked again in the next round, first.
			b.asked = append([]*question{q}, b.asked...)
			continue
		}
		q.answer <- answer{response: resp}
	}
	b.mu.Unlock()
	return b.next(ctx)
}

// next waits for b's result, or for a question of the server's, which ends
// the client's request with a round of questions. The client's
// cancellation (ctx) meanwhile cancels the call.
func (b *bridgedCall) next(ctx context.Context) (mcp.Result, *bridgeRound, error) {
	for {
		b.mu.Lock()
		if len(b.asked) > 0 {
			// One question a round, the oldest: several classic requests
			// that arrive together carry no sign that they belong together,
			// and whether the next had arrived by now would be a matter of
			// timing; a round of each is the same for every client, every
			// time.
			q := b.asked[0]
			b.asked = b.asked[1:]
			r := &bridgeRound{requests: mcp.InputRequestMap{q.id: q.request}}
			b.put = map[string]*question{q.id: q}
			b.round++
			b.progress = nil // the request that would take it ends
			r.state = b.state()
			b.mu.Unlock()
			return nil, r, nil
		}
		changed := b.changed
		b.mu.Unlock()
		select {
		case <-b.done:
			return b.res, nil, b.err
		case <-changed:
		case <-ctx.Done():
			b.cancel(context.Cause(ctx))
			return nil, nil, context.Cause(ctx)
		}
	}
}

// notifyProgress passes the server's progress to the request of the
// client's that waits for the call, if one does.
func (b *bridgedCall) notifyProgress(p *mcp.ProgressNotificationParams) {
	b.mu.Lock()
	progress := b.progress
	b.mu.Unlock()
	if progress != nil {
		progress(p)
	}
}

// ask parks the server's request until the client's retry answers it, the
// server gives up on it (ctx), or the call ends.
func (b *bridgedCall) ask(ctx context.Context, request mcp.InputRequest) (mcp.InputResponse, error) {
	b.mu.Lock()
	b.nextQ++
	q := &question{id: strconv.Itoa(b.nextQ), request: request, answer: make(chan answer, 1)}
	b.asked = append(b.asked, q)
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
	select {
	case a := <-q.answer:
		return a.response, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-b.done:
		return nil, errClientGone
	}
}

// bridgePeer is a bridged call as the lane's client: the lane passes the
// server's requests to it as to any client, and it parks them.
type bridgePeer bridgedCall

var _ peer.Peer = (*bridgePeer)(nil)

func (p *bridgePeer) call() *bridgedCall { return (*bridgedCall)(p) }

// ID names the call; it keys its lane.
func (p *bridgePeer) ID() string { return "bridged-call-" + p.id }

// Capabilities are what the client's first request declared.
func (p *bridgePeer) Capabilities() *mcp.ClientCapabilities { return p.caps }

// Done is closed as the call ends: its lane ends with it.
func (p *bridgePeer) Done() <-chan struct{} { return p.done }

// Session is the call itself: it has no session beyond it.
func (p *bridgePeer) Session() peer.Peer { return p }

func (p *bridgePeer) CreateMessage(ctx context.Context, params *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	return answerAs[*mcp.CreateMessageWithToolsResult](p.call().ask(ctx, params))
}

func (p *bridgePeer) Elicit(ctx context.Context, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return answerAs[*mcp.ElicitResult](p.call().ask(ctx, params))
}

func (p *bridgePeer) ListRoots(ctx context.Context, params *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if params == nil {
		params = &mcp.ListRootsParams{}
	}
	return answerAs[*mcp.ListRootsResult](p.call().ask(ctx, params))
}

// NotifyElicitationComplete has no stream to go on.
func (p *bridgePeer) NotifyElicitationComplete(context.Context, *mcp.ElicitationCompleteParams) error {
	return nil
}

// Log has no stream to go on.
func (p *bridgePeer) Log(context.Context, *mcp.LoggingMessageParams) error { return nil }

func (p *bridgePeer) LogLevel() mcp.LoggingLevel { return "" }
func (p *bridgePeer) RootsChanges() uint64       { return 0 }

// Changed never closes: a call's client changes nothing of its own.
func (p *bridgePeer) Changed() <-chan struct{} { return nil }

// answerAs is a client's answer as the result its question takes: an
// answer of another kind (a sampling result to an elicitation, say) fails
// the server's request, saying so.
func answerAs[R mcp.InputResponse](resp mcp.InputResponse, err error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	if r, ok := resp.(R); ok {
		return r, nil
	}
	if m, ok := resp.(*mcp.CreateMessageResult); ok {
		if r, ok := any(&mcp.CreateMessageWithToolsResult{Meta: m.Meta, Model: m.Model, Role: m.Role,
			StopReason: m.StopReason, Content: []mcp.Content{m.Content}}).(R); ok {
			return r, nil
		}
	}
	return zero, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("musterd: the client answered with %T, where %T was asked for", resp, zero)}
}
