package musterevents_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/events/eventstest"
	"github.com/musterd/musterd/pkg/musterevents"
)

var at = time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)

func meta() events.Meta { return events.Meta{Time: at, CorrelationID: "c0ffee"} }

// told is a translation as the tests compare it.
type told struct {
	Kind, Name, Reason, Type, Message string
}

func tell(out []musterevents.Event) []told {
	list := []told{}
	for _, e := range out {
		list = append(list, told{e.Kind, e.Name, string(e.Reason), e.Type, e.Message})
	}
	return list
}

// Every musterd event type is either told in muster's words or, being
// the pipeline's bookkeeping, deliberately not: a new type must be placed.
func TestEveryMusterdEventTypeIsTranslatedOrDeliberatelyNot(t *testing.T) {
	notTold := map[string]bool{
		events.TypeIndexSynchronized: true, events.TypeReconciliationTriggered: true,
		events.TypeReconciliationStarted: true, events.TypeStatusSynced: true, events.TypeStatusSyncFailed: true,
		events.TypeServiceStateChanged: true, events.TypeBecameLeader: true, events.TypeLostLeadership: true,
		// muster counts no calls as events.
		events.TypeToolCallsCounted: true,
		// A deleted server that never ran, and a failed reconcile of one
		// whose status is unknown, have nothing to tell.
		events.TypeResourceSynced: true, events.TypeResourceFailed: true,
	}
	steps := func(events.Key) (int, bool) { return 2, true }
	seen := map[string]bool{}
	for _, e := range eventstest.Catalogue(meta()) {
		tr := musterevents.New(musterevents.Options{Listed: true, StepCount: steps})
		out := tr.Translate(e)
		seen[e.EventType()] = true
		if notTold[e.EventType()] {
			assert.Empty(t, out, e.EventType())
			continue
		}
		require.NotEmpty(t, out, "%s is told in muster's words", e.EventType())
		for _, m := range out {
			assert.Equal(t, at, m.Time, e.EventType())
			assert.Equal(t, "c0ffee", m.CorrelationID, e.EventType())
			assert.NotEmpty(t, m.Message, e.EventType())
			assert.Equal(t, musterevents.Severity(m.Reason), m.Type)
		}
	}
	for _, name := range events.Types() {
		assert.True(t, seen[name], "no sample of %s", name)
	}
}

func TestDefinitionChangesAreMustersCRUDEvents(t *testing.T) {
	srv, wf := events.NewKey("MCPServer", "", "git"), events.NewKey("Workflow", "", "deploy")
	broken := map[events.Key]error{}
	tr := musterevents.New(musterevents.Options{
		StepCount:       func(k events.Key) (int, bool) { return map[events.Key]int{wf: 2}[k], true },
		DefinitionError: func(k events.Key) error { return broken[k] },
	})
	changed := func(k events.Key, op events.Operation, src events.Source) []told {
		return tell(tr.Translate(events.ResourceChanged{Meta: meta(), Key: k, Operation: op, Source: src}))
	}
	assert.Empty(t, changed(srv, events.OperationCreate, events.SourceFilesystem), "found at start: not a change")
	tr.Translate(events.IndexSynchronized{Meta: meta(), Source: events.SourceFilesystem})

	assert.Equal(t, []told{{"MCPServer", "git", "MCPServerCreated", "Normal", "MCPServer git successfully created in namespace default"}},
		changed(srv, events.OperationCreate, events.SourceFilesystem))
	assert.Equal(t, []told{{"MCPServer", "git", "MCPServerUpdated", "Normal", "MCPServer git successfully updated in namespace default"}},
		changed(srv, events.OperationUpdate, events.SourceFilesystem))
	assert.Equal(t, []told{{"MCPServer", "git", "MCPServerDeleted", "Normal", "MCPServer git successfully deleted from namespace default"}},
		changed(srv, events.OperationDelete, events.SourceFilesystem))
	assert.Equal(t, []told{{"Workflow", "deploy", "WorkflowCreated", "Normal", "Workflow deploy successfully created with 2 steps"}},
		changed(wf, events.OperationCreate, events.SourceFilesystem))
	assert.Equal(t, []told{{"Workflow", "deploy", "WorkflowUpdated", "Normal", "Workflow deploy successfully updated with 2 steps"}},
		changed(wf, events.OperationUpdate, events.SourceFilesystem))
	assert.Equal(t, []told{{"Workflow", "deploy", "WorkflowDeleted", "Normal", "Workflow deploy successfully deleted from namespace default"}},
		changed(wf, events.OperationDelete, events.SourceFilesystem))
	assert.Empty(t, changed(wf, events.OperationUpdate, events.SourceServiceState), "a tool came or went: no definition changed")
	assert.Empty(t, changed(wf, events.OperationUpdate, events.SourceManual), "a trigger")
	assert.Empty(t, changed(wf, events.OperationUpdate, events.SourceKubernetes), "Kubernetes has not listed yet")

	broken[wf] = errors.New("workflows/deploy.yaml: spec.steps[1].id: duplicate step ID 'a'")
	broken[srv] = errors.New("mcpservers/git.yaml: spec.type: unknown type")
	assert.Equal(t, []told{{"Workflow", "deploy", "WorkflowValidationFailed", "Warning",
		"Workflow deploy validation failed: workflows/deploy.yaml: spec.steps[1].id: duplicate step ID 'a'"}},
		changed(wf, events.OperationUpdate, events.SourceFilesystem))
	assert.Equal(t, []told{{"MCPServer", "git", "MCPServerFailed", "Warning",
		"MCPServer git operation failed: mcpservers/git.yaml: spec.type: unknown type"}},
		changed(srv, events.OperationCreate, events.SourceFilesystem))
}

func TestValidationOnRequestIsToldForWorkflows(t *testing.T) {
	tr := musterevents.New(musterevents.Options{})
	wf := events.NewKey("Workflow", "", "w")
	assert.Equal(t, []told{{"Workflow", "w", "WorkflowValidationFailed", "Warning", "Workflow w validation failed: duplicate step ID 'dupe' found"}},
		tell(tr.Translate(events.DefinitionValidated{Meta: meta(), Key: wf, Request: "create", Error: "duplicate step ID 'dupe' found"})))
	assert.Equal(t, []told{{"Workflow", "w", "WorkflowValidationSucceeded", "Normal", "Workflow w validation completed successfully"}},
		tell(tr.Translate(events.DefinitionValidated{Meta: meta(), Key: wf, Request: "validate"})))
	assert.Empty(t, tr.Translate(events.DefinitionValidated{Meta: meta(), Key: events.NewKey("MCPServer", "", "s"), Error: "x"}),
		"muster tells no validation of a server")
}

func TestExecutionsAndStepsCarryTheirFields(t *testing.T) {
	wf := events.NewKey("Workflow", "", "w")
	tr := musterevents.New(musterevents.Options{StepCount: func(events.Key) (int, bool) { return 3, true }})
	run := func(e events.Event) []told { return tell(tr.Translate(e)) }
	assert.Equal(t, []told{{"Workflow", "w", "WorkflowExecutionStarted", "Normal", "Workflow w execution started (execution: e1)"}},
		run(events.WorkflowExecutionStarted{Meta: meta(), Key: wf, ExecutionID: "e1"}))
	assert.Equal(t, []told{
		{"Workflow", "w", "WorkflowStepConditionEvaluated", "Normal", "Workflow w step a condition evaluated to true"},
		{"Workflow", "w", "WorkflowStepStarted", "Normal", "Workflow w step a started (tool: x_git_status)"},
	}, run(events.WorkflowStepStarted{Meta: meta(), Key: wf, ExecutionID: "e1", StepID: "a", Tool: "x_git_status", Condition: "true"}))
	assert.Equal(t, []told{{"Workflow", "w", "WorkflowStepCompleted", "Normal", "Workflow w step a completed successfully"}},
		run(events.WorkflowStepFinished{Meta: meta(), Key: wf, StepID: "a", Tool: "x_git_status", Status: events.StepCompleted}))
	assert.Equal(t, []told{
		{"Workflow", "w", "WorkflowStepConditionEvaluated", "Normal", "Workflow w step b condition evaluated to false"},
		{"Workflow", "w", "WorkflowStepSkipped", "Normal", "Workflow w step b skipped: condition evaluation returned false"},
	}, run(events.WorkflowStepFinished{Meta: meta(), Key: wf, StepID: "b", Status: events.StepSkipped, Condition: "false"}))
	assert.Equal(t, []told{{"Workflow", "w", "WorkflowStepFailed", "Warning", "Workflow w step c failed (allow_failure=true, continuing): boom"}},
		run(events.WorkflowStepFinished{Meta: meta(), Key: wf, StepID: "c", Status: events.StepFailed, Error: "boom", AllowFailure: true}))
	assert.Equal(t, []told{{"Workflow", "w", "WorkflowStepFailed", "Warning", "Workflow w step d failed: token=[redacted]"}},
		run(events.WorkflowStepFinished{Meta: meta(), Key: wf, StepID: "d", Status: events.StepFailed, Error: "token=hunter2secret"}),
		"errors are redacted")
	assert.Equal(t, []told{
		{"Workflow", "w", "WorkflowExecutionTracked", "Normal", "Workflow w execution state persisted (execution: e1)"},
		{"Workflow", "w", "WorkflowExecutionCompleted", "Normal", "Workflow w execution completed successfully (3 steps) in 1.234s"},
	}, run(events.WorkflowExecutionFinished{Meta: meta(), Key: wf, ExecutionID: "e1", Status: "completed", Duration: 1234567 * time.Microsecond}))
	assert.Equal(t, []told{
		{"Workflow", "w", "WorkflowExecutionTracked", "Normal", "Workflow w execution state persisted (execution: e2)"},
		{"Workflow", "w", "WorkflowExecutionFailed", "Warning", "Workflow w execution failed: workflow w, step c: boom-intentional-failure"},
	}, run(events.WorkflowExecutionFinished{Meta: meta(), Key: wf, ExecutionID: "e2", Status: "failed", Error: "workflow w, step c: boom-intentional-failure"}))
}

func TestServerLifecycleIsToldOncePerTransition(t *testing.T) {
	srv := events.NewKey("MCPServer", "", "git")
	var st v1alpha1.MCPServerStatus
	tr := musterevents.New(musterevents.Options{Status: func(k events.Key) (any, bool) { return st, k == srv }})
	synced := func(s v1alpha1.MCPServerStatus) []string {
		st = s
		var reasons []string
		for _, e := range tr.Translate(events.ResourceSynced{Meta: meta(), Key: srv}) {
			reasons = append(reasons, string(e.Reason)+": "+e.Message)
		}
		return reasons
	}
	assert.Empty(t, synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateStopped}), "autoStart false: never ran")
	assert.Empty(t, synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateDisconnected}), "a remote server not connected, for no error, is stopped")
	assert.Equal(t, []string{"MCPServerStarting: MCPServer git service is starting up", "MCPServerRestarting: MCPServer git service is restarting"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateStarting}))
	assert.Equal(t, []string{"MCPServerStarted: MCPServer git service started successfully",
		"MCPServerToolsDiscovered: MCPServer git tools discovered and registered successfully"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning}))
	assert.Empty(t, synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning}), "a resync: nothing new")
	assert.Equal(t, []string{"MCPServerToolsUnavailable: MCPServer git tools became unavailable",
		"MCPServerFailed: MCPServer git operation failed: exit status 1"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateFailed, LastError: "exit status 1\nstderr: …"}))
	assert.Empty(t, tell(tr.Translate(events.ResourceFailed{Meta: meta(), Key: srv, Error: "backoff"})), "still failed")
	assert.Equal(t, []string{"MCPServerStarted: MCPServer git service started successfully",
		"MCPServerToolsDiscovered: MCPServer git tools discovered and registered successfully"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning, RestartCount: 1}))
	assert.Equal(t, []string{"MCPServerRestarting: MCPServer git service is restarting",
		"MCPServerStarted: MCPServer git service started successfully",
		"MCPServerToolsDiscovered: MCPServer git tools discovered and registered successfully"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning, RestartCount: 2}), "a crash and restart between two looks")
	assert.Equal(t, []string{"MCPServerToolsUnavailable: MCPServer git tools became unavailable",
		"MCPServerHealthCheckFailed: MCPServer git health check failed: ping unanswered"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateDisconnected, LastError: "ping unanswered", RestartCount: 2}))
	assert.Empty(t, synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateConnecting, RestartCount: 2}), "a reconnect attempt")
	assert.Empty(t, synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateDisconnected, LastError: "refused", RestartCount: 2}),
		"refused again: no new transition")
	assert.Equal(t, []string{"MCPServerAuthRequired: MCPServer git requires OAuth authentication to connect"},
		synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateAuthRequired, RestartCount: 2}))
	synced(v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateConnected, RestartCount: 2})
	var gone []string
	for _, e := range tr.Translate(events.ResourceSynced{Meta: meta(), Key: srv, Deleted: true}) {
		gone = append(gone, string(e.Reason))
	}
	assert.Equal(t, []string{"MCPServerStopped", "MCPServerToolsUnavailable"}, gone, "a running server deleted is stopped")
}
