package kubeevents

import (
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolsevents "k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// fixture drives one Recorder's decisions directly, over a fake client and
// client-go's FakeRecorder; the envtest test covers the real API server.
type fixture struct {
	r        *Recorder
	fake     *toolsevents.FakeRecorder
	statuses map[events.Key]any
	invalid  map[events.Key]error
}

func mcpKey(name string) events.Key {
	return events.Key{Kind: v1alpha1.KindMCPServer, Namespace: "default", Name: name}
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(scheme))
	f := &fixture{fake: toolsevents.NewFakeRecorder(100), statuses: map[events.Key]any{}, invalid: map[events.Key]error{}}
	f.r = &Recorder{
		opts: Options{
			ResourceStatus:  func(k events.Key) (any, bool) { s, ok := f.statuses[k]; return s, ok },
			DefinitionError: func(k events.Key) error { return f.invalid[k] },
			RequestTimeout:  DefaultRequestTimeout,
			Logger:          slog.New(slog.DiscardHandler),
		},
		scheme: scheme,
		reader: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(),
		record: f.fake,
	}
	f.r.init()
	return f
}

// recorded returns the Events recorded since the last call, as
// "type reason note".
func (f *fixture) recorded() []string {
	var out []string
	for {
		select {
		case e := <-f.fake.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// synced is the outcome the tests drive: a reconcile of key.
func synced(key events.Key) events.Event { return events.ResourceSynced{Key: key} }

func server(name string, gen int64, observed int64) *v1alpha1.MCPServer {
	return &v1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, Generation: gen},
		Spec:       v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "x"},
		Status:     &v1alpha1.MCPServerStatus{ObservedGeneration: observed},
	}
}

func running(gen int64, restarts int) v1alpha1.MCPServerStatus {
	return v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning, ObservedGeneration: gen, RestartCount: restarts, ToolCount: 2}
}

func TestSyncedOncePerGenerationAndServerStartsAndRestarts(t *testing.T) {
	f := newFixture(t, server("git", 2, 0))
	ctx := t.Context()
	key := mcpKey("git")

	f.statuses[key] = running(1, 0)
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Equal(t, []string{
		"Normal Synced generation 1 reconciled",
		"Normal MCPServerStarted MCPServer git service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer git tools discovered and registered successfully",
	}, f.recorded(), "a first successful reconcile")

	f.r.outcome(ctx, synced(key), key, false, "")
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Empty(t, f.recorded(), "a resync of the same generation, the server running on, records nothing")

	f.statuses[key] = running(1, 1)
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Equal(t, []string{
		"Normal MCPServerRestarting MCPServer git service is restarting",
		"Normal MCPServerStarted MCPServer git service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer git tools discovered and registered successfully",
	}, f.recorded())

	f.statuses[key] = v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateFailed, ObservedGeneration: 1, RestartCount: 1,
		LastError: "exited with exit code 1; stderr:\nthe tail"}
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Equal(t, []string{
		"Warning MCPServerToolsUnavailable MCPServer git tools became unavailable",
		"Warning MCPServerFailed MCPServer git operation failed: exited with exit code 1; stderr:",
	}, f.recorded(),
		"a server found down: its transition, not a Synced")
	f.r.outcome(ctx, synced(key), key, false, "backing off")
	assert.Equal(t, []string{"Warning ReconcileFailed backing off"}, f.recorded(), "the transition once")
	f.statuses[key] = running(2, 1)
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Equal(t, []string{
		"Normal Synced generation 2 reconciled",
		"Normal MCPServerStarted MCPServer git service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer git tools discovered and registered successfully",
	}, f.recorded(), "a new generation, and the server up again")

	// A remote: connected, dropped, refused again (no new transition),
	// connected.
	for _, st := range []v1alpha1.MCPServerStatus{
		{State: v1alpha1.MCPServerStateConnected, ObservedGeneration: 2, ToolCount: 1},
		{State: v1alpha1.MCPServerStateDisconnected, ObservedGeneration: 2, LastError: "closed its MCP connection"},
		{State: v1alpha1.MCPServerStateConnecting, ObservedGeneration: 2},
		{State: v1alpha1.MCPServerStateDisconnected, ObservedGeneration: 2, LastError: "connect to http://x: refused"},
		{State: v1alpha1.MCPServerStateConnected, ObservedGeneration: 2, ToolCount: 1},
	} {
		f.statuses[key] = st
		f.r.outcome(ctx, synced(key), key, false, "")
	}
	assert.Equal(t, []string{
		"Warning MCPServerToolsUnavailable MCPServer git tools became unavailable",
		"Warning MCPServerHealthCheckFailed MCPServer git health check failed: closed its MCP connection",
		"Normal MCPServerStarted MCPServer git service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer git tools discovered and registered successfully",
	}, f.recorded(), "one Event per transition: a Connecting in between is none; Running and Connected are one to muster")

	f.r.outcome(ctx, events.ResourceSynced{Key: key, Deleted: true}, key, true, "")
	assert.Empty(t, f.recorded(), "a deletion records nothing: the Events go with the object")
	assert.NotContains(t, f.r.resources, key, "and the resource is forgotten")
}

func TestFailuresAndInvalidDefinitionsAreWarningsWithoutSecrets(t *testing.T) {
	f := newFixture(t, server("git", 1, 0))
	ctx := t.Context()
	key := mcpKey("git")

	f.r.outcome(ctx, synced(key), key, false, "start git-mcp: connect https://admin:hunter2@example.com: password=hunter2 refused")
	got := f.recorded()
	require.Len(t, got, 1)
	assert.True(t, strings.HasPrefix(got[0], "Warning ReconcileFailed start git-mcp: connect https://[redacted]@example.com"), got[0])
	assert.NotContains(t, got[0], "hunter2")

	f.invalid[key] = errors.New("MCPServer default/git (generation 2): spec.command: required for type stdio; token=s3cret")
	f.statuses[key] = running(1, 0)
	f.r.outcome(ctx, synced(key), key, false, "")
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Equal(t, []string{
		"Warning InvalidDefinition MCPServer default/git (generation 2): spec.command: required for type stdio; token=[redacted]",
		"Normal MCPServerStarted MCPServer git service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer git tools discovered and registered successfully",
	}, f.recorded(), "once per distinct error; no Synced while the current generation is refused")

	delete(f.invalid, key)
	f.statuses[key] = running(3, 0)
	f.r.outcome(ctx, synced(key), key, false, "")
	assert.Equal(t, []string{"Normal Synced generation 3 reconciled"}, f.recorded(), "a valid generation again")

	f.r.outcome(ctx, synced(key), key, false, strings.Repeat("é", maxNote))
	got = f.recorded()
	require.Len(t, got, 1)
	note := strings.TrimPrefix(got[0], "Warning ReconcileFailed ")
	assert.LessOrEqual(t, len(note), maxNote, "the API's limit of a note")
	assert.True(t, strings.HasSuffix(note, "é…"), "cut at a character's start")
}

// A new leader takes the generations its predecessor reported as
// recorded: it records a Synced only for a generation reconciled since.
func TestANewLeaderDoesNotRepeatItsPredecessorsSyncedEvents(t *testing.T) {
	f := newFixture(t, server("old", 4, 4), server("new", 2, 1),
		&v1alpha1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "wf", Generation: 1},
			Status: &v1alpha1.WorkflowStatus{ObservedGeneration: 1}})
	ctx := t.Context()
	f.r.seed(ctx)

	wf := events.Key{Kind: v1alpha1.KindWorkflow, Namespace: "default", Name: "wf"}
	f.statuses[wf] = v1alpha1.WorkflowStatus{ObservedGeneration: 1}
	f.r.outcome(ctx, synced(wf), wf, false, "")
	f.statuses[mcpKey("old")] = running(4, 0)
	f.r.outcome(ctx, synced(mcpKey("old")), mcpKey("old"), false, "")
	assert.Equal(t, []string{
		"Normal MCPServerStarted MCPServer old service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer old tools discovered and registered successfully",
	}, f.recorded(),
		"the new leader started the server itself; the generations were reported before")

	f.statuses[mcpKey("new")] = running(2, 0)
	f.r.outcome(ctx, synced(mcpKey("new")), mcpKey("new"), false, "")
	assert.Equal(t, []string{
		"Normal Synced generation 2 reconciled",
		"Normal MCPServerStarted MCPServer new service started successfully",
		"Normal MCPServerToolsDiscovered MCPServer new tools discovered and registered successfully",
	}, f.recorded(), "a generation the predecessor had not reconciled")
}

func TestAnEventAboutAnObjectThatIsGoneIsDropped(t *testing.T) {
	f := newFixture(t)
	f.r.outcome(t.Context(), events.ResourceFailed{Key: mcpKey("gone")}, mcpKey("gone"), false, "exit status 1")
	assert.Empty(t, f.recorded())
}

func TestNewNamesWhatIsMissing(t *testing.T) {
	_, err := New(nil, Options{})
	assert.ErrorContains(t, err, "a bus is required")
}

// Runs, steps and validations are recorded in muster's words on the
// Workflow.
func TestRunsStepsAndValidationsAreMustersEvents(t *testing.T) {
	f := newFixture(t, &v1alpha1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "wf", Generation: 1}})
	ctx := t.Context()
	wf := events.Key{Kind: v1alpha1.KindWorkflow, Namespace: "default", Name: "wf"}
	f.r.run(ctx, events.DefinitionValidated{Key: wf, Request: "update", Error: "duplicate step id; token=s3cret"})
	f.r.run(ctx, events.WorkflowExecutionStarted{Key: wf, ExecutionID: "e1"})
	f.r.run(ctx, events.WorkflowStepStarted{Key: wf, ExecutionID: "e1", StepID: "a", Tool: "x_t"})
	f.r.run(ctx, events.WorkflowStepFinished{Key: wf, ExecutionID: "e1", StepID: "a", Tool: "x_t", Status: events.StepFailed, Error: "boom"})
	f.r.run(ctx, events.WorkflowExecutionFinished{Key: wf, ExecutionID: "e1", Status: "failed", Error: "workflow wf, step a: boom"})
	assert.Equal(t, []string{
		"Warning WorkflowValidationFailed Workflow wf validation failed: duplicate step id; token=[redacted]",
		"Normal WorkflowExecutionStarted Workflow wf execution started (execution: e1)",
		"Normal WorkflowStepStarted Workflow wf step a started (tool: x_t)",
		"Warning WorkflowStepFailed Workflow wf step a failed: boom",
		"Normal WorkflowExecutionTracked Workflow wf execution state persisted (execution: e1)",
		"Warning WorkflowExecutionFailed Workflow wf execution failed: workflow wf, step a: boom",
	}, f.recorded())
	f.r.run(ctx, events.WorkflowExecutionStarted{Key: events.Key{Kind: v1alpha1.KindWorkflow, Namespace: "default", Name: "gone"}})
	assert.Empty(t, f.recorded(), "an object gone: dropped")
}
