package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/peer"
)

// A user connection is one user's own session to a remote server: every
// HTTP request of it carries that user's bearer token (userbearer.go), it
// lists its own tools, which may be other than anyone else's, and the calls
// of that user (identity.From(ctx).Owner()) go to it, ahead of the
// server's shared instance. It is an instance (instance.go), as a lane
// is, with the same health checks and call handling, but it hangs off the
// server's entry rather than off its shared instance: a server that
// answered 401 to musterd's own connect (Auth Required, authrequired.go)
// runs no shared instance at all, and its users' connections are all it
// has. Nothing of a user connection shows in the server's Observed.
//
// A user connection is opened by ConnectAs (the wiring calls it once the
// user has logged in, with the user's token source) and ends with the
// first of: DisconnectAs; a Stop of its server or a change of its spec;
// its connection failing (the server closes its session, or a health ping
// fails); or the server refusing the user's token, once the token source
// was asked again (the user must log in again). It is never reopened by
// the supervisor: whoever holds the user's credential calls ConnectAs
// again. Each opening, relisting and end is reported through
// Options.OnUserChange.
//
// The server's requests to its client (sampling, elicitation, roots) on a
// user connection are refused, saying why: the connection serves every
// MCP session of its user, so none of them is the one to ask (a client
// that takes a 2026-07-28 server's input-required results itself,
// peer.Relays, still gets them as they are: they need no session). Its
// log messages reach those of its user's clients that called through it.
// Its notifications/resources/updated reach the WatchResourceUpdates
// watchers under the server's key, as the shared instance's do (a
// subscription made on it lasts as long as it); its resources and prompts
// list_changed reach no WatchLists watcher, whose lists are the shared
// instance's.

// ErrAuthorizationRequired is wrapped by the error of a call that needs
// its caller's own connection to its server, which the caller has not (or
// no longer: the server refused the user's token): the server's shared
// instance is Auth Required.
var ErrAuthorizationRequired = errors.New("authorization required")

// authorizationRequired is the error of a call to key's server that needs
// its caller to log in; why, if set, says more.
func authorizationRequired(key events.Key, why string) error {
	if why != "" {
		why = " (" + why + ")"
	}
	return fmt.Errorf("mcp server %s: %w: log in with core_auth_login%s", key.Name, ErrAuthorizationRequired, why)
}

// UserObserved is what the supervisor knows of one user connection. It is
// a snapshot: never change one, nor its Tools or Init.
type UserObserved struct {
	// Key is the server's.
	Key events.Key
	// Owner is the user's, as identity.Identity.Owner gives it.
	Owner string
	// Tools are the server's own tools as the user's connection listed
	// them, sorted by name.
	Tools []*mcp.Tool
	// ListedAt is when they were listed: at the opening, or after the
	// server said its tools changed.
	ListedAt time.Time
	// Init is what the server answered to the connection's initialize.
	Init *mcp.InitializeResult
	// ConnectedAt is when the connection opened.
	ConnectedAt time.Time
	// SpecHash identifies the server's spec the connection runs, as
	// Observed.SpecHash does.
	SpecHash string
	// Ended says, in the report of a connection that ended (gone), why;
	// "" otherwise. Scrubbed of secrets.
	Ended string
	// TokenRefused is set, in the report of a connection that ended, when
	// it ended because the server refused the user's token (or the token
	// source gave none): the user must log in again.
	TokenRefused bool
}

// userConn is one user's connection to one server.
type userConn struct {
	key   events.Key
	owner string
	hash  string
	creds *bearer
	inst  *instance     // set before its goroutine starts it
	ready chan struct{} // closed once inst runs or err is set
	err   error         // why it did not open; set before ready is closed
	done  chan struct{} // closed once it is torn down

	// Guarded by Supervisor.mu.
	obs    UserObserved
	opened bool // reported open: its end is reported gone
	ended  bool // forgotten: no longer in its entry's users
}

// ConnectAs opens owner's own connection to key's remote server, or
// returns the one open (which takes cred from then on: a later login's
// source replaces an earlier one's). Each HTTP request of the connection
// carries "Authorization: Bearer <token>", the token asked of cred for
// that request (so a refreshed token is used at once; cred must be safe
// for concurrent use). It lists the server's tools for the user, and
// returns once the connection runs. A server that answers 401 returns a
// *AuthRequiredError, and no connection is kept; a token source that
// gives no token, an error wrapping ErrAuthorizationRequired. Only a
// remote server (streamable-http, sse) that Ensure was asked to run takes
// user connections; MaxUserConnectionsPerServer bounds them. If ctx ends
// first, ConnectAs returns, and the connection goes on opening (and is
// reported through OnUserChange).
func (s *Supervisor) ConnectAs(ctx context.Context, key events.Key, owner string, cred oauth2.TokenSource) (UserObserved, error) {
	key = key.Canonical()
	if owner == "" || cred == nil {
		return UserObserved{}, fmt.Errorf("mcp server %s: a user connection needs an owner and a token source", key.Name)
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		return UserObserved{}, ErrShutdown
	}
	e := s.entries[key]
	if e == nil || e.spec == nil || e.stopping > 0 {
		var state v1alpha1.MCPServerState
		if e != nil {
			state = e.obs.State
		}
		s.mu.Unlock()
		return UserObserved{}, &ServerError{Key: key, State: state, Err: ErrNotRunning, Detail: "no user connection opens to a server musterd is not asked to run"}
	}
	if typ := e.spec.spec.Type; !typ.IsRemote() {
		s.mu.Unlock()
		return UserObserved{}, fmt.Errorf("mcp server %s: a user connection is for a remote server (streamable-http, sse), and this one is %s", key.Name, typ)
	}
	uc := e.users[owner]
	if uc != nil {
		uc.creds.use(cred)
	} else {
		if n := len(e.users); n >= s.opts.MaxUserConnectionsPerServer {
			s.mu.Unlock()
			return UserObserved{}, fmt.Errorf("mcp server %s: no connection of its own for %s: %d users have one already (MaxUserConnectionsPerServer)", key.Name, owner, n)
		}
		uc = s.newUserConn(e, owner, cred)
		if e.users == nil {
			e.users = map[string]*userConn{}
		}
		e.users[owner] = uc
		s.userConns.Add(1)
		go s.runUser(e, uc)
	}
	s.mu.Unlock()

	select {
	case <-uc.ready:
	case <-ctx.Done():
		return UserObserved{}, fmt.Errorf("mcp server %s: opening %s's own connection: %w", key.Name, owner, context.Cause(ctx))
	}
	if uc.err != nil {
		return UserObserved{}, uc.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if uc.ended {
		why := uc.obs.Ended
		if why == "" {
			why = uc.inst.calls.stopReason
		}
		if uc.obs.TokenRefused {
			return UserObserved{}, authorizationRequired(key, why)
		}
		return UserObserved{}, &ServerError{Key: key, State: v1alpha1.MCPServerStateDisconnected, Err: ErrStopped,
			Detail: "it ended as it opened: " + why}
	}
	return uc.obs, nil
}

// newUserConn makes owner's connection to e's server, its instance ready
// to start.
func (s *Supervisor) newUserConn(e *entry, owner string, cred oauth2.TokenSource) *userConn {
	want := e.spec
	uc := &userConn{key: e.key, owner: owner, hash: want.hash, creds: newBearer(cred),
		ready: make(chan struct{}), done: make(chan struct{})}
	inst := s.newInstance(e.key, want.spec, want.hash)
	inst.protocolPin = want.protocolPin
	inst.user = uc
	inst.scrub.tokens = uc.creds.seen
	// Its resources and prompts are the user's: no watcher of the shared
	// server's lists is to relist them.
	inst.calls.listsChanged = func() {}
	uc.creds.refuse = func(why string) {
		inst.cancel(fmt.Errorf("%w: %s", errTokenRefused, inst.scrub.clean(why)))
	}
	uc.inst = inst
	return uc
}

// DisconnectAs ends owner's connection to key's server, if one is open or
// opening: its calls under way fail with ErrStopped. It returns once the
// connection is closed, or ctx ends.
func (s *Supervisor) DisconnectAs(ctx context.Context, key events.Key, owner string) {
	key = key.Canonical()
	s.mu.Lock()
	e := s.entries[key]
	var uc *userConn
	if e != nil {
		uc = e.users[owner]
	}
	if uc != nil {
		s.endUserLocked(e, uc, "its user disconnected")
	}
	s.mu.Unlock()
	if uc != nil {
		awaitUsers(ctx, []*userConn{uc})
	}
}

// UserConnection returns owner's open connection to key's server, and
// false if there is none (or it is still opening).
func (s *Supervisor) UserConnection(key events.Key, owner string) (UserObserved, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	if e == nil {
		return UserObserved{}, false
	}
	uc := e.users[owner]
	if uc == nil || !uc.opened {
		return UserObserved{}, false
	}
	return uc.obs, true
}

// UserConnections returns the open user connections to key's server,
// sorted by owner.
func (s *Supervisor) UserConnections(key events.Key) []UserObserved {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	if e == nil {
		return nil
	}
	var out []UserObserved
	for _, uc := range e.users {
		if uc.opened {
			out = append(out, uc.obs)
		}
	}
	slices.SortFunc(out, func(a, b UserObserved) int { return strings.Compare(a.Owner, b.Owner) })
	return out
}

// endUsersLocked ends every user connection of e, saying why, and returns
// them, for a caller that waits for their end.
func (s *Supervisor) endUsersLocked(e *entry, why string) []*userConn {
	users := make([]*userConn, 0, len(e.users))
	for _, uc := range e.users {
		users = append(users, uc)
	}
	for _, uc := range users {
		s.endUserLocked(e, uc, why)
	}
	return users
}

// endUserLocked ends uc: it is forgotten at once (no call finds it from
// now on), its calls under way fail with ErrStopped, and its goroutine
// closes it and reports it gone.
func (s *Supervisor) endUserLocked(e *entry, uc *userConn, why string) {
	s.forgetUserLocked(e, uc)
	if uc.inst.calls.stopReason == "" {
		uc.inst.calls.stopReason = uc.owner + "'s own connection to it ended: " + why
	}
	uc.inst.cancel(errStopping)
}

// forgetUserLocked takes uc off e's user connections.
func (s *Supervisor) forgetUserLocked(e *entry, uc *userConn) {
	uc.ended = true
	if e.users[uc.owner] == uc {
		delete(e.users, uc.owner)
	}
}

// awaitUsers waits until users are torn down, or ctx ends.
func awaitUsers(ctx context.Context, users []*userConn) {
	for _, uc := range users {
		select {
		case <-uc.done:
		case <-ctx.Done():
			return
		}
	}
}

// userChangedLocked queues a report of uc for OnUserChange.
func (s *Supervisor) userChangedLocked(uc *userConn, gone bool) {
	if s.opts.OnUserChange == nil {
		return
	}
	obs := uc.obs
	s.queueLocked(change{key: uc.key, user: &obs, gone: gone})
}

// runUser opens uc and watches it until it ends; then it closes it.
func (s *Supervisor) runUser(e *entry, uc *userConn) {
	defer s.userConns.Done()
	defer close(uc.done)
	inst := uc.inst
	if err := s.startUser(inst); err != nil {
		s.mu.Lock()
		s.forgetUserLocked(e, uc)
		s.mu.Unlock()
		uc.err = s.userStartError(uc, err)
		close(uc.ready)
		s.log.Info("mcp server: a user's own connection did not open", "key", uc.key.String(), "owner", identity.LogTag(uc.owner), "error", uc.err.Error())
		return
	}

	s.mu.Lock()
	now := time.Now()
	uc.obs = UserObserved{Key: uc.key, Owner: uc.owner, Tools: inst.tools, ListedAt: now,
		Init: inst.session.InitializeResult(), ConnectedAt: now, SpecHash: uc.hash}
	if !uc.ended {
		uc.opened = true
		s.userChangedLocked(uc, false)
	}
	s.mu.Unlock()
	close(uc.ready)
	s.log.Info("mcp server: opened a user's own connection", "key", uc.key.String(), "owner", identity.LogTag(uc.owner), "tools", len(inst.tools))

	reason := s.watchUser(uc)
	refused := errors.Is(context.Cause(inst.ctx), errTokenRefused)
	if refused {
		reason = context.Cause(inst.ctx).Error() // made scrubbed by refuse
	}
	s.mu.Lock()
	s.forgetUserLocked(e, uc)
	if uc.opened {
		uc.obs.Ended, uc.obs.TokenRefused = reason, refused
		s.userChangedLocked(uc, true)
	}
	var idle chan struct{}
	if inst.calls.inflight > 0 {
		idle = make(chan struct{})
		inst.calls.idle = idle // closed by release as the last call returns
	}
	s.mu.Unlock()
	if idle != nil && inst.ctx.Err() != nil {
		// Its calls, cancelled, return before its session closes: closed
		// under a call, the go-sdk closes the connection on the call's
		// goroutine as it is retired, and the call waits for the server
		// to answer the close (which a go-sdk server does only once the
		// call's handler is done), not failing as stopped at once.
		t := time.NewTimer(s.opts.StopGrace)
		select {
		case <-idle:
		case <-t.C:
		}
		t.Stop()
	}
	inst.teardown(s.opts.StopGrace)
	s.log.Info("mcp server: closed a user's own connection", "key", uc.key.String(), "owner", identity.LogTag(uc.owner), "reason", reason)
}

// startUser launches inst, a user connection's instance.
func (s *Supervisor) startUser(inst *instance) error { return s.launchBounded(inst) }

// userStartError is the error ConnectAs returns for uc, whose start failed
// with err (scrubbed, or a cause of the supervisor's).
func (s *Supervisor) userStartError(uc *userConn, err error) error {
	if authErr, ok := errors.AsType[*AuthRequiredError](err); ok {
		return authErr // the server answered 401: what its challenge asks is in it
	}
	cause := context.Cause(uc.inst.ctx)
	switch {
	case errors.Is(cause, errTokenRefused):
		return authorizationRequired(uc.key, cause.Error())
	case errors.Is(cause, errStopping):
		s.mu.Lock()
		reason := uc.inst.calls.stopReason
		s.mu.Unlock()
		return &ServerError{Key: uc.key, State: v1alpha1.MCPServerStateDisconnected, Err: ErrStopped, Detail: reason}
	}
	return fmt.Errorf("mcp server %s: could not open %s's own connection: %w", uc.key.Name, uc.owner, err)
}

// watchUser watches uc, which runs, until it ends, and says why. It pings
// its server every PingInterval (and at once after a call failed in the
// transport), and relists its tools when the server says they changed.
func (s *Supervisor) watchUser(uc *userConn) string {
	inst := uc.inst
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-inst.ctx.Done():
			s.mu.Lock()
			reason := inst.calls.stopReason
			s.mu.Unlock()
			if reason == "" {
				reason = context.Cause(inst.ctx).Error()
			}
			return reason
		case <-inst.sessionEnded:
			reason := "the server closed the connection"
			if inst.sessionErr != nil {
				reason += ": " + inst.scrub.clean(inst.sessionErr.Error())
			}
			return reason
		case <-ping.C:
			if err := inst.ping(s.opts.PingTimeout); err != nil {
				return "health ping failed: " + inst.scrub.clean(err.Error())
			}
		case <-inst.calls.suspect:
			if err := inst.ping(s.opts.PingTimeout); err != nil {
				return "health ping after a failed call failed: " + inst.scrub.clean(err.Error())
			}
			ping.Reset(s.opts.PingInterval)
		case <-inst.toolsChanged:
			s.relistUser(uc)
		}
	}
}

// relistUser lists uc's tools again, after its server said they changed,
// and reports the listing.
func (s *Supervisor) relistUser(uc *userConn) {
	inst := uc.inst
	ctx, cancel := context.WithTimeout(inst.ctx, s.opts.PingTimeout)
	defer cancel()
	tools, err := listTools(ctx, inst.session)
	if err != nil {
		// Not a failure of the connection's: the next ping tells.
		s.log.Warn("mcp server: tools/list on a user's own connection after its tools changed failed", "key", uc.key.String(),
			"owner", identity.LogTag(uc.owner), "error", inst.scrub.clean(err.Error()))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if uc.ended {
		return
	}
	if !sameTools(uc.obs.Tools, tools) {
		uc.obs.Tools = tools
	}
	uc.obs.ListedAt = time.Now()
	s.userChangedLocked(uc, false)
}

// userConnFor returns the connection of ctx's caller (identity.From) to
// key's server, once it runs; nil when the caller has none, or it failed
// to open.
func (s *Supervisor) userConnFor(ctx context.Context, key events.Key) (*userConn, error) {
	id, ok := identity.From(ctx)
	if !ok {
		return nil, nil
	}
	s.mu.Lock()
	var uc *userConn
	if e := s.entries[key]; e != nil {
		uc = e.users[id.Owner()]
	}
	s.mu.Unlock()
	if uc == nil {
		return nil, nil
	}
	select {
	case <-uc.ready:
	case <-ctx.Done():
		return nil, fmt.Errorf("mcp server %s: waiting for the caller's own connection to open: %w", key.Name, context.Cause(ctx))
	}
	if uc.err != nil {
		return nil, nil
	}
	return uc, nil
}

// hasUserConn reports whether ctx's caller has a connection of its own to
// key's server, open or opening.
func (s *Supervisor) hasUserConn(ctx context.Context, key events.Key) bool {
	id, ok := identity.From(ctx)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	return e != nil && e.users[id.Owner()] != nil
}

// callUser runs do on uc's session, as call does on a server's: bounded
// by the spec's timeout, cancelled when the connection ends.
func (s *Supervisor) callUser(ctx context.Context, uc *userConn, what string, do func(context.Context, *instance) error) error {
	inst := uc.inst
	s.mu.Lock()
	inst.calls.inflight++
	s.mu.Unlock()
	defer s.release(inst)
	if p, ok := peer.From(ctx); ok {
		inst.join(ctx, p) // its log messages reach p's client (clientrequests.go)
	}
	err, final := invoke(ctx, uc.key, inst, what, do)
	if err == nil || final {
		return err
	}
	return s.userCallError(ctx, uc, what, err)
}

// userCallError makes the error of a call on uc that failed.
func (s *Supervisor) userCallError(ctx context.Context, uc *userConn, what string, err error) error {
	inst := uc.inst
	if ctx.Err() != nil {
		return fmt.Errorf("mcp server %s: %s: %w", uc.key, what, context.Cause(ctx))
	}
	if cause := context.Cause(inst.ctx); errors.Is(cause, errTokenRefused) {
		return authorizationRequired(uc.key, cause.Error())
	}
	if answered, ok := answeredError(inst, err); ok {
		return fmt.Errorf("mcp server %s: %s: %w", uc.key, what, answered)
	}
	s.awaitVerdict(inst, err) // the watcher pings now
	s.mu.Lock()
	stopReason := inst.calls.stopReason
	s.mu.Unlock()
	cause := context.Cause(inst.ctx)
	switch {
	case errors.Is(cause, errTokenRefused):
		return authorizationRequired(uc.key, cause.Error())
	case errors.Is(cause, errStopping):
		return &ServerError{Key: uc.key, State: v1alpha1.MCPServerStateDisconnected, Err: ErrStopped, Detail: what + ": " + stopReason}
	case cause != nil || errors.Is(err, mcp.ErrConnectionClosed):
		return &ServerError{Key: uc.key, State: v1alpha1.MCPServerStateDisconnected, Err: ErrDied,
			Detail: what + ": " + uc.owner + "'s own connection to it ended: " + inst.scrub.clean(err.Error())}
	default:
		return fmt.Errorf("mcp server %s: %s: %s", uc.key, what, inst.scrub.clean(err.Error()))
	}
}
