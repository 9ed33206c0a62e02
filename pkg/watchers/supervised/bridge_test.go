package supervised_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/supervisor"
	"github.com/musterd/musterd/pkg/watchers/supervised"
)

var (
	echo   = events.NewKey(v1alpha1.KindMCPServer, "", "echo")
	remote = events.NewKey(v1alpha1.KindMCPServer, "", "remote")
	greet  = events.NewKey(v1alpha1.KindWorkflow, "", "greet")
	status = events.NewKey(v1alpha1.KindWorkflow, "", "status")
	broken = events.NewKey(v1alpha1.KindWorkflow, "", "broken")
)

const (
	running      = v1alpha1.MCPServerStateRunning
	starting     = v1alpha1.MCPServerStateStarting
	stopped      = v1alpha1.MCPServerStateStopped
	failed       = v1alpha1.MCPServerStateFailed
	connecting   = v1alpha1.MCPServerStateConnecting
	connected    = v1alpha1.MCPServerStateConnected
	disconnected = v1alpha1.MCPServerStateDisconnected
)

// harness runs a bridge on a real bus in a synctest bubble and records
// what it publishes.
type harness struct {
	t      *testing.T
	ix     *resources.Index
	cat    *catalogue.Catalogue
	bus    *bus.Bus
	br     *supervised.Bridge
	cancel context.CancelFunc
	done   chan error

	mu   sync.Mutex
	seen []events.Event
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, ix: resources.New(), cat: catalogue.New(catalogue.Options{}),
		bus: bus.New(bus.Options{Logger: slog.New(slog.DiscardHandler)})}
	h.declareWorkflow("greet", "x_echo_echo")
	h.declareWorkflow("status", "x_git_status")
	// A workflow whose file never parsed names nothing.
	h.ix.SetFile("workflows/broken.yaml", []resources.Doc{{Key: broken, Err: assert.AnError}}, nil, broken)
	var err error
	h.br, err = supervised.New(h.bus, supervised.Options{Index: h.ix, Catalogue: h.cat, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	_, err = h.bus.Subscribe(bus.SubscriberOptions{
		Name:     "recorder",
		Delivery: bus.Lossy(1 << 16),
		Handlers: []bus.Handler{
			bus.On(func(e events.ServiceStateChanged) { h.record(e) }),
			bus.On(func(e events.ResourceChanged) { h.record(e) }),
		},
	})
	require.NoError(t, err)
	h.bus.Start()
	return h
}

func (h *harness) declareWorkflow(name, tool string) {
	k := events.NewKey(v1alpha1.KindWorkflow, "", name)
	wf := &v1alpha1.Workflow{Spec: v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{{ID: "s", Tool: tool}}}}
	h.ix.SetFile("workflows/"+name+".yaml", []resources.Doc{{Key: k, Object: wf, Hash: tool}}, nil, k)
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.br.Start(ctx) }()
	synctest.Wait()
}

func (h *harness) stop() {
	h.cancel()
	require.NoError(h.t, <-h.done)
	h.bus.Close()
	synctest.Wait()
}

func (h *harness) record(e events.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seen = append(h.seen, e)
}

// take returns what was published since the last take, with each event's
// time checked against now and its Meta cleared, and whether they share
// one correlation ID.
func (h *harness) take() ([]events.Event, bool) {
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]events.Event, len(h.seen))
	corrs := map[string]bool{}
	for i, e := range h.seen {
		assert.Equal(h.t, events.Now(), e.Metadata().Time)
		corrs[e.Metadata().CorrelationID] = true
		switch e := e.(type) {
		case events.ServiceStateChanged:
			e.Meta = events.Meta{}
			out[i] = e
		case events.ResourceChanged:
			e.Meta = events.Meta{}
			out[i] = e
		}
	}
	h.seen = nil
	return out, len(corrs) <= 1
}

// change feeds one observation as the supervisor would.
func (h *harness) change(k events.Key, o supervisor.Observed) { h.br.OnChange(k, o) }

func up(tools ...string) supervisor.Observed {
	return supervisor.Observed{State: running, PID: 42, Tools: tools, ToolDefs: defs(tools...)}
}

// defs are the definitions of tools, as a server lists them.
func defs(tools ...string) []*mcp.Tool {
	var out []*mcp.Tool
	for _, name := range tools {
		out = append(out, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}})
	}
	return out
}

func crashed(at time.Time) supervisor.Observed {
	return supervisor.Observed{State: failed, ConsecutiveFailures: 1, NextRetryAfter: at.Add(time.Second),
		LastError: "exited with exit code 1; stderr:\nmcp-fake: crashing after 1s as asked, exit code 1"}
}

func workflowChanged(k events.Key) events.ResourceChanged {
	return events.ResourceChanged{Key: k, Operation: events.OperationUpdate, Source: events.SourceServiceState}
}

func TestAStartedServersToolsEnterTheCatalogueAndRevalidateTheWorkflowsNamingThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.change(echo, supervisor.Observed{State: starting})
		got, _ := h.take()
		assert.Equal(t, []events.Event{workflowChanged(greet)}, got, "the workflow naming a tool of the starting server now waits for it; no ServiceStateChanged for Starting")
		h.change(echo, up("echo", "reverse"))
		got, oneChain := h.take()
		assert.Equal(t, []events.Event{
			events.ServiceStateChanged{Key: echo, State: "Running", PreviousState: "Starting"},
			workflowChanged(greet),
		}, got, "the start's outcome, which no reconcile waited for, and the workflow naming a new tool")
		assert.True(t, oneChain)
		assert.Equal(t, []string{"x_echo_echo", "x_echo_reverse"}, h.cat.Tools())

		// The same tools again (a change of another field): nothing.
		again := up("echo", "reverse")
		again.LastConnected = time.Now()
		h.change(echo, again)
		got, _ = h.take()
		assert.Empty(t, got)
		h.stop()
	})
}

func TestACrashIsPublishedAndEmptiesTheCatalogue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.change(echo, up("echo"))
		h.take()

		h.change(echo, crashed(time.Now()))
		got, oneChain := h.take()
		assert.Equal(t, []events.Event{
			events.ServiceStateChanged{Key: echo, State: "Failed", PreviousState: "Running", Error: "exited with exit code 1"},
			workflowChanged(greet),
		}, got, "the stderr tail stays in the status")
		assert.True(t, oneChain, "the crash and the workflows it affects share a correlation ID")
		assert.Empty(t, h.cat.Tools())

		// The reconcile's restart, failing to start: the outcome is
		// published, for the reconcile did not wait for it; then succeeding:
		// the tools are back.
		h.change(echo, supervisor.Observed{State: starting})
		h.change(echo, crashed(time.Now().Add(time.Second)))
		got, _ = h.take()
		assert.Equal(t, []events.Event{
			workflowChanged(greet),
			events.ServiceStateChanged{Key: echo, State: "Failed", PreviousState: "Starting", Error: "exited with exit code 1"},
			workflowChanged(greet),
		}, got, "waiting for it, then its failure and the workflow, no longer waiting")
		h.change(echo, supervisor.Observed{State: starting})
		h.change(echo, up("echo"))
		got, _ = h.take()
		assert.Equal(t, []events.Event{
			workflowChanged(greet),
			events.ServiceStateChanged{Key: echo, State: "Running", PreviousState: "Starting"},
			workflowChanged(greet),
		}, got)
		h.stop()
	})
}

func TestAStopAskedForIsNotPublishedButAStartsOutcomeIs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.change(echo, up("echo"))
		got, _ := h.take()
		assert.Equal(t, []events.Event{
			events.ServiceStateChanged{Key: echo, State: "Running"},
			workflowChanged(greet),
		}, got)

		// A restart with a new spec: the old instance stops, the new one
		// starts with other tools.
		h.change(echo, supervisor.Observed{State: stopped})
		h.change(echo, supervisor.Observed{State: starting, ToolPrefix: "git"})
		renamed := up("status", "log")
		renamed.ToolPrefix = "git"
		h.change(echo, renamed)
		got, _ = h.take()
		assert.Equal(t, []events.Event{
			workflowChanged(greet),  // its tool went with the stop, asked for: no ServiceStateChanged
			workflowChanged(status), // it waits for the starting server
			events.ServiceStateChanged{Key: echo, State: "Running", PreviousState: "Starting"},
			workflowChanged(status), // its tool came
		}, got)
		assert.Equal(t, []string{"x_git_log", "x_git_status"}, h.cat.Tools())

		h.change(echo, supervisor.Observed{State: stopped, ToolPrefix: "git"})
		got, _ = h.take()
		assert.Equal(t, []events.Event{workflowChanged(status)}, got)
		assert.Empty(t, h.cat.Tools())

		// A tool no workflow names comes and goes: only the start's outcome
		// is published.
		h.change(echo, up("unnamed"))
		h.change(echo, supervisor.Observed{State: stopped})
		got, _ = h.take()
		assert.Equal(t, []events.Event{events.ServiceStateChanged{Key: echo, State: "Running"}}, got)
		h.stop()
	})
}

func TestARunningServerWhoseToolsChangeOrWhoseStreakClearsIsPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		first := up("echo")
		first.ConsecutiveFailures, first.LastError = 2, "exited with exit code 1"
		h.change(echo, first)
		h.take()

		more := first
		more.Tools, more.ToolDefs = []string{"echo", "late"}, defs("echo", "late")
		h.change(echo, more)
		got, _ := h.take()
		assert.Equal(t, []events.Event{events.ServiceStateChanged{Key: echo, State: "Running", PreviousState: "Running", Error: "exited with exit code 1"}}, got,
			"the status must list the new tool; no workflow names it")
		assert.Equal(t, []string{"x_echo_echo", "x_echo_late"}, h.cat.Tools())

		stable := more
		stable.ConsecutiveFailures, stable.LastError = 0, ""
		h.change(echo, stable)
		got, _ = h.take()
		assert.Equal(t, []events.Event{events.ServiceStateChanged{Key: echo, State: "Running", PreviousState: "Running"}}, got)
		h.stop()
	})
}

func TestARemoteServerThatDisconnectsIsPublishedUnlikeOneThatIsStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		for _, asked := range []bool{false, true} {
			h.change(remote, supervisor.Observed{State: connecting, ToolPrefix: "echo"})
			h.change(remote, supervisor.Observed{State: connected, ToolPrefix: "echo", Tools: []string{"echo"}, ToolDefs: defs("echo")})
			got, _ := h.take()
			assert.Equal(t, []events.Event{
				workflowChanged(greet),
				events.ServiceStateChanged{Key: remote, State: "Connected", PreviousState: "Connecting"},
				workflowChanged(greet),
			}, got, "its toolPrefix names its tools")

			down := supervisor.Observed{State: disconnected, ToolPrefix: "echo"}
			if !asked {
				down.NextRetryAfter, down.LastError = time.Now().Add(time.Second), "health ping failed: timeout"
			}
			h.change(remote, down)
			got, _ = h.take()
			if asked {
				assert.Equal(t, []events.Event{workflowChanged(greet)}, got)
			} else {
				assert.Equal(t, []events.Event{
					events.ServiceStateChanged{Key: remote, State: "Disconnected", PreviousState: "Connected", Error: "health ping failed: timeout"},
					workflowChanged(greet),
				}, got)
			}
		}
		h.stop()
	})
}

// The catalogue follows each OnChange before it returns (the supervisor
// calls it under its lock, so Ensure never returns a server Running whose
// tools the catalogue lacks); what must be published waits for Start.
func TestTheCatalogueFollowsOnChangeAtOnceAndPublicationsWaitForStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.change(echo, up("echo"))
		assert.Equal(t, []string{"x_echo_echo"}, h.cat.Tools(), "in the catalogue as OnChange returns")
		h.change(echo, supervisor.Observed{State: stopped})
		assert.Empty(t, h.cat.Tools(), "gone from it as OnChange returns")
		for range 1000 { // nobody publishes them yet: OnChange must still return
			h.change(echo, up("echo"))
			h.change(echo, supervisor.Observed{State: stopped})
		}
		h.change(echo, up("echo"))
		got, _ := h.take()
		assert.Empty(t, got, "nothing published before Start")
		assert.Equal(t, []string{"x_echo_echo"}, h.cat.Tools())

		h.start()
		got, _ = h.take()
		assert.Len(t, got, 3005, "every change published, in order: the server came (its outcome and the workflow) and went (the workflow) 1001 times and came back")
		assert.Equal(t, []string{"x_echo_echo"}, h.cat.Tools())
		h.stop()

		h.change(echo, supervisor.Observed{State: stopped}) // after Start returned: not published, never blocks
		got, _ = h.take()
		assert.Empty(t, got)
		assert.Empty(t, h.cat.Tools(), "the catalogue still follows what runs")
	})
}

func TestNewRequiresItsParts(t *testing.T) {
	b := bus.New(bus.Options{})
	_, err := supervised.New(nil, supervised.Options{Index: resources.New(), Catalogue: catalogue.New(catalogue.Options{})})
	assert.ErrorContains(t, err, "nil bus")
	_, err = supervised.New(b, supervised.Options{Catalogue: catalogue.New(catalogue.Options{})})
	assert.ErrorContains(t, err, "Index")
	_, err = supervised.New(b, supervised.Options{Index: resources.New()})
	assert.ErrorContains(t, err, "Catalogue")
}

// TestDefinitionsFamiliesAndListingTimesReachTheCatalogue: what the
// supervisor observes of a running server's tools is what the catalogue
// serves.
func TestDefinitionsFamiliesAndListingTimesReachTheCatalogue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		listed := time.Now()
		for _, name := range []string{"mc-a", "mc-b"} {
			obs := up("get")
			obs.ToolDefs[0].Title = "get from " + name // members that describe it alike share it
			obs.ToolDefs[0].Description = "gets"
			obs.Family = &v1alpha1.MCPServerFamily{Name: "k8s", InstanceArg: "cluster"}
			obs.ListedAt = listed
			h.change(events.NewKey(v1alpha1.KindMCPServer, "", name), obs)
		}
		tool, ok := h.cat.Tool("x_k8s_get")
		require.True(t, ok)
		assert.Equal(t, "get from mc-a", tool.Definition.Title, "the first member's definition")
		assert.Equal(t, "gets (available on servers: mc-a, mc-b)", tool.Definition.Description)
		assert.Equal(t, []string{"mc-a", "mc-b"}, tool.Instances)
		assert.Equal(t, "cluster", tool.InstanceArg)
		servers := h.cat.Servers()
		require.Len(t, servers, 2)
		assert.Equal(t, listed, servers[0].ListedAt)
		assert.Equal(t, "k8s", servers[0].Naming.Family)
		h.start()
		h.stop()
	})
}

func TestASpecChangeRestartKeepsTheToolsOfferedUntilTheNewInstanceAnswers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.start()
		h.change(echo, up("echo", "reverse"))
		h.take()

		// The supervisor replaces the instance: its stop and the new start
		// keep the tools offered, and publish nothing.
		h.change(echo, supervisor.Observed{State: stopped, Replacing: true})
		assert.Equal(t, []string{"x_echo_echo", "x_echo_reverse"}, h.cat.Tools(), "offered while the old instance is stopped for the new")
		h.change(echo, supervisor.Observed{State: starting, Replacing: true})
		assert.Equal(t, []string{"x_echo_echo", "x_echo_reverse"}, h.cat.Tools(), "offered while the new instance starts")
		got, _ := h.take()
		assert.Empty(t, got)

		// The new instance's listing replaces them.
		next := up("echo")
		next.Replacing = true
		h.change(echo, next)
		assert.Equal(t, []string{"x_echo_echo"}, h.cat.Tools())

		// A replacement whose new instance fails: the tools go.
		h.change(echo, supervisor.Observed{State: stopped, Replacing: true})
		assert.Equal(t, []string{"x_echo_echo"}, h.cat.Tools())
		failedStart := crashed(time.Now())
		failedStart.Replacing = true
		h.change(echo, failedStart)
		assert.Empty(t, h.cat.Tools(), "a failed replacement offers nothing")

		// A stop without a replacement removes them at once, as before.
		h.change(echo, up("echo"))
		h.change(echo, supervisor.Observed{State: stopped})
		assert.Empty(t, h.cat.Tools())
		h.stop()
	})
}
