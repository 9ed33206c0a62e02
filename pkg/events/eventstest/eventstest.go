// Package eventstest holds test support for code that handles musterd's
// events: one fully populated event of every catalogue type.
//
// Place: beside the events leaf; tests of any package may use it.
package eventstest

import (
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// Catalogue returns one fully populated event of every catalogue type, in
// the catalogue's order, each with meta. A test that round-trips events
// through a codec covers every type with it; events' own test checks that
// it does cover every registered type.
func Catalogue(meta events.Meta) []events.Event {
	key := events.NewKey("MCPServer", "", "git")
	return []events.Event{
		events.ResourceChanged{Meta: meta, Key: key, Operation: events.OperationUpdate, Source: events.SourceFilesystem,
			FilePath: "mcpservers/git.yaml", ContentHash: "sha256:ab", Generation: 3},
		events.IndexSynchronized{Meta: meta, Source: events.SourceKubernetes},
		events.ReconciliationTriggered{Meta: meta, Reason: events.ReasonRefractoryEnd, Keys: events.NewTriggeredKeys(
			events.TriggeredKey{Key: key, CorrelationID: "a"},
			events.TriggeredKey{Key: events.NewKey("Workflow", "team", "deploy"), CorrelationID: "b"})},
		events.ReconciliationStarted{Meta: meta, Key: key, Attempt: 2},
		events.ResourceSynced{Meta: meta, Key: key, Attempt: 1, Duration: 1500 * time.Millisecond, Deleted: true, RequeueAfter: time.Minute},
		events.ResourceFailed{Meta: meta, Key: key, Error: "boom <&> \"quoted\"", Attempt: 3, Duration: time.Second,
			NextRetry: time.Date(2026, 11, 21, 10, 0, 4, 0, time.UTC)},
		events.StatusSynced{Meta: meta, Key: key, Category: events.StatusWritten},
		events.StatusSyncFailed{Meta: meta, Key: key, Category: "timeout", Error: "deadline", Attempt: 1},
		events.ServiceStateChanged{Meta: meta, Key: key, State: "Failed", PreviousState: "Running", Error: "exit 1"},
		events.BecameLeader{Meta: meta, Identity: "pod-a"},
		events.LostLeadership{Meta: meta, Identity: "pod-a"},
		events.WorkflowExecutionStarted{Meta: meta, Key: events.NewKey("Workflow", "", "deploy"), ExecutionID: "0b5e7c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"},
		events.WorkflowExecutionFinished{Meta: meta, Key: events.NewKey("Workflow", "", "deploy"), ExecutionID: "0b5e7c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b",
			Status: "failed", Duration: 2500 * time.Millisecond, Error: "workflow deploy, step build: boom"},
		events.WorkflowStepStarted{Meta: meta, Key: events.NewKey("Workflow", "", "deploy"), ExecutionID: "0b5e7c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b",
			StepID: "build", Tool: "x_git_status", Condition: "true"},
		events.WorkflowStepFinished{Meta: meta, Key: events.NewKey("Workflow", "", "deploy"), ExecutionID: "0b5e7c1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b",
			StepID: "build", Tool: "x_git_status", Status: events.StepFailed, Duration: 30 * time.Millisecond, Error: "boom",
			AllowFailure: true, Condition: "true"},
		events.DefinitionValidated{Meta: meta, Key: events.NewKey("Workflow", "", "deploy"), Request: "create", Error: "duplicate step ID 'a' found"},
		events.ToolCallsCounted{Meta: meta, Key: events.NewKey("MCPServer", "", "git"), Start: time.Date(2026, 11, 21, 9, 59, 50, 0, time.UTC),
			Interval: 10 * time.Second, Calls: 12, Errors: 1},
	}
}
