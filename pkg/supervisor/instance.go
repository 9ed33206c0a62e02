package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// exitSettle bounds how long a stdio server whose MCP connection broke
// gets to exit by itself, so that its exit code and stderr, rather than a
// broken pipe, explain the failure.
const exitSettle = time.Second

// clientInfo is how musterd introduces itself in initialize.
var clientInfo = &mcp.Implementation{Name: "musterd", Version: "dev"}

// Protocol generations musterd speaks to its servers. A stdio or
// streamable-http server's shared session is asked for the newest,
// 2026-07-28: the go-sdk tries server/discover and, when the server does
// not answer it in kind (an older server answers method not found, a
// stateful HTTP server refuses a request without a session), falls back to
// initialize at 2025-11-25 by itself, from which an older server
// negotiates down as usual. An SSE server is of the older generation by
// its transport, and is asked for 2025-11-25 at once.
//
// A lane (lanes.go) speaks its client's generation: it exists to carry the
// server's requests to that one client, and a server speaks to a client
// of 2025-11-25 in classic requests (a go-sdk server of 2026-07-28 turns
// its own input requests into them), which a 2026-07-28 session would not
// carry at all. A client says it is of the newer generation by a
// ProtocolVersion method on its peer.Peer; every other is of the older.
const (
	protocolNewest = "2026-07-28"
	protocolLegacy = "2025-11-25"
)

// protocolWanted is the version musterd asks inst's server for, no newer
// than the operator's pin (protocolpin.go).
func (inst *instance) protocolWanted() string {
	if inst.spec.Type == v1alpha1.MCPServerTypeSSE {
		return inst.pinned(protocolLegacy)
	}
	if inst.lane != nil {
		if v, ok := inst.lane.peer.(interface{ ProtocolVersion() string }); !ok || v.ProtocolVersion() < protocolNewest {
			return inst.pinned(protocolLegacy)
		}
	}
	return inst.pinned(protocolNewest)
}

// errReleased is the cause that ends an instance's context in teardown,
// unless something cancelled it before.
var errReleased = errors.New("instance released")

// startTimeoutError is the cause that cancels a start that outlived the
// spec's timeout.
type startTimeoutError struct{ timeout time.Duration }

func (e *startTimeoutError) Error() string { return fmt.Sprintf("start timed out after %s", e.timeout) }

// instance is one run of one spec: a process and its session (stdio) or a
// session (remote). Its monitor goroutine owns it once it has started: only
// the monitor tears it down, others ask with requestStop (or, out of
// patience, kill) and wait for done.
type instance struct {
	key    events.Key
	seq    uint64 // unique in its Supervisor: one instance, one session (Session)
	spec   v1alpha1.MCPServerSpec
	hash   string
	remote bool
	scrub  scrubber
	log    *slog.Logger

	// protocolPin is the newest protocol version it may ask its server
	// for; "" for no pin (protocolpin.go). Part of hash.
	protocolPin string

	// ctx lives as long as the instance: the SSE transport ties its stream
	// to the context it connects with. During the start it carries the
	// spec's timeout, the caller's cancellation and Stop's.
	ctx    context.Context
	cancel context.CancelCauseFunc

	session       *mcp.ClientSession
	sessionEnded  chan struct{}   // closed when the session is over, after a start that got one
	tools         []*mcp.Tool     // as listed at the start, sorted by name
	proc          *process        // stdio
	start         starter         // starts proc
	baseTransport *http.Transport // Options.HTTPTransport, which httpTransport clones
	httpTransport *http.Transport
	challenges    *challengeRecorder // a remote's: its first 401 answer (authrequired.go)
	stderrTail    int
	inheritEnv    bool

	sessionErr   error         // why the session ended; set before sessionEnded is closed
	client       *mcp.Client   // the session's client: a lane notifies roots changes through it
	lane         *lane         // set on a lane's instance: the client it serves (lanes.go)
	user         *userConn     // set on a user connection's instance: the user it serves (users.go)
	lanes        laneSet       // on a shared instance: its lanes (lanes.go)
	listeners    listeners     // on a shared instance: the clients its log messages go to (clientrequests.go)
	acks         acks          // subscriptions waiting for the server's yes, on a 2026-07-28 session (subscribe.go)
	calls        *callState    // in-flight calls, drain and progress routing (calls.go)
	toolsChanged chan struct{} // the server said its tools changed
	stopOnce     sync.Once
	stopReq      chan struct{} // closed to ask the monitor to tear down
	done         chan struct{} // closed by the monitor once everything is released
}

func (s *Supervisor) newInstance(key events.Key, spec v1alpha1.MCPServerSpec, hash string) *instance {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &instance{
		key:           key,
		seq:           s.instances.Add(1),
		spec:          spec,
		hash:          hash,
		remote:        spec.Type.IsRemote(),
		scrub:         newScrubber(spec),
		log:           s.log,
		ctx:           ctx,
		cancel:        cancel,
		sessionEnded:  make(chan struct{}),
		start:         s.startProc,
		stderrTail:    s.opts.StderrTail,
		inheritEnv:    s.opts.InheritEnv,
		baseTransport: s.opts.HTTPTransport,
		calls:         s.newCallState(key),
		toolsChanged:  make(chan struct{}, 1),
		stopReq:       make(chan struct{}),
		done:          make(chan struct{}),
	}
}

func (inst *instance) pid() int {
	if inst.proc == nil {
		return 0
	}
	return inst.proc.pid
}

// failure makes the error of a failed start from msg, scrubbed.
func (inst *instance) failure(msg string) error { return errors.New(inst.scrub.clean(msg)) }

func (inst *instance) timedOut() bool {
	var timedOut *startTimeoutError
	return errors.As(context.Cause(inst.ctx), &timedOut)
}

// timeout is the start timeout that cancelled the start, if one did.
func (inst *instance) timeout() time.Duration {
	var timedOut *startTimeoutError
	if errors.As(context.Cause(inst.ctx), &timedOut) {
		return timedOut.timeout
	}
	return 0
}

// launch starts the server, initializes the session and lists the tools.
// When it fails it has released everything, and its error is scrubbed.
func (inst *instance) launch() error {
	switch inst.spec.Type {
	case v1alpha1.MCPServerTypeStdio:
		return inst.launchStdio()
	case v1alpha1.MCPServerTypeStreamableHTTP, v1alpha1.MCPServerTypeSSE:
		return inst.launchRemote()
	default:
		inst.cancel(errReleased)
		return inst.failure(fmt.Sprintf("unsupported server type %q", inst.spec.Type))
	}
}

func (inst *instance) launchStdio() error {
	p, err := inst.start(inst.spec, inst.stderrTail, inst.inheritEnv)
	if err != nil {
		return inst.failure(fmt.Sprintf("could not start %s: %v", inst.spec.Command, err))
	}
	inst.proc = p
	err = inst.connect(&mcp.IOTransport{Reader: p.stdout, Writer: p.stdin})
	if err == nil {
		return nil
	}
	cancelled := inst.ctx.Err() != nil
	exited := p.hasExited()
	if !exited && !cancelled {
		exited = p.awaitExit(exitSettle)
	}
	inst.teardown(0)
	var msg string
	switch {
	case exited:
		msg = p.exit + " before it finished starting"
	case inst.timedOut():
		msg = fmt.Sprintf("did not answer initialize and tools/list within %s", inst.timeout())
	case cancelled:
		msg = "start cancelled: " + context.Cause(inst.ctx).Error()
	default:
		msg = "initialize failed: " + err.Error()
	}
	return inst.failure(withStderr(msg, p.stderr.Tail()))
}

func (inst *instance) launchRemote() error {
	// A transport of its own, so that its connections go with the instance.
	inst.httpTransport = inst.baseTransport.Clone()
	header := make(http.Header, len(inst.spec.Headers))
	for name, value := range inst.spec.Headers {
		header.Set(name, value)
	}
	inst.challenges = &challengeRecorder{}
	ht := &headerTransport{base: inst.httpTransport, header: header, challenges: inst.challenges, origin: origin(inst.spec.URL)}
	if inst.user != nil {
		ht.bearer = inst.user.creds // the user's token on each request (userbearer.go)
	}
	client := &http.Client{Transport: ht, CheckRedirect: sameOriginRedirects}
	// No reconnects of the SDK's own: a dropped stream ends the session at
	// once, so that the server shows Disconnected when it goes, not after
	// the SDK's retries (seconds to tens of seconds), and the supervisor
	// reconnects on its backoff, in states the status can show.
	var transport mcp.Transport = &mcp.StreamableClientTransport{Endpoint: inst.spec.URL, HTTPClient: client, MaxRetries: -1}
	if inst.spec.Type == v1alpha1.MCPServerTypeSSE {
		transport = &mcp.SSEClientTransport{Endpoint: inst.spec.URL, HTTPClient: client}
	}
	err := inst.connect(transport)
	if err == nil {
		return nil
	}
	cancelled := inst.ctx.Err() != nil
	inst.teardown(0)
	if authErr := inst.authRequired(); authErr != nil {
		return authErr
	}
	switch {
	case inst.timedOut():
		return inst.failure(fmt.Sprintf("%s did not connect, initialize and list tools within %s", inst.spec.URL, inst.timeout()))
	case cancelled:
		return inst.failure(fmt.Sprintf("connect to %s: start cancelled: %v", inst.spec.URL, context.Cause(inst.ctx)))
	default:
		return inst.failure(fmt.Sprintf("connect to %s: %v", inst.spec.URL, err))
	}
}

// connect initializes a session over transport and lists its tools.
func (inst *instance) connect(transport mcp.Transport) error {
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case inst.toolsChanged <- struct{}{}:
			default: // a relist is due already
			}
		},
		ProgressNotificationHandler: inst.calls.progress, // to the caller that asked (calls.go)
		// A 2026-07-28 server's input requests in a result are fulfilled by
		// musterd itself (inputrequests.go), through the same refusals and
		// lanes as a classic request of the server's: the go-sdk's own
		// fulfilment would answer roots/list from a root set of its own.
		MultiRoundTrip:             &mcp.MultiRoundTripOptions{Disabled: true},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { inst.calls.listsChanged() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { inst.calls.listsChanged() },
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req.Params != nil {
				inst.calls.resourceUpdated(req.Params.URI) // subscribe.go
			}
		},
	}
	inst.offerClient(opts) // what the server may ask of the client, and where it goes (clientrequests.go)
	client := mcp.NewClient(clientInfo, opts)
	client.AddReceivingMiddleware(inst.serverRequests)
	client.AddSendingMiddleware(inst.requestMeta)
	inst.client = client
	session, err := client.Connect(inst.ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: inst.protocolWanted()})
	if err != nil {
		return err
	}
	inst.session = session
	go func() {
		inst.sessionErr = session.Wait()
		close(inst.sessionEnded)
	}()
	if err := inst.applyLogLevel(); err != nil {
		return fmt.Errorf("logging/setLevel: %w", err)
	}
	tools, err := listTools(inst.ctx, session)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	inst.tools = tools
	return nil
}

// listTools returns the server's tools sorted by name, the first of any
// name only, or none if it offers no tools at all.
func listTools(ctx context.Context, session *mcp.ClientSession) ([]*mcp.Tool, error) {
	if res := session.InitializeResult(); res == nil || res.Capabilities == nil || res.Capabilities.Tools == nil {
		return nil, nil
	}
	var tools []*mcp.Tool
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if tool != nil {
			tools = append(tools, tool)
		}
	}
	slices.SortStableFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return slices.CompactFunc(tools, func(a, b *mcp.Tool) bool { return a.Name == b.Name }), nil
}

// errNoAnswer is a ping that timed out: the server is there (or its
// connection is) but does not answer. Hung, not dropped.
var errNoAnswer = errors.New("no answer")

func (inst *instance) ping(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(inst.ctx, timeout)
	defer cancel()
	var err error
	if inst.modern() {
		err = inst.probe(ctx)
	} else {
		err = inst.session.Ping(ctx, nil)
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w within %s", errNoAnswer, timeout)
	}
	return err
}

// probe is the health check of a 2026-07-28 session, which has no ping:
// the method is gone from that generation (the go-sdk's server answers it
// "method not found" before any of the server's own code runs, a
// stateless HTTP one refuses it without the request's _meta outright). So
// musterd asks for the first page of a list the server offers, which its
// handlers answer: tools, else resources, else prompts. Lists are not
// cached by the go-sdk when asked for with no params. A server that offers
// none of them is asked for ping with the generation's _meta, and its
// "method not found" is taken for an answer.
func (inst *instance) probe(ctx context.Context) error {
	caps := inst.capabilities()
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	var err error
	switch {
	case caps.Tools != nil:
		_, err = inst.session.ListTools(ctx, nil)
	case caps.Resources != nil:
		_, err = inst.session.ListResources(ctx, nil)
	case caps.Prompts != nil:
		_, err = inst.session.ListPrompts(ctx, nil)
	default:
		meta := mcp.Meta{
			mcp.MetaKeyProtocolVersion:    inst.protocolVersion(),
			mcp.MetaKeyClientInfo:         clientInfo,
			mcp.MetaKeyClientCapabilities: map[string]any{},
		}
		err = inst.session.Ping(ctx, &mcp.PingParams{Meta: meta})
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeMethodNotFound {
			return nil
		}
	}
	return err
}

// protocolVersion is the version inst's server agreed to.
func (inst *instance) protocolVersion() string {
	if res := inst.session.InitializeResult(); res != nil {
		return res.ProtocolVersion
	}
	return ""
}

// modern reports whether inst's session is of the 2026-07-28 generation:
// no ping, no logging/setLevel (a request's own _meta carries the level),
// no roots/list_changed, resource subscriptions as listen streams, and
// input requests in results.
func (inst *instance) modern() bool { return inst.protocolVersion() >= protocolNewest }

// requestStop asks the monitor to tear the instance down, and cancels what
// it may be waiting for.
func (inst *instance) requestStop() {
	inst.stopOnce.Do(func() {
		// The cause first: the monitor wakes on stopReq and tears down,
		// cancelling with errReleased, and the first cause is the one
		// kept. A call cut off by the stop must read errStopping (with
		// the drain's reason), not a server that died.
		inst.cancel(errStopping)
		close(inst.stopReq)
	})
}

func (inst *instance) stopRequested() bool {
	select {
	case <-inst.stopReq:
		return true
	default:
		return false
	}
}

// kill cuts a teardown short: SIGKILL to the process group at once.
func (inst *instance) kill() {
	inst.cancel(errStopping)
	if inst.proc != nil {
		inst.proc.kill()
	}
}

// teardown releases everything: the session (closing a stdio server's
// stdin), the process group (SIGTERM, grace, SIGKILL; at once for a grace
// of 0) and the HTTP connections. It may be called more than once.
func (inst *instance) teardown(grace time.Duration) {
	inst.cancel(errReleased)
	if inst.session != nil {
		_ = inst.session.Close()
		<-inst.sessionEnded
	}
	if inst.proc != nil {
		inst.proc.stop(grace)
		if inst.proc.killed {
			inst.log.Warn("mcp server outlived its grace after "+stopRequest+"; killed it", "key", inst.key.String(),
				"pid", inst.proc.pid, "grace", grace)
		}
	}
	if inst.httpTransport != nil {
		inst.httpTransport.CloseIdleConnections()
	}
}

// monitor watches a started instance until it fails or is asked to stop:
// the exit of its process, the end of its session, a periodic ping, the
// server's notice that its tools changed, and StableAfter of good health.
// One goroutine per instance: a server's slow ping delays no other's, and
// the instance's whole lifecycle sits in one place.
func (s *Supervisor) monitor(e *entry, inst *instance) {
	defer close(inst.done)
	defer s.endLanes(inst) // lanes.go: they end with it, before it is done
	ping := time.NewTicker(s.opts.PingInterval)
	defer ping.Stop()
	stable := time.NewTimer(s.opts.StableAfter)
	defer stable.Stop()
	var exited <-chan struct{}
	if inst.proc != nil {
		exited = inst.proc.exited
	}
	for {
		select {
		case <-inst.stopReq:
			inst.teardown(s.opts.StopGrace)
			return
		case <-exited:
			s.crashed(e, inst)
			return
		case <-inst.sessionEnded:
			s.disconnected(e, inst, "closed its MCP connection", inst.sessionErr, true)
			return
		case <-ping.C:
			if !s.healthy(e, inst) {
				return
			}
		case <-stable.C:
			s.markStable(e, inst)
		case <-inst.toolsChanged:
			s.refreshTools(e, inst)
		case <-inst.calls.suspect:
			// A call saw a transport error (calls.go, suspectDead): ask now
			// rather than at the next tick. A stdio process that is
			// exiting is given exitSettle to, so that its exit explains it.
			if err := inst.ping(s.opts.PingTimeout); err != nil {
				s.disconnected(e, inst, "health ping after a failed call failed: "+err.Error(), err, true)
				return
			}
			s.touch(e, inst)
			ping.Reset(s.opts.PingInterval)
		}
	}
}

// healthy pings inst and records the answer; a failed ping is handled as
// disconnected does, and reported false.
func (s *Supervisor) healthy(e *entry, inst *instance) bool {
	err := inst.ping(s.opts.PingTimeout)
	if err == nil {
		s.touch(e, inst)
		return true
	}
	s.disconnected(e, inst, "health ping failed: "+err.Error(), err, false)
	return false
}

// crashed handles a stdio server whose process exited by itself.
func (s *Supervisor) crashed(e *entry, inst *instance) {
	inst.proc.stop(0) // what is left of its group; reads stderr to its end
	if !inst.stopRequested() {
		msg := withStderr(inst.proc.exit, inst.proc.stderr.Tail())
		s.fail(e, inst, inst.scrub.clean(msg), v1alpha1.MCPServerStateFailed)
	}
	inst.teardown(0)
}

// disconnected handles a session that ended or a failed ping, cause the
// error that said so. A stdio process that exits meanwhile (waited for
// when settle is set) crashed. A remote whose session expired (404: it
// restarted) gets a new one at once; one whose connection dropped is
// Disconnected, and reconnects on the backoff; a server that does not
// answer (a hang, stdio or remote) is Failed.
func (s *Supervisor) disconnected(e *entry, inst *instance, reason string, cause error, settle bool) {
	if inst.proc != nil && (inst.proc.hasExited() || settle && inst.proc.awaitExit(exitSettle)) {
		s.crashed(e, inst)
		return
	}
	if !inst.stopRequested() {
		switch {
		case inst.remote && errors.Is(cause, mcp.ErrSessionMissing) && s.renew(e, inst):
			s.log.Info("mcp server: its session expired (the server restarted?); initializing a new one", "key", inst.key.String())
		case inst.remote && !errors.Is(cause, errNoAnswer):
			s.fail(e, inst, inst.scrub.clean(reason), v1alpha1.MCPServerStateDisconnected)
		default:
			s.fail(e, inst, inst.scrub.clean(reason), v1alpha1.MCPServerStateFailed)
		}
	}
	inst.teardown(s.opts.StopGrace)
}

func (s *Supervisor) refreshTools(e *entry, inst *instance) {
	ctx, cancel := context.WithTimeout(inst.ctx, s.opts.PingTimeout)
	defer cancel()
	tools, err := listTools(ctx, inst.session)
	if err != nil {
		// Not a failure of the server's: the next ping tells.
		s.log.Warn("mcp server: tools/list after its tools changed failed", "key", inst.key.String(),
			"error", inst.scrub.clean(err.Error()))
		return
	}
	s.setTools(e, inst, tools)
}

// headerTransport adds a remote server's headers to every request to its
// origin (never another's), and notes its 401 answers. On a user
// connection it adds the user's bearer token too, and settles its 401
// answers (userbearer.go).
type headerTransport struct {
	origin     string // the server's scheme://host:port: where they may go
	base       http.RoundTripper
	header     http.Header
	challenges *challengeRecorder
	bearer     *bearer // a user connection's; nil otherwise
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if origin(req.URL.String()) != t.origin {
		// Another origin (an SSE endpoint event naming another host):
		// the server's headers and the user's token are the server's
		// alone, and go nowhere else.
		return t.base.RoundTrip(req)
	}
	req = req.Clone(req.Context()) // a RoundTripper must not change its request
	for name, values := range t.header {
		req.Header[name] = values
	}
	if t.bearer != nil {
		return t.bearer.roundTrip(t.base, req, t.challenges)
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		t.challenges.note(resp)
	}
	return resp, err
}

// defaultTransport is http.DefaultTransport, unless a program replaced it
// with another kind.
func defaultTransport() *http.Transport {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return t
	}
	return &http.Transport{}
}

// origin is raw's scheme://host (with its port), lower-cased; "" when it
// does not parse.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Scheme + "://" + u.Host)
}

// sameOriginRedirects follows a server's redirect within its origin only:
// the headers a transport adds would otherwise go along to another.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if origin(req.URL.String()) != origin(via[0].URL.String()) {
		return fmt.Errorf("a redirect to another origin (%s) is not followed: the server's credentials go to it alone", req.URL.Host)
	}
	return nil
}
