package supervisor

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/internal/registry"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// Defaults of Options.
const (
	DefaultPingInterval = 30 * time.Second
	DefaultPingTimeout  = 10 * time.Second
	DefaultStopGrace    = 5 * time.Second
	DefaultStableAfter  = 60 * time.Second
	DefaultStderrTail   = 4096
	// DefaultStartConcurrency is sized for many slow servers starting at
	// once: muster's users declare 5 to 20, many launched by npx or uvx with
	// seconds of cold start each, and a start mostly waits.
	DefaultStartConcurrency = 16
	// DefaultStartTimeout bounds a start whose spec sets no timeout. It is
	// generous because an npx or uvx cold start downloads packages first:
	// slow, but healthy.
	DefaultStartTimeout = 2 * time.Minute
	DefaultCallWait     = 30 * time.Second
	DefaultDrainTimeout = 10 * time.Second
	// DefaultLaneIdle and DefaultMaxLanesPerServer: see Options.
	DefaultLaneIdle          = 5 * time.Minute
	DefaultMaxLanesPerServer = 32
	// DefaultMaxUserConnectionsPerServer: see Options.
	DefaultMaxUserConnectionsPerServer = 256
)

// Options configure a Supervisor. The zero value of each field is its
// default.
type Options struct {
	// Logger receives start, stop and failure lines; never an env value or
	// header. Default: slog.Default().
	Logger *slog.Logger
	// PingInterval is the period of each connected server's health ping.
	// Default 30s.
	PingInterval time.Duration
	// PingTimeout is how long a ping may take before the server counts as
	// failed. Default 10s.
	PingTimeout time.Duration
	// StopGrace is how long a stopped stdio server has between SIGTERM and
	// SIGKILL (on Windows, between the close of its stdin and the end of
	// its job object). Default 5s.
	StopGrace time.Duration
	// RestartBackoff spaces the starts of a server that keeps failing.
	// Default: 1s doubling to 5m, with 10% jitter.
	RestartBackoff Backoff
	// StableAfter is how long a server must run to clear its failure streak
	// (ConsecutiveFailures, LastError and the backoff). Default 60s.
	StableAfter time.Duration
	// StderrTail is how many bytes of each stdio server's stderr are kept
	// for LastError. Default 4096.
	StderrTail int
	// StartConcurrency bounds the starts (process start, initialize,
	// tools/list; or connect for a remote server) under way at once, over
	// all servers; others wait for a slot, in the state Starting or
	// Connecting. Starts run on the supervisor's own goroutines, never on
	// the caller's. Default 16.
	StartConcurrency int
	// StartTimeout bounds a start whose spec sets no timeout; a spec's
	// timeout wins. It is separate from PingTimeout: a server may be slow to
	// start and quick to answer once it runs. The time a start waits for a
	// slot does not count. Default 2m.
	StartTimeout time.Duration
	// InheritEnv gives each stdio server all of musterd's environment but
	// MUSTERD_TOKEN, under its spec's env. Default false: a server gets its spec's env plus PATH
	// and HOME, and nothing else of musterd's (its API token, cloud
	// credentials, proxies).
	InheritEnv bool
	// HTTPTransport is the base of every remote server's connection: each
	// instance clones it, so that its connections go with the instance. It
	// is where musterd's outbound TLS settings (extra CAs) come in.
	// Default: http.DefaultTransport.
	HTTPTransport *http.Transport
	// CallWait bounds how long a call (CallTool and the other calls of
	// calls.go) waits for a server that is starting, connecting or being
	// restarted to run before it fails naming the server and its state.
	// Default 30s.
	CallWait time.Duration
	// DrainTimeout bounds how long a server being restarted for a changed
	// spec keeps running so that its in-flight calls can finish; calls
	// still running then are cancelled and fail saying so. The drain runs
	// on the supervisor's goroutine for the server, as the restart does,
	// holding no caller. Default 10s. Stop (a delete) and Shutdown do not
	// drain.
	DrainTimeout time.Duration
	// LaneIdle ends a client's own session to a server (a lane, lanes.go)
	// after that long without a call of the client's. Default 5m.
	LaneIdle time.Duration
	// MaxLanesPerServer bounds the lanes open to one server at once; a
	// client's call that would open one more fails saying so. Default 32.
	MaxLanesPerServer int
	// MaxUserConnectionsPerServer bounds the user connections (users.go)
	// open to one server at once; a ConnectAs that would open one more
	// fails saying so. Default 256.
	MaxUserConnectionsPerServer int
	// OnUserChange, if set, is called whenever a user connection opened,
	// relisted its tools (after the server's tools/list_changed), or ended
	// (gone: DisconnectAs, a Stop or spec change of its server, its
	// connection failing, or its server refusing the user's token). Calls
	// come in the order of the changes, in the same queue as OnChange's
	// and like them from a goroutine of the supervisor's that holds no
	// lock: OnUserChange may call back into the Supervisor.
	OnUserChange func(conn UserObserved, gone bool)
	// OnChange, if set, is called whenever a server's observed state
	// changes: starting, started, failed (crash, ping, start), tools
	// changed, failure streak cleared, stopped. Calls come one at a time, in
	// the order of the changes, from a goroutine of the supervisor's that
	// holds no lock: OnChange may call back into the Supervisor. A slow
	// OnChange delays later calls, never the supervisor itself.
	OnChange func(key events.Key, observed Observed)
	// OnChangeSync, if set, is called with the same changes as OnChange,
	// in the same order, but synchronously: under the supervisor's lock,
	// before the call that made the change (Ensure, Stop, a health check)
	// goes on. Whatever it keeps is therefore in step with what Ensure
	// returns and Get answers: a caller that sees a server Running with
	// its tools finds them there too. It must be quick and must not call
	// into the Supervisor.
	OnChangeSync func(key events.Key, observed Observed)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.PingTimeout <= 0 {
		o.PingTimeout = DefaultPingTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.StableAfter <= 0 {
		o.StableAfter = DefaultStableAfter
	}
	if o.StderrTail <= 0 {
		o.StderrTail = DefaultStderrTail
	}
	if o.StartConcurrency <= 0 {
		o.StartConcurrency = DefaultStartConcurrency
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.HTTPTransport == nil {
		o.HTTPTransport = defaultTransport()
	}
	if o.CallWait <= 0 {
		o.CallWait = DefaultCallWait
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
	}
	if o.LaneIdle <= 0 {
		o.LaneIdle = DefaultLaneIdle
	}
	if o.MaxLanesPerServer <= 0 {
		o.MaxLanesPerServer = DefaultMaxLanesPerServer
	}
	if o.MaxUserConnectionsPerServer <= 0 {
		o.MaxUserConnectionsPerServer = DefaultMaxUserConnectionsPerServer
	}
	o.RestartBackoff = o.RestartBackoff.withDefaults()
	return o
}

// Observed is what the supervisor knows of one server. It is a snapshot:
// the supervisor never changes one it has handed out, and its Tools must
// not be changed by the receiver either.
type Observed struct {
	// State is Starting, Running or Failed for stdio, Connecting, Connected,
	// Disconnected or Failed for remote servers; Stopped (stdio) or
	// Disconnected (remote) in the last change of a stopped server.
	State v1alpha1.MCPServerState
	// PID is the process of a running stdio server; 0 otherwise.
	PID int
	// Tools are the names of the server's own tools, sorted, while it runs.
	Tools []string
	// ToolDefs are the server's own tools as it listed them, in the order
	// of Tools, while it runs. Shared: never change one.
	ToolDefs []*mcp.Tool
	// Init is what the server answered to initialize while it runs (its
	// serverInfo, capabilities and instructions, and the protocol version
	// agreed); nil while it does not run. Shared: never change it.
	Init *mcp.InitializeResult
	// ListedAt is when the server's tools were last listed (at its start,
	// or after it said its tools changed); zero while it does not run.
	ListedAt time.Time
	// ToolPrefix is the toolPrefix of the spec that runs (or last tried
	// to), for building exposed tool names.
	ToolPrefix string
	// Family is the family of the spec that runs (or last tried to), if
	// any: its tools are exposed under the family's name.
	Family *v1alpha1.MCPServerFamily
	// RestartCount counts restarts of a stdio server's process that had
	// been running (after a crash, a failed ping, a changed spec), since
	// this supervisor began or the server was last stopped. Failed starts
	// and the reconnects of a remote server are ConsecutiveFailures.
	RestartCount int
	// ConsecutiveFailures counts failures (crashes, failed starts, failed
	// pings, dropped or refused connections) since the server last ran for
	// StableAfter; it drives the backoff.
	ConsecutiveFailures int
	// LastError is why the server is down, redacted (for a crash the exit
	// code and the stderr tail): set while it is Failed or Disconnected,
	// empty while it starts or runs.
	LastError string
	// LastFailure is the last failure, as LastError said it, and
	// LastFailureTime when it happened; both kept after the server
	// recovered.
	LastFailure     string
	LastFailureTime time.Time
	// LastConnected is when the server last answered: initialize, a health
	// ping, or a call (calls.go, or one reported with CallDone). Pings and calls refresh it
	// quietly (no OnChange): Get has it.
	LastConnected time.Time
	// LastAttempt is when its last start began.
	LastAttempt time.Time
	// NextRetryAfter is the earliest next start of a failed server; zero
	// while it runs.
	NextRetryAfter time.Time
	// SpecHash identifies the spec that runs (or last tried to). It is only
	// comparable within one Supervisor.
	SpecHash string
	// Replacing marks, in the observations passed to OnChange and
	// OnChangeSync, those in between while the server's running instance
	// is replaced for a changed spec (or a remote's expired session is
	// renewed): the old instance Stopped (or Disconnected) and the new one
	// Starting (or Connecting). Calls made
	// meanwhile wait for the new instance (calls.go): such an observation
	// is a restart under way, not a server gone. The new instance's
	// Running or Failed, and what Get and Ensure return, never carry it.
	Replacing bool
}

// Running reports whether the server is up: Running or Connected.
func (o Observed) Running() bool {
	return o.State == v1alpha1.MCPServerStateRunning || o.State == v1alpha1.MCPServerStateConnected
}

// RetryLaterError is Ensure's answer for a server in backoff: it failed,
// and may not start again before Until. The caller should come back then.
type RetryLaterError struct {
	Key                 events.Key
	Until               time.Time
	ConsecutiveFailures int
	LastError           string // redacted
}

func (e *RetryLaterError) Error() string {
	lastError, _, _ := strings.Cut(e.LastError, "\n") // not the stderr tail
	lastError = strings.TrimSuffix(lastError, stderrSeparator)
	return fmt.Sprintf("mcp server %s is backing off after %d consecutive failures until %s (last error: %s)",
		e.Key, e.ConsecutiveFailures, e.Until.Format("2006-01-02T15:04:05.000Z07:00"), lastError)
}

// ErrShutdown is returned by Ensure once Shutdown has begun.
var ErrShutdown = errors.New("supervisor is shut down")

// errStopping is the cause that cancels a start when Stop or Shutdown
// wants the server gone.
var errStopping = errors.New("server is being stopped")

// errSuperseded is the cause that cancels a start when Ensure asks for
// another spec: no failure of the server's, and the new spec starts next.
var errSuperseded = errors.New("spec changed during the start")

// Supervisor runs stdio MCP servers and connects to remote ones, watches
// their health and restarts them, within a per-server backoff, when asked
// to by Ensure. It knows nothing of the bus: changes go out through
// Options.OnChange. Its methods are safe for concurrent use; operations on
// one key are serialised, operations on different keys run in parallel.
type Supervisor struct {
	opts    Options
	log     *slog.Logger
	hashKey []byte
	// startProc starts a stdio server's process: startProcess, unless a unit
	// test of the package set a fake before the first Ensure.
	startProc starter

	// startSlots holds a token per start under way: StartConcurrency.
	startSlots chan struct{}
	// workers counts the goroutines that apply Ensure's specs.
	workers sync.WaitGroup
	// userConns counts the goroutines that run user connections (users.go).
	userConns sync.WaitGroup

	mu         sync.Mutex
	entries    map[events.Key]*entry
	shutdown   bool
	pending    []change                         // OnChange calls not yet made, in order
	delivering chan struct{}                    // non-nil while a goroutine makes them; closed when it ends
	stateCh    chan struct{}                    // closed (and cleared) on every observed change: see waitLocked
	lists      registry.Funcs[func(events.Key)] // WatchLists (calls.go)

	updates registry.Funcs[func(events.Key, string)] // WatchResourceUpdates (subscribe.go)
	// clientSessions holds the servers' policies for lanes other than
	// auto (lanes.go).
	clientSessions map[events.Key]ClientSessions
	// protocolPins holds the protocol versions operators pinned the
	// servers to (protocolpin.go).
	protocolPins map[events.Key]string
	// instances numbers the instances made, for Session (subscribe.go).
	instances atomic.Uint64
	// bridges holds the calls bridged between the generations (bridge.go).
	bridges bridgeSet
}

// entry is the supervisor's record of one key.
type entry struct {
	key events.Key
	// op is one slot, held by whoever operates on the server: the worker
	// applying Ensure's spec (for a whole retire and start) or Stop. So no
	// two operations on one server ever overlap.
	op chan struct{}

	// Guarded by Supervisor.mu.
	obs         Observed
	remote      bool // the last spec tried is remote
	inst        *instance
	gate        restartGate
	ran         bool                    // the last instance ran: the next start is a restart
	dropped     bool                    // a remote whose connection dropped: Disconnected until it connects
	renewed     bool                    // an expired session was renewed since the server was last stable
	cancelStart context.CancelCauseFunc // cancels the start in progress
	stopping    int                     // Stop calls under way: no new start
	stopsDone   chan struct{}           // closed (and replaced) when stopping drops to 0
	removed     bool                    // Stop forgot this entry: whoever waited for it must look again
	want        *desired                // the spec Ensure asked for, not yet taken up by the worker
	target      string                  // hash of the spec the worker applies now; "" if none
	busy        bool                    // a worker goroutine runs for this entry
	settled     chan struct{}           // closed when the worker ends; replaced when one begins
	replacing   bool                    // a running instance is being replaced: calls wait for the new one
	// authRequired is the hash of the spec whose server answered 401 at its
	// last start: Auth Required, and no start again for that spec.
	authRequired string
	// spec is the spec Ensure asked for last: what user connections open
	// to (users.go).
	spec *desired
	// users are the user connections open or opening to the server, by
	// owner (users.go).
	users map[string]*userConn
}

// desired is a spec Ensure asked for, with the protocol version pinned
// for it (SetProtocolVersion) in its hash.
type desired struct {
	spec        v1alpha1.MCPServerSpec
	hash        string
	protocolPin string
}

type change struct {
	key events.Key
	obs Observed
	// user, if set, makes this a change of a user connection (users.go)
	// for OnUserChange, and obs is unused.
	user *UserObserved
	gone bool
}

// New returns a Supervisor with opts.
func New(opts Options) *Supervisor {
	opts = opts.withDefaults()
	hashKey := make([]byte, 32)
	_, _ = crand.Read(hashKey) // never fails on supported platforms
	return &Supervisor{
		opts:       opts,
		log:        opts.Logger.With("component", "supervisor"),
		hashKey:    hashKey,
		startProc:  startProcess,
		startSlots: make(chan struct{}, opts.StartConcurrency),
		entries:    make(map[events.Key]*entry),
	}
}

// Ensure makes the server of key run spec, and returns what it observes
// then, without waiting for a start: a start (or the restart for a changed
// spec) runs on the supervisor's own goroutines, and its outcome, Running
// or Connected or Failed, is reported through OnChange like any change.
// Ensure returns in microseconds whatever the servers do, but for waiting
// out a Stop of the same key under way.
//
// It is idempotent and level-triggered: a server already running spec, or
// starting it, is left alone. It starts a server that is not running, or
// failed; it restarts one running another spec (one that differs in type,
// command, args, env, url, headers, timeout or toolPrefix, or the protocol
// version SetProtocolVersion pinned it to). A start under
// way of another spec is cancelled (no failure of the server's) and spec
// starts after it. The observation returned is then Starting or Connecting
// (or still Running the old spec while it is retired).
//
// A remote server that answered 401 Unauthorized at its start is Auth
// Required: no failure, and not started again for the same spec, which
// leaves it so until its spec changes or a Stop forgets it
// (authrequired.go).
//
// A server that failed (crashed, failed to start, failed a ping) is not
// started again before its NextRetryAfter, however often Ensure is called:
// Ensure returns a *RetryLaterError then, saying until when. A changed spec
// is not held back.
func (s *Supervisor) Ensure(ctx context.Context, key events.Key, spec v1alpha1.MCPServerSpec) (Observed, error) {
	key = key.Canonical()
	hash := s.specHash(spec)
	s.mu.Lock()
	defer s.mu.Unlock()
	pin := s.protocolPins[key]
	hash = s.pinnedHash(hash, pin)
	var e *entry
	for {
		if s.shutdown {
			return Observed{}, ErrShutdown
		}
		e = s.entries[key]
		if e == nil || e.stopping == 0 {
			break
		}
		// A Stop under way ends with the entry forgotten; this spec goes to
		// the entry after it.
		wait := e.stopsDone
		s.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			s.mu.Lock()
			return Observed{}, fmt.Errorf("mcp server %s: waiting for its stop: %w", key, context.Cause(ctx))
		}
		s.mu.Lock()
	}
	if e == nil {
		e = &entry{key: key, op: make(chan struct{}, 1), stopsDone: make(chan struct{}), settled: closedChan()}
		s.entries[key] = e
	}

	running := e.inst != nil && e.obs.Running()
	inFlight := e.busy && e.target != ""
	switch {
	case e.want != nil && e.want.hash == hash:
		return e.obs, nil // asked for already
	case e.want == nil && inFlight && e.target == hash:
		return e.obs, nil // under way
	case e.want == nil && !inFlight && running && e.inst.hash == hash:
		return e.obs, nil // runs
	case e.want == nil && !inFlight && !running && e.authRequired == hash:
		return e.obs, nil // waits for a credential, not for a retry
	}
	if !running {
		if until, blocked := e.gate.blocked(time.Now(), hash); blocked {
			return e.obs, &RetryLaterError{Key: key, Until: until, ConsecutiveFailures: e.gate.failures, LastError: e.obs.LastError}
		}
	}
	e.want = &desired{spec: spec, hash: hash, protocolPin: pin}
	if e.spec != nil && e.spec.hash != hash {
		s.endUsersLocked(e, "its server's spec changed") // users.go
	}
	e.spec = e.want
	if inFlight && e.target != hash && e.cancelStart != nil {
		e.cancelStart(errSuperseded)
	}
	if !running {
		// Starting from the call on: the status says so at once.
		e.remote = spec.Type.IsRemote()
		e.obs.State = startingState(e.remote)
		e.obs.PID = 0
		e.obs.Tools, e.obs.ToolDefs, e.obs.Init, e.obs.ListedAt = nil, nil, nil, time.Time{}
		e.obs.LastError = ""
		e.obs.ToolPrefix = spec.ToolPrefix
		e.obs.Family = spec.Family.DeepCopy()
		e.obs.NextRetryAfter = time.Time{}
		e.obs.SpecHash = hash
		s.changedLocked(e)
	}
	if !e.busy {
		e.busy = true
		e.settled = make(chan struct{})
		s.workers.Add(1)
		go s.work(e)
	}
	return e.obs, nil
}

// Wait returns once no operation Ensure asked for on key is under way or
// queued, with what the supervisor observes then: the outcome of the last
// start (Running, Connected, Failed), or the last state if none was
// needed. It returns false if the supervisor knows of no such server.
// Nothing in the pipeline waits for a start; Wait is for callers that run
// one server at a time (tests, tools).
func (s *Supervisor) Wait(ctx context.Context, key events.Key) (Observed, bool, error) {
	key = key.Canonical()
	for {
		s.mu.Lock()
		e := s.entries[key]
		if e == nil || e.obs.State == "" {
			s.mu.Unlock()
			return Observed{}, false, nil
		}
		if !e.busy {
			obs := e.obs
			s.mu.Unlock()
			return obs, true, nil
		}
		settled := e.settled
		s.mu.Unlock()
		select {
		case <-settled:
		case <-ctx.Done():
			return Observed{}, false, fmt.Errorf("mcp server %s: waiting for its start: %w", key, context.Cause(ctx))
		}
	}
}

// Stop stops the server of key and forgets it: a start in progress or
// asked for is cancelled, its MCP session is closed, its process group gets
// SIGTERM and, after StopGrace, SIGKILL. It returns once the process is
// reaped. If ctx ends first, the group is killed at once and Stop still
// waits for it. Stopping an unknown key does nothing.
func (s *Supervisor) Stop(ctx context.Context, key events.Key) error {
	key = key.Canonical()
	s.mu.Lock()
	e := s.entries[key]
	if e == nil {
		s.mu.Unlock()
		return nil
	}
	e.stopping++
	e.want = nil
	if e.cancelStart != nil {
		e.cancelStart(errStopping)
	}
	users := s.endUsersLocked(e, "its server was stopped") // users.go
	s.mu.Unlock()
	defer awaitUsers(ctx, users)
	defer func() {
		s.mu.Lock()
		e.stopping--
		if e.stopping == 0 {
			close(e.stopsDone)
			e.stopsDone = make(chan struct{})
		}
		s.mu.Unlock()
	}()

	locked, err := s.lock(ctx, key)
	if err != nil || locked == nil {
		return err
	}
	defer locked.unlock()
	s.mu.Lock()
	current := locked.inst
	s.mu.Unlock()
	var stopErr error
	if current != nil {
		stopErr = s.retire(ctx, current)
	}

	s.mu.Lock()
	locked.inst = nil
	locked.removed = true
	delete(s.entries, key)
	delete(s.clientSessions, key)
	delete(s.protocolPins, key)
	known := locked.obs.State != ""
	if known {
		locked.obs = Observed{
			State:         stoppedState(locked.remote),
			ToolPrefix:    locked.obs.ToolPrefix,
			Family:        locked.obs.Family,
			RestartCount:  locked.obs.RestartCount,
			LastConnected: locked.obs.LastConnected,
			LastAttempt:   locked.obs.LastAttempt,
			SpecHash:      locked.obs.SpecHash,
		}
		s.changedLocked(locked)
	}
	s.mu.Unlock()
	if known {
		s.log.Info("mcp server stopped", "key", key.String())
	}
	return stopErr
}

// Get returns what the supervisor observes of key's server, and false if it
// knows of none.
func (s *Supervisor) Get(key events.Key) (Observed, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key.Canonical()]
	if e == nil || e.obs.State == "" {
		return Observed{}, false
	}
	return e.obs, true
}

// Keys returns the keys of every server the supervisor knows of, running or
// not, sorted.
func (s *Supervisor) Keys() []events.Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]events.Key, 0, len(s.entries))
	for key, e := range s.entries {
		if e.obs.State != "" {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, events.CompareKeys)
	return keys
}

// Shutdown stops every server, in parallel, cancels every start, and
// refuses later Ensure calls. It returns once every process is reaped,
// every goroutine that started servers has ended and every OnChange call is
// made. If ctx ends first, the remaining process groups are killed at once;
// Shutdown still waits for them to be reaped, so no process outlives it.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutdown = true
	keys := make([]events.Key, 0, len(s.entries))
	for key := range s.entries {
		keys = append(keys, key)
	}
	s.mu.Unlock()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, key := range keys {
		wg.Go(func() {
			if err := s.Stop(context.WithoutCancel(ctx), key); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	// Stop gets no deadline of ctx's: it must not give up on a key it has
	// yet to lock. Past ctx, every process group is killed instead. The
	// workers end once they see the shutdown, their starts cancelled.
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		s.workers.Wait()
		s.userConns.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		s.killAll()
		<-stopped
		errs = append(errs, fmt.Errorf("shutdown: servers killed: %w", context.Cause(ctx)))
	}

	s.mu.Lock()
	delivering := s.delivering
	s.mu.Unlock()
	if delivering != nil {
		select {
		case <-delivering:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("shutdown: OnChange calls still pending: %w", context.Cause(ctx)))
		}
	}
	return errors.Join(errs...)
}

// killAll SIGKILLs every process group and cancels every start, for a
// shutdown out of time.
func (s *Supervisor) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entries {
		if e.cancelStart != nil {
			e.cancelStart(errStopping)
		}
		if e.inst != nil {
			e.inst.kill()
			e.inst.lanes.killLocked() // lanes.go
		}
		for _, uc := range e.users {
			uc.inst.kill() // users.go
		}
	}
}

// lock takes the op slot of key's entry, for Stop. It returns nil for an
// unknown key, or one that another Stop forgot while this one waited.
func (s *Supervisor) lock(ctx context.Context, key events.Key) (*entry, error) {
	for {
		s.mu.Lock()
		e := s.entries[key]
		s.mu.Unlock()
		if e == nil {
			return nil, nil
		}
		select {
		case e.op <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("mcp server %s: waiting for another operation on it: %w", key, context.Cause(ctx))
		}
		s.mu.Lock()
		removed := e.removed
		s.mu.Unlock()
		if !removed {
			return e, nil
		}
		e.unlock() // Stop forgot it while we waited: look again
	}
}

func (e *entry) unlock() { <-e.op }

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// retire stops inst and waits until its process is reaped; if ctx ends
// first it kills it and still waits.
func (s *Supervisor) retire(ctx context.Context, inst *instance) error {
	inst.requestStop()
	select {
	case <-inst.done:
		return nil
	case <-ctx.Done():
		inst.kill()
		<-inst.done
		return fmt.Errorf("mcp server %s: killed, out of time to stop gracefully: %w", inst.key, context.Cause(ctx))
	}
}

// fail records a failure of a running instance, unless it was replaced.
func (s *Supervisor) fail(e *entry, inst *instance, msg string, state v1alpha1.MCPServerState) {
	s.mu.Lock()
	if e.inst != inst {
		s.mu.Unlock()
		return
	}
	obs := s.failLocked(e, inst.hash, msg, state)
	s.mu.Unlock()
	s.logFailure(e.key, obs)
}

func (s *Supervisor) failLocked(e *entry, hash, msg string, state v1alpha1.MCPServerState) Observed {
	now := time.Now()
	e.gate.fail(now, hash, s.opts.RestartBackoff, rand.Float64())
	e.dropped = state == v1alpha1.MCPServerStateDisconnected
	e.obs.State = state
	e.obs.PID = 0
	e.obs.Tools, e.obs.ToolDefs, e.obs.ListedAt = nil, nil, time.Time{}
	e.obs.LastError = msg
	e.obs.LastFailure = msg
	e.obs.LastFailureTime = now
	e.obs.ConsecutiveFailures = e.gate.failures
	e.obs.NextRetryAfter = e.gate.retryAfter
	s.changedLocked(e)
	return e.obs
}

func (s *Supervisor) logFailure(key events.Key, obs Observed) {
	s.log.Warn("mcp server failed", "key", key.String(), "state", obs.State,
		"consecutiveFailures", obs.ConsecutiveFailures, "nextRetryAfter", obs.NextRetryAfter, "error", obs.LastError)
}

// markStable clears the failure streak of a server that has run for
// StableAfter.
func (s *Supervisor) markStable(e *entry, inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.inst != inst || !e.obs.Running() {
		return
	}
	e.gate = restartGate{}
	e.renewed = false
	if e.obs.ConsecutiveFailures != 0 {
		e.obs.ConsecutiveFailures = 0
		s.changedLocked(e)
	}
}

// touch records that a running instance answered, quietly.
func (s *Supervisor) touch(e *entry, inst *instance) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.inst == inst && e.obs.Running() {
		e.obs.LastConnected = time.Now()
	}
}

// CallDone tells the supervisor how a call made outside calls.go (whose
// calls report themselves) on key's server ended. nil: the server answered, so LastConnected is now. An
// error of the transport (not a tool's own error result): the server may
// be gone, so it is pinged at once rather than at its next PingInterval,
// and a dead one is noticed within PingTimeout. It never blocks.
func (s *Supervisor) CallDone(key events.Key, err error) {
	s.mu.Lock()
	e := s.entries[key.Canonical()]
	var inst *instance
	if e != nil && e.obs.Running() {
		inst = e.inst
	}
	if inst != nil && err == nil {
		e.obs.LastConnected = time.Now()
	}
	s.mu.Unlock()
	if inst != nil && err != nil {
		s.suspectDead(inst, err)
	}
}

// renew replaces a remote instance whose session the server no longer
// knows (it restarted, and answers the old session ID with 404) with a new
// session of the same spec: Connecting, then Connected, with no failure
// and no backoff. Once per stable run: a server that keeps losing its
// sessions fails as a dropped connection does. It reports whether it did.
func (s *Supervisor) renew(e *entry, inst *instance) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.inst != inst || !e.obs.Running() || s.shutdown || e.stopping > 0 || e.renewed || e.want != nil {
		return false
	}
	e.renewed = true
	e.replacing = true // its tools stay offered, and calls wait for the new session
	e.obs.State = v1alpha1.MCPServerStateConnecting
	e.obs.Tools, e.obs.ToolDefs, e.obs.ListedAt = nil, nil, time.Time{}
	s.changedLocked(e)
	e.want = &desired{spec: inst.spec, hash: inst.hash, protocolPin: inst.protocolPin}
	if !e.busy {
		e.busy = true
		e.settled = make(chan struct{})
		s.workers.Add(1)
		go s.work(e)
	}
	return true
}

// setTools records a running instance's new tool list. A listing that
// changes nothing still moves ListedAt, and is reported, so that readers
// of the catalogue's age see it confirmed.
func (s *Supervisor) setTools(e *entry, inst *instance, tools []*mcp.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.inst != inst || !e.obs.Running() {
		return
	}
	if !sameTools(e.obs.ToolDefs, tools) {
		e.obs.Tools, e.obs.ToolDefs = toolNames(tools), tools
	}
	e.obs.ListedAt = time.Now()
	s.changedLocked(e)
}

// changedLocked calls OnChangeSync and queues an OnChange call with e's
// current state. The queue is drained by one goroutine at a time, which
// exits when it is empty, so calls keep the order of the changes and no
// lock is held while they run.
func (s *Supervisor) changedLocked(e *entry) {
	s.broadcastLocked() // wakes calls waiting for a state (calls.go)
	obs := e.obs
	obs.Replacing = e.replacing && !obs.Running() && obs.State != v1alpha1.MCPServerStateFailed
	if s.opts.OnChangeSync != nil {
		s.opts.OnChangeSync(e.key, obs)
	}
	if s.opts.OnChange == nil {
		return
	}
	s.queueLocked(change{key: e.key, obs: obs})
}

// queueLocked queues c for delivery by deliver.
func (s *Supervisor) queueLocked(c change) {
	s.pending = append(s.pending, c)
	if s.delivering == nil {
		s.delivering = make(chan struct{})
		go s.deliver(s.delivering)
	}
}

func (s *Supervisor) deliver(done chan struct{}) {
	for {
		s.mu.Lock()
		batch := s.pending
		s.pending = nil
		if len(batch) == 0 {
			s.delivering = nil
			s.mu.Unlock()
			close(done)
			return
		}
		s.mu.Unlock()
		for _, c := range batch {
			if c.user != nil {
				s.opts.OnUserChange(*c.user, c.gone)
				continue
			}
			s.opts.OnChange(c.key, c.obs)
		}
	}
}

func startingState(remote bool) v1alpha1.MCPServerState {
	if remote {
		return v1alpha1.MCPServerStateConnecting
	}
	return v1alpha1.MCPServerStateStarting
}

func runningState(remote bool) v1alpha1.MCPServerState {
	if remote {
		return v1alpha1.MCPServerStateConnected
	}
	return v1alpha1.MCPServerStateRunning
}

func stoppedState(remote bool) v1alpha1.MCPServerState {
	if remote {
		return v1alpha1.MCPServerStateDisconnected
	}
	return v1alpha1.MCPServerStateStopped
}

// ProtocolVersion is the MCP protocol version the server agreed to while
// it runs (2026-07-28, or an older one it fell back to), "" while it does
// not.
func (o Observed) ProtocolVersion() string {
	if o.Init == nil {
		return ""
	}
	return o.Init.ProtocolVersion
}
