package musterevents_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/musterevents"
)

// startLog runs a log of a new bus for the test.
func startLog(t *testing.T, opts musterevents.LogOptions) (*bus.Bus, *musterevents.Log) {
	b := bus.New(bus.Options{})
	l := musterevents.NewLog(b, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	<-l.SubscriptionReady()
	b.Start()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done); b.Close() })
	bus.Publish(b, events.IndexSynchronized{Meta: events.NewMeta(""), Source: events.SourceFilesystem})
	return b, l
}

func reasons(list []musterevents.Event) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, e.Name+" "+string(e.Reason))
	}
	return out
}

func TestLogQueriesNewestFirstByNameTypeKindAndLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, l := startLog(t, musterevents.LogOptions{})
		change := func(kind, name string, op events.Operation) {
			bus.Publish(b, events.ResourceChanged{Meta: events.NewMeta(""), Key: events.NewKey(kind, "", name), Operation: op, Source: events.SourceFilesystem})
			time.Sleep(time.Second)
		}
		change("Workflow", "a", events.OperationCreate)
		change("MCPServer", "s", events.OperationCreate)
		change("Workflow", "b", events.OperationCreate)
		bus.Publish(b, events.DefinitionValidated{Meta: events.NewMeta(""), Key: events.NewKey("Workflow", "", "a"), Request: "update", Error: "bad"})
		// The times the filters below are relative to: now, before any
		// query, since a query that waits for the log to catch up may let
		// the bubble's clock run on (catchUp's timer).
		start := time.Now()
		ctx := context.Background()
		// No synctest.Wait: Query itself waits for what was published.
		assert.Equal(t, []string{"a WorkflowValidationFailed", "b WorkflowCreated", "s MCPServerCreated", "a WorkflowCreated"},
			reasons(l.Query(ctx, musterevents.Filter{}, 0)), "newest first, as muster lists")
		assert.Equal(t, []string{"a WorkflowValidationFailed", "a WorkflowCreated"}, reasons(l.Query(ctx, musterevents.Filter{Name: "a"}, 0)))
		assert.Equal(t, []string{"a WorkflowCreated"}, reasons(l.Query(ctx, musterevents.Filter{Name: "a", Type: "normal"}, 0)))
		assert.Equal(t, []string{"a WorkflowValidationFailed"}, reasons(l.Query(ctx, musterevents.Filter{Type: "Warning"}, 0)))
		assert.Equal(t, []string{"s MCPServerCreated"}, reasons(l.Query(ctx, musterevents.Filter{Kind: "MCPServer"}, 0)))
		assert.Empty(t, l.Query(ctx, musterevents.Filter{Kind: "DoesNotExist"}, 0))
		assert.Equal(t, []string{"a WorkflowValidationFailed", "b WorkflowCreated"}, reasons(l.Query(ctx, musterevents.Filter{Kind: "Workflow"}, 2)), "the newest limit")
		assert.Equal(t, []string{"a WorkflowValidationFailed", "b WorkflowCreated"},
			reasons(l.Query(ctx, musterevents.Filter{Since: start.Add(-1500 * time.Millisecond)}, 0)))
		assert.Equal(t, []string{"a WorkflowCreated"},
			reasons(l.Query(ctx, musterevents.Filter{Until: start.Add(-2500 * time.Millisecond)}, 0)))
	})
}

func TestLogKeepsTheLatestLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, l := startLog(t, musterevents.LogOptions{Limit: 3})
		for i := range 5 {
			bus.Publish(b, events.ResourceChanged{Meta: events.NewMeta(""), Key: events.NewKey("Workflow", "", fmt.Sprint(i)),
				Operation: events.OperationDelete, Source: events.SourceFilesystem})
		}
		assert.Equal(t, []string{"4 WorkflowDeleted", "3 WorkflowDeleted", "2 WorkflowDeleted"}, reasons(l.Query(context.Background(), musterevents.Filter{}, 0)))
	})
}

func TestFollowStreamsWhatIsRecordedAfterIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, l := startLog(t, musterevents.LogOptions{})
		wf := events.NewKey("Workflow", "", "w")
		bus.Publish(b, events.WorkflowExecutionStarted{Meta: events.NewMeta(""), Key: wf, ExecutionID: "before"})
		synctest.Wait()
		got := make(chan musterevents.Event, 10)
		stop, dropped := l.Follow(context.Background(), musterevents.Filter{Name: "w"}, func(e musterevents.Event) { got <- e })
		bus.Publish(b, events.WorkflowExecutionStarted{Meta: events.NewMeta(""), Key: events.NewKey("Workflow", "", "other"), ExecutionID: "x"})
		bus.Publish(b, events.WorkflowStepStarted{Meta: events.NewMeta(""), Key: wf, ExecutionID: "after", StepID: "s", Tool: "t"})
		synctest.Wait()
		require.Len(t, got, 1)
		assert.Equal(t, "Workflow w step s started (tool: t)", (<-got).Message)
		stop()
		bus.Publish(b, events.WorkflowStepStarted{Meta: events.NewMeta(""), Key: wf, ExecutionID: "after", StepID: "s2", Tool: "t"})
		synctest.Wait()
		assert.Empty(t, got, "stopped")
		assert.Zero(t, dropped())
	})
}
