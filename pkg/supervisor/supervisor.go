package supervisor

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	DefaultCallWait     = 30 * time.Second
	DefaultDrainTimeout = 10 * time.Second
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
	// SIGKILL. Default 5s.
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
	// InheritEnv gives each stdio server all of musterd's environment but
	// MUSTERD_TOKEN, under its spec's env. Default false: a server gets its spec's env plus PATH
	// and HOME, and nothing else of musterd's (its API token, cloud
	// credentials, proxies).
	InheritEnv bool
	// CallWait bounds how long a call (CallTool and the other calls of
	// calls.go) waits for a server that is starting, connecting or being
	// restarted to run before it fails naming the server and its state.
	// Default 30s.
	CallWait time.Duration
	// DrainTimeout bounds how long a server being restarted for a changed
	// spec keeps running so that its in-flight calls can finish; calls
	// still running then are cancelled and fail saying so. A drain also
	// takes at most half of what is left of Ensure's deadline, so that the
	// start keeps time. Default 10s: a third of the coordinator's default
	// 30s reconcile timeout. Stop (a delete) and Shutdown do not drain.
	DrainTimeout time.Duration
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
	if o.CallWait <= 0 {
		o.CallWait = DefaultCallWait
	}
	if o.DrainTimeout <= 0 {
		o.DrainTimeout = DefaultDrainTimeout
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
	// ListedAt is when the server's tools were last listed (at its start,
	// or after it said its tools changed); zero while it does not run.
	ListedAt time.Time
	// ToolPrefix is the toolPrefix of the spec that runs (or last tried
	// to), for building exposed tool names.
	ToolPrefix string
	// Family is the family of the spec that runs (or last tried to), if
	// any: its tools are exposed under the family's name.
	Family *v1alpha1.MCPServerFamily
	// RestartCount counts starts of this server after its first, since this
	// supervisor began or since it was last stopped.
	RestartCount int
	// ConsecutiveFailures counts failures since the server last ran for
	// StableAfter; it drives the backoff.
	ConsecutiveFailures int
	// LastError is the last failure, redacted: for a crash the exit code
	// and the stderr tail. Cleared with the failure streak.
	LastError string
	// LastConnected is when the server last finished initialize.
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
	// OnChangeSync, those in between while Ensure replaces the server's
	// running instance for a changed spec: the old instance Stopped (or
	// Disconnected) and the new one Starting (or Connecting). Calls made
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

// Supervisor runs stdio MCP servers and connects to remote ones, watches
// their health and restarts them, within a per-server backoff, when asked
// to by Ensure. It knows nothing of the bus: changes go out through
// Options.OnChange. Its methods are safe for concurrent use; calls for one
// key are serialised, calls for different keys run in parallel.
type Supervisor struct {
	opts    Options
	log     *slog.Logger
	hashKey []byte

	mu         sync.Mutex
	entries    map[events.Key]*entry
	shutdown   bool
	pending    []change      // OnChange calls not yet made, in order
	delivering chan struct{} // non-nil while a goroutine makes them; closed when it ends
	stateCh    chan struct{} // closed (and cleared) on every observed change: see waitLocked
	lists      listWatchers  // WatchLists (calls.go)

	updates updateWatchers // WatchResourceUpdates (subscribe.go)
}

// entry is the supervisor's record of one key.
type entry struct {
	key events.Key
	op  chan struct{} // one slot: held by the Ensure or Stop working on this key

	// Guarded by Supervisor.mu.
	obs         Observed
	remote      bool // the last spec tried is remote
	inst        *instance
	gate        restartGate
	attempted   bool                    // a start was tried: the next one is a restart
	cancelStart context.CancelCauseFunc // cancels the start in progress
	stopping    int                     // Stop calls under way: no new start
	removed     bool                    // Stop forgot this entry: whoever waited for it must look again
	replacing   bool                    // Ensure is replacing a running instance: calls wait for the new one
}

type change struct {
	key events.Key
	obs Observed
}

// New returns a Supervisor with opts.
func New(opts Options) *Supervisor {
	opts = opts.withDefaults()
	hashKey := make([]byte, 32)
	_, _ = crand.Read(hashKey) // never fails on supported platforms
	return &Supervisor{
		opts:    opts,
		log:     opts.Logger.With("component", "supervisor"),
		hashKey: hashKey,
		entries: make(map[events.Key]*entry),
	}
}

// Ensure makes the server of key run spec, and returns what it observes
// then. It is idempotent: a server already running spec is left alone. It
// starts a server that is not running, or failed; it restarts one running
// another spec (one that differs in type, command, args, env, url,
// headers, timeout or toolPrefix). A start waits for initialize and
// tools/list, within the spec's timeout.
//
// A server that failed (crashed, failed to start, failed a ping) is not
// started again before its NextRetryAfter, however often Ensure is called:
// Ensure returns a *RetryLaterError then, saying until when. A changed spec
// is not held back.
//
// A start that fails returns an error and leaves the server Failed; so
// does one that ctx cancels, since its process had to be killed all the
// same. Only a start that Stop cancels is no failure.
func (s *Supervisor) Ensure(ctx context.Context, key events.Key, spec v1alpha1.MCPServerSpec) (Observed, error) {
	key = key.Canonical()
	hash := specHash(s.hashKey, spec)
	e, err := s.lock(ctx, key, true)
	if err != nil {
		return Observed{}, err
	}
	defer e.unlock()
	defer s.replaced(e) // calls waiting for a replacement look again (calls.go)

	s.mu.Lock()
	current := e.inst
	if current != nil && e.obs.Running() && current.hash == hash {
		obs := e.obs
		s.mu.Unlock()
		return obs, nil
	}
	if current == nil || !e.obs.Running() {
		if until, blocked := e.gate.blocked(time.Now(), hash); blocked {
			obs := e.obs
			s.mu.Unlock()
			return obs, &RetryLaterError{Key: key, Until: until, ConsecutiveFailures: e.gate.failures, LastError: obs.LastError}
		}
	}
	s.mu.Unlock()

	if current != nil {
		s.drain(ctx, e, current)      // its calls finish first, within DrainTimeout (calls.go)
		err := s.retire(ctx, current) // gone, even when err says it was killed
		s.mu.Lock()
		e.inst = nil
		if e.obs.Running() {
			e.obs.State = stoppedState(e.remote)
			e.obs.PID = 0
			e.obs.Tools, e.obs.ToolDefs, e.obs.ListedAt = nil, nil, time.Time{}
			s.changedLocked(e)
		}
		obs := e.obs
		s.mu.Unlock()
		if err != nil {
			return obs, err
		}
	}
	return s.start(ctx, e, spec, hash)
}

// Stop stops the server of key and forgets it: its MCP session is closed,
// its process group gets SIGTERM and, after StopGrace, SIGKILL. It returns
// once the process is reaped. A start in progress is cancelled. If ctx ends
// first, the group is killed at once and Stop still waits for it. Stopping
// an unknown key does nothing.
func (s *Supervisor) Stop(ctx context.Context, key events.Key) error {
	key = key.Canonical()
	s.mu.Lock()
	e := s.entries[key]
	if e == nil {
		s.mu.Unlock()
		return nil
	}
	e.stopping++
	if e.cancelStart != nil {
		e.cancelStart(errStopping)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		e.stopping--
		s.mu.Unlock()
	}()

	locked, err := s.lock(ctx, key, false)
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
	slices.SortFunc(keys, func(a, b events.Key) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// Shutdown stops every server, in parallel, and refuses later Ensure calls.
// It returns once every process is reaped and every OnChange call made. If
// ctx ends first, the remaining process groups are killed at once; Shutdown
// still waits for them to be reaped, so no process outlives it.
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
	// yet to lock. Past ctx, every process group is killed instead.
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
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
		}
	}
}

// lock takes the op slot of key's entry, creating the entry if create is
// set (and the supervisor not shut down). Without create it returns nil for
// an unknown key.
func (s *Supervisor) lock(ctx context.Context, key events.Key, create bool) (*entry, error) {
	for {
		s.mu.Lock()
		if create && s.shutdown {
			s.mu.Unlock()
			return nil, ErrShutdown
		}
		e := s.entries[key]
		if e == nil {
			if !create {
				s.mu.Unlock()
				return nil, nil
			}
			e = &entry{key: key, op: make(chan struct{}, 1)}
			s.entries[key] = e
		}
		s.mu.Unlock()

		select {
		case e.op <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("mcp server %s: waiting for another call on it: %w", key, context.Cause(ctx))
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

// start starts spec for e, whose op slot the caller holds.
func (s *Supervisor) start(ctx context.Context, e *entry, spec v1alpha1.MCPServerSpec, hash string) (Observed, error) {
	inst := s.newInstance(e.key, spec, hash)
	timeout := specTimeout(spec)
	expire := time.AfterFunc(timeout, func() { inst.cancel(&startTimeoutError{timeout: timeout}) })
	unlink := context.AfterFunc(ctx, func() { inst.cancel(context.Cause(ctx)) })

	s.mu.Lock()
	if e.stopping > 0 || s.shutdown {
		s.mu.Unlock()
		expire.Stop()
		unlink()
		inst.cancel(errStopping)
		obs := e.obs
		return obs, fmt.Errorf("mcp server %s: not started: %w", e.key, errStopping)
	}
	e.cancelStart = inst.cancel
	if e.attempted {
		e.obs.RestartCount++
	}
	e.attempted = true
	e.remote = spec.Type.IsRemote()
	e.obs.State = startingState(e.remote)
	e.obs.PID = 0
	e.obs.Tools = nil
	e.obs.ToolDefs = nil
	e.obs.ListedAt = time.Time{}
	e.obs.ToolPrefix = spec.ToolPrefix
	e.obs.Family = spec.Family.DeepCopy()
	e.obs.LastAttempt = time.Now()
	e.obs.NextRetryAfter = time.Time{}
	e.obs.SpecHash = hash
	s.changedLocked(e)
	s.mu.Unlock()

	launchErr := inst.launch()
	expire.Stop()
	unlink()
	if launchErr == nil && inst.ctx.Err() != nil {
		// Cancelled between a successful launch and here.
		inst.teardown(0)
		launchErr = context.Cause(inst.ctx)
	}

	s.mu.Lock()
	e.cancelStart = nil
	if launchErr == nil {
		now := time.Now()
		e.inst = inst
		e.obs.State = runningState(e.remote)
		e.obs.PID = inst.pid()
		e.obs.Tools, e.obs.ToolDefs = toolNames(inst.tools), inst.tools
		e.obs.ListedAt = now
		e.obs.LastConnected = now
		s.changedLocked(e)
		obs := e.obs
		s.mu.Unlock()
		s.log.Info("mcp server started", "key", e.key.String(), "type", spec.Type, "pid", obs.PID,
			"tools", len(obs.Tools), "restartCount", obs.RestartCount)
		go s.monitor(e, inst)
		return obs, nil
	}

	cause := context.Cause(inst.ctx)
	if errors.Is(cause, errStopping) {
		// Stop wants the server gone: no failure of the server's.
		e.obs.State = stoppedState(e.remote)
		e.obs.PID = 0
		s.changedLocked(e)
		obs := e.obs
		s.mu.Unlock()
		return obs, fmt.Errorf("mcp server %s: start cancelled: %w", e.key, cause)
	}
	// Anything else is a failed start, a caller that gave up included: a
	// process was started and had to be killed, and a caller with a short
	// deadline must not restart a hanging server faster than the backoff.
	msg := launchErr.Error() // made by launch, scrubbed
	obs := s.failLocked(e, hash, msg, v1alpha1.MCPServerStateFailed)
	s.mu.Unlock()
	s.logFailure(e.key, obs)
	if cause != nil && !errors.Is(cause, errReleased) && !errors.As(cause, new(*startTimeoutError)) {
		return obs, fmt.Errorf("mcp server %s: start cancelled: %w", e.key, cause)
	}
	return obs, fmt.Errorf("mcp server %s: %s", e.key, msg)
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
	e.gate.fail(time.Now(), hash, s.opts.RestartBackoff, rand.Float64())
	e.obs.State = state
	e.obs.PID = 0
	e.obs.Tools, e.obs.ToolDefs, e.obs.ListedAt = nil, nil, time.Time{}
	e.obs.LastError = msg
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
	if e.inst != inst || !e.obs.Running() || (e.gate.failures == 0 && e.obs.LastError == "") {
		return
	}
	e.gate = restartGate{}
	e.obs.ConsecutiveFailures = 0
	e.obs.LastError = ""
	s.changedLocked(e)
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
	s.pending = append(s.pending, change{key: e.key, obs: obs})
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
