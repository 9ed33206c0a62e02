//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package supervisor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/peer"
)

// A lane is a session of its own to a server for one client of musterd's:
// a process of its own for a stdio server, an MCP session of its own for a
// remote one. It offers the server what that client offered, and passes
// the server's requests (sampling, elicitation, roots) and log messages to
// that client and no other (clientrequests.go). A lane is opened at the
// client's first tool call to the server that needs one, beside the
// server's shared instance, and ends with the first of: the client's
// session, LaneIdle without a call, the shared instance (a stop, a
// restart, a crash: calls still pending on the lane fail with ErrStopped),
// or its own process or connection. A lane is never restarted and never
// changes the server's observed state: the shared instance alone is what
// the status shows. A lane that ended is opened anew at the client's next
// call.

// ClientSessionsAnnotation is the MCPServer annotation that sets its
// ClientSessions.
const ClientSessionsAnnotation = "musterd.io/client-sessions"

// ClientSessions says when a server's tool calls get a lane of their own
// per client.
type ClientSessions string

const (
	// ClientSessionsAuto (the default) gives a remote server a lane per
	// client that offered sampling, elicitation or roots; a stdio server
	// is shared, since a lane is a process.
	ClientSessionsAuto ClientSessions = "auto"
	// ClientSessionsPerClient gives every client a lane: a stdio server
	// runs once per client session that calls it.
	ClientSessionsPerClient ClientSessions = "per-client"
	// ClientSessionsShared never opens a lane: the server's requests to a
	// client are refused, saying why.
	ClientSessionsShared ClientSessions = "shared"
)

// ParseClientSessions reads an annotation's value; "" is auto.
func ParseClientSessions(v string) (ClientSessions, error) {
	switch c := ClientSessions(v); c {
	case "":
		return ClientSessionsAuto, nil
	case ClientSessionsAuto, ClientSessionsPerClient, ClientSessionsShared:
		return c, nil
	default:
		return ClientSessionsAuto, fmt.Errorf("%q is not one of %s, %s, %s", v, ClientSessionsAuto, ClientSessionsPerClient, ClientSessionsShared)
	}
}

// SetClientSessions sets key's policy for lanes. It applies to the lanes
// opened from then on: it restarts nothing, and lanes open stay until they
// end.
func (s *Supervisor) SetClientSessions(key events.Key, c ClientSessions) {
	key = key.Canonical()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == "" || c == ClientSessionsAuto {
		delete(s.clientSessions, key)
		return
	}
	if s.clientSessions == nil {
		s.clientSessions = map[events.Key]ClientSessions{}
	}
	s.clientSessions[key] = c
}

// Lanes returns the number of lanes open to key's server.
func (s *Supervisor) Lanes(key events.Key) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	if e == nil || e.inst == nil {
		return 0
	}
	return len(e.inst.lanes.byClient)
}

// wantsLane reports whether a call of a client that offered caps to the
// server of shared goes through a lane.
func (s *Supervisor) wantsLane(shared *instance, caps *mcp.ClientCapabilities) bool {
	s.mu.Lock()
	c := s.clientSessions[shared.key]
	s.mu.Unlock()
	switch c {
	case ClientSessionsShared:
		return false
	case ClientSessionsPerClient:
		return true
	default:
		return shared.remote && peer.Offers(caps)
	}
}

// laneSet is a shared instance's lanes.
type laneSet struct {
	byClient map[string]*lane // by peer ID; guarded by Supervisor.mu
	closed   bool             // the shared instance ended: no new lane
	wg       sync.WaitGroup   // one per lane goroutine (runLane)
}

// lane is one client's session to a server.
type lane struct {
	shared *instance
	peer   peer.Peer     // the client, bound to no call
	ready  chan struct{} // closed once inst runs or err is set
	err    error
	inst   *instance

	// asking ends when the lane does: the server's requests still waiting
	// for the client are answered with an error then (ask).
	asking     context.Context
	stopAsking context.CancelFunc

	mu       sync.Mutex
	calls    map[uint64]peer.Peer // the client bound to each call in flight
	asks     int                  // the server's requests being passed to the client (ask)
	changed  chan struct{}        // closed and replaced when calls or asks drop
	nextCall uint64
	lastUse  time.Time
	closing  bool // ended: calls must open a new lane
}

// target is where a request of the lane's server goes: the client bound
// to its one call in flight, so that it travels on that call's stream, or
// the client unbound when it has none or several.
func (l *lane) target() peer.Peer {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 1 {
		for _, p := range l.calls {
			return p
		}
	}
	return l.peer
}

// enter counts a call of p on l, unless l is ending.
func (l *lane) enter(p peer.Peer) (leave func(), ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return nil, false
	}
	l.nextCall++
	n := l.nextCall
	l.calls[n] = p
	return func() {
		l.mu.Lock()
		delete(l.calls, n)
		l.lastUse = time.Now()
		l.changedLocked()
		l.mu.Unlock()
	}, true
}

// passing counts a server's request being passed to the client until the
// returned func is called.
func (l *lane) passing() (done func()) {
	l.mu.Lock()
	l.asks++
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.asks--
		l.changedLocked()
		l.mu.Unlock()
	}
}

func (l *lane) changedLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// waitQuiet waits, up to d, until l has no call in flight and, unless
// callsOnly, no request of the server's pending.
func (l *lane) waitQuiet(d time.Duration, callsOnly bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		l.mu.Lock()
		quiet := len(l.calls) == 0 && (callsOnly || l.asks == 0)
		changed := l.changed
		l.mu.Unlock()
		if quiet {
			return
		}
		select {
		case <-changed:
		case <-t.C:
			return
		}
	}
}

// laneFor returns p's client's lane to the server of shared, opened now if
// it has none, with a call counted on it.
func (s *Supervisor) laneFor(ctx context.Context, shared *instance, p peer.Peer) (*instance, func(), error) {
	client := p.Session()
	for {
		s.mu.Lock()
		if shared.lanes.closed {
			s.mu.Unlock()
			return nil, nil, &ServerError{Key: shared.key, Err: ErrStopped, Detail: "its session was ending as a client's own session was to open"}
		}
		l := shared.lanes.byClient[client.ID()]
		if l == nil {
			if n := len(shared.lanes.byClient); n >= s.opts.MaxLanesPerServer {
				s.mu.Unlock()
				return nil, nil, fmt.Errorf("mcp server %s: no session of its own for MCP session %s: %d clients have one already (MaxLanesPerServer)",
					shared.key, client.ID(), n)
			}
			l = &lane{shared: shared, peer: client, ready: make(chan struct{}), calls: map[uint64]peer.Peer{}, changed: make(chan struct{})}
			l.asking, l.stopAsking = context.WithCancel(context.Background())
			if shared.lanes.byClient == nil {
				shared.lanes.byClient = map[string]*lane{}
			}
			shared.lanes.byClient[client.ID()] = l
			shared.lanes.wg.Add(1)
			go s.runLane(shared, l)
		}
		s.mu.Unlock()
		select {
		case <-l.ready:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("mcp server %s: opening a session of its own for MCP session %s: %w", shared.key, client.ID(), context.Cause(ctx))
		}
		if l.err != nil {
			return nil, nil, l.err
		}
		if leave, ok := l.enter(p); ok {
			return l.inst, leave, nil
		}
		// It ended as this call came: open the next.
	}
}

// runLane starts l and watches it until it ends; then it tears it down.
func (s *Supervisor) runLane(shared *instance, l *lane) {
	defer shared.lanes.wg.Done()
	inst := s.newInstance(shared.key, shared.spec, shared.hash)
	inst.protocolPin = shared.protocolPin // a lane is held to its server's pin too
	inst.lane = l
	// The shared instance's end ends the lane: a stop, a restart, a crash.
	stopWithShared := context.AfterFunc(shared.ctx, func() {
		s.mu.Lock()
		inst.calls.stopReason = shared.calls.stopReason
		if inst.calls.stopReason == "" {
			inst.calls.stopReason = "its server was stopped, restarted or failed, and the client's own session with it ended"
		}
		s.mu.Unlock()
		inst.cancel(errStopping)
	})
	defer stopWithShared()
	defer l.stopAsking()
	err := s.startLane(inst, l)
	if err != nil {
		l.err = fmt.Errorf("mcp server %s: could not open a session of its own for MCP session %s: %w", shared.key, l.peer.ID(), err)
		s.endLane(l)
		close(l.ready)
		s.log.Warn("mcp server: a client's own session failed to open", "key", shared.key.String(), "client", l.peer.ID(),
			"error", l.err.Error())
		return
	}
	l.inst = inst
	l.lastUse = time.Now()
	close(l.ready)
	s.log.Info("mcp server: opened a session for one client", "key", shared.key.String(), "client", l.peer.ID(), "pid", inst.pid())
	reason := s.watchLane(inst, l)
	s.endLane(l)
	if inst.ctx.Err() != nil {
		// Stopped: its calls, cancelled, return before the server's
		// questions are answered, so that a call cut off by the stop
		// fails as stopped, never with what the server made of the
		// answer in the meantime.
		l.waitQuiet(s.opts.StopGrace, true)
	}
	l.stopAsking()
	s.closeLane(inst, l)
	inst.teardown(s.opts.StopGrace)
	s.log.Info("mcp server: closed a client's own session", "key", shared.key.String(), "client", l.peer.ID(), "reason", reason)
}

// startLane launches l's instance within a start slot and the spec's
// start timeout; it ends early with the client's session.
func (s *Supervisor) startLane(inst *instance, l *lane) error {
	started := make(chan struct{})
	defer close(started)
	go func() {
		select {
		case <-l.peer.Done():
			inst.cancel(errStopping)
		case <-started:
		}
	}()
	return s.launchBounded(inst)
}

// launchBounded launches inst, a lane's or a user connection's instance,
// within a start slot (StartConcurrency) and its spec's start timeout; a
// launch cancelled meanwhile is torn down and fails with the cause.
func (s *Supervisor) launchBounded(inst *instance) error {
	select {
	case s.startSlots <- struct{}{}:
	case <-inst.ctx.Done():
		return context.Cause(inst.ctx)
	}
	defer func() { <-s.startSlots }()
	timeout := s.startTimeout(inst.spec)
	expire := time.AfterFunc(timeout, func() { inst.cancel(&startTimeoutError{timeout: timeout}) })
	err := inst.launch()
	expire.Stop()
	if err == nil && inst.ctx.Err() != nil {
		inst.teardown(0)
		err = context.Cause(inst.ctx)
	}
	return err
}

// watchLane waits for the end of l, running as inst, and says why it
// ended. Meanwhile it passes the client's changes of logging level and of
// roots on to the server.
func (s *Supervisor) watchLane(inst *instance, l *lane) string {
	var exited <-chan struct{}
	if inst.proc != nil {
		exited = inst.proc.exited
	}
	idle := time.NewTimer(s.opts.LaneIdle)
	defer idle.Stop()
	level, roots := l.peer.LogLevel(), l.peer.RootsChanges()
	for {
		select {
		case <-inst.ctx.Done():
			return context.Cause(inst.ctx).Error()
		case <-l.peer.Done():
			return "the client's session ended"
		case <-exited:
			return inst.proc.exit
		case <-inst.sessionEnded:
			return "the server closed the session"
		case <-inst.calls.suspect:
			if err := inst.ping(s.opts.PingTimeout); err != nil {
				return "health ping after a failed call failed: " + inst.scrub.clean(err.Error())
			}
		case <-idle.C:
			l.mu.Lock()
			left := s.opts.LaneIdle - time.Since(l.lastUse)
			busy := len(l.calls) > 0
			l.mu.Unlock()
			if !busy && left <= 0 && s.closeIdle(l) {
				return fmt.Sprintf("no call for %s", s.opts.LaneIdle)
			}
			idle.Reset(max(left, s.opts.LaneIdle/10, time.Millisecond))
		case <-l.peer.Changed():
			if now := l.peer.LogLevel(); now != level {
				level = now
				ctx, cancel := context.WithTimeout(inst.ctx, s.opts.PingTimeout)
				if err := inst.setLogLevel(ctx, level); err != nil {
					s.log.Debug("mcp server: passing a client's logging level failed", "key", inst.key.String(), "error", inst.scrub.clean(err.Error()))
				}
				cancel()
			}
			// A 2026-07-28 session has no roots/list_changed: its server
			// asks for the roots afresh in each input request.
			if now := l.peer.RootsChanges(); now != roots && !inst.modern() {
				roots = now
				// The go-sdk's one sender of notifications/roots/list_changed:
				// the lane's client has this session only, and roots/list
				// is answered from the client (serverRequests), never from
				// this root set.
				inst.client.AddRoots(&mcp.Root{URI: "musterd:roots-changed", Name: "the client's roots changed"})
			}
		}
	}
}

// closeLane closes a lane's session before its teardown cancels its
// context, once the server's requests have their answers (a client gone, a
// lane ending: errors, at once) and the lane's calls have ended (their
// cancellations sent): closed under a call, the go-sdk would close the
// connection as the call is retired, before either reached a remote
// server, which then waits for them for good. Bounded by StopGrace.
func (s *Supervisor) closeLane(inst *instance, l *lane) {
	if inst.ctx.Err() != nil {
		return // ended already: a stop, whose calls have failed
	}
	l.waitQuiet(s.opts.StopGrace, false)
	closed := make(chan struct{})
	go func() {
		_ = inst.session.Close()
		close(closed)
	}()
	t := time.NewTimer(s.opts.StopGrace)
	defer t.Stop()
	select {
	case <-closed:
	case <-t.C:
	}
}

// closeIdle ends l if no call came meanwhile.
func (s *Supervisor) closeIdle(l *lane) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) > 0 || time.Since(l.lastUse) < s.opts.LaneIdle {
		return false
	}
	s.forgetLaneLocked(l)
	return true
}

// endLane marks l ended and forgets it.
func (s *Supervisor) endLane(l *lane) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	s.forgetLaneLocked(l)
}

// forgetLaneLocked, with s.mu and l.mu held, marks l ended and takes it
// off its shared instance's lanes.
func (s *Supervisor) forgetLaneLocked(l *lane) {
	l.closing = true
	set := &l.shared.lanes
	if set.byClient[l.peer.ID()] == l {
		delete(set.byClient, l.peer.ID())
	}
}

// killLocked, with Supervisor.mu held, kills the processes of the lanes
// that run, for a shutdown out of time.
func (set *laneSet) killLocked() {
	for _, l := range set.byClient {
		select {
		case <-l.ready:
			if l.inst != nil {
				l.inst.kill()
			}
		default: // still starting: the shared instance's end cancels it
		}
	}
}

// endLanes, as a shared instance ends, opens no more lanes to it and waits
// until the lanes open have ended (their processes reaped).
func (s *Supervisor) endLanes(shared *instance) {
	s.mu.Lock()
	shared.lanes.closed = true
	s.mu.Unlock()
	shared.lanes.wg.Wait()
}
