package events_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/events/eventstest"
)

// samples holds one fully populated value of every catalogue event.
func samples() []events.Event {
	return eventstest.Catalogue(events.Meta{Time: time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC), CorrelationID: "c0ffee"})
}

func TestEveryEventRoundTripsThroughJSON(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range samples() {
		t.Run(e.EventType(), func(t *testing.T) {
			data, err := events.Marshal(e)
			require.NoError(t, err)
			back, err := events.Unmarshal(data)
			require.NoError(t, err)
			assert.Equal(t, e, back)

			again, err := events.Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, string(data), string(again), "encoding is stable")
		})
		seen[e.EventType()] = true
	}
	for _, name := range events.Types() {
		assert.True(t, seen[name], "catalogue event %s has no round-trip sample", name)
	}
}

func TestEventTypeNamesAreStable(t *testing.T) {
	// Traces are recorded by these names; renaming one breaks every trace.
	assert.Equal(t, []string{
		"BecameLeader", "DefinitionValidated", "IndexSynchronized", "LostLeadership", "ReconciliationStarted",
		"ReconciliationTriggered", "ResourceChanged", "ResourceFailed", "ResourceSynced",
		"ServiceStateChanged", "StatusSyncFailed", "StatusSynced", "ToolCallsCounted",
		"WorkflowExecutionFinished", "WorkflowExecutionStarted", "WorkflowStepFinished", "WorkflowStepStarted",
	}, events.Types())
}

func TestUnmarshalRejectsUnknownTypesAndFields(t *testing.T) {
	_, err := events.Unmarshal([]byte(`{"type":"NoSuchEvent","event":{}}`))
	assert.ErrorContains(t, err, `unknown event type "NoSuchEvent"`)

	_, err = events.Unmarshal([]byte(`{"type":"BecameLeader","event":{"identity":"a","color":"red"}}`))
	assert.ErrorContains(t, err, `unknown field "color"`)

	_, err = events.Unmarshal([]byte(`{"type":"BecameLeader"}`))
	assert.ErrorContains(t, err, "no payload")

	_, err = events.Unmarshal([]byte(`not json`))
	assert.Error(t, err)
}

func TestKeysAreCanonical(t *testing.T) {
	assert.Equal(t, events.NewKey("MCPServer", "default", "git"), events.NewKey("MCPServer", "", "git"))
	assert.Equal(t, "MCPServer/default/git", events.Key{Kind: "MCPServer", Name: "git"}.String())

	var k events.Key
	require.NoError(t, json.Unmarshal([]byte(`{"kind":"Workflow","name":"w"}`), &k))
	assert.Equal(t, "default", k.Namespace)

	parsed, err := events.ParseKey("Workflow/w")
	require.NoError(t, err)
	assert.Equal(t, events.NewKey("Workflow", "", "w"), parsed)
	parsed, err = events.ParseKey("Workflow/team/w")
	require.NoError(t, err)
	assert.Equal(t, events.NewKey("Workflow", "team", "w"), parsed)
	for _, bad := range []string{"", "w", "/w", "a/b/c/d", "Workflow/team/"} {
		_, err := events.ParseKey(bad)
		assert.Error(t, err, bad)
	}
}

func TestTriggeredKeysAreImmutableAndDeduplicated(t *testing.T) {
	a := events.NewKey("MCPServer", "", "a")
	b := events.NewKey("MCPServer", "", "b")
	input := []events.TriggeredKey{{Key: a, CorrelationID: "1"}, {Key: b, CorrelationID: "2"}, {Key: events.Key{Kind: "MCPServer", Name: "a"}, CorrelationID: "3"}}
	keys := events.NewTriggeredKeys(input...)
	input[0].CorrelationID = "changed after construction"

	require.Equal(t, 2, keys.Len())
	assert.Equal(t, events.TriggeredKey{Key: a, CorrelationID: "3"}, keys.At(0))
	assert.Equal(t, events.TriggeredKey{Key: b, CorrelationID: "2"}, keys.At(1))

	out := keys.Keys()
	out[0] = b
	assert.Equal(t, a, keys.At(0).Key, "Keys returns a copy")
}

func TestTriggeredKeysBuilderMatchesNewTriggeredKeys(t *testing.T) {
	a := events.NewKey("Workflow", "", "a")
	b := events.NewKey("Workflow", "team", "b")
	c := events.NewKey("MCPServer", "", "c")
	input := []events.TriggeredKey{
		{Key: events.Key{Kind: "Workflow", Name: "a"}, CorrelationID: "1"}, // not canonical
		{Key: b, CorrelationID: "2"},
		{Key: a, CorrelationID: "3"}, // a again: keeps its place, takes "3"
		{Key: c, CorrelationID: "4"},
		{Key: b, CorrelationID: "5"},
	}

	var builder events.TriggeredKeysBuilder
	assert.Equal(t, events.NewTriggeredKeys(), builder.Build(), "an empty builder builds the empty list")
	builder.Add(input[0])
	builder.AddAll(events.NewTriggeredKeys(input[1:3]...))
	for _, tk := range input[3:] {
		builder.Add(tk)
	}
	built := builder.Build()
	assert.Equal(t, events.NewTriggeredKeys(input...), built)
	assert.Equal(t, []events.TriggeredKey{{Key: a, CorrelationID: "3"}, {Key: b, CorrelationID: "5"}, {Key: c, CorrelationID: "4"}}, collect(built))
	assert.Equal(t, 3, builder.Len())

	builder.Add(events.TriggeredKey{Key: a, CorrelationID: "after build"})
	builder.Add(events.TriggeredKey{Key: events.NewKey("Workflow", "", "d"), CorrelationID: "6"})
	assert.Equal(t, events.NewTriggeredKeys(input...), built, "a built list does not change as the builder goes on")
	assert.Equal(t, 4, builder.Build().Len())
}

func TestTriggeredKeysDedupeTheSameWayAtAnySize(t *testing.T) {
	// Small lists dedupe by a scan, larger ones by an index built on the
	// way: sizes on both sides of the switch, with duplicates before and
	// after it, against a plain model of "first place, last correlation".
	for _, distinct := range []int{1, 2, 8, 9, 10, 40} {
		t.Run(fmt.Sprint(distinct), func(t *testing.T) {
			var input []events.TriggeredKey
			for round := range 3 {
				for i := range distinct {
					name := fmt.Sprint((i*7 + round) % distinct) // each round in another order
					input = append(input, events.TriggeredKey{Key: events.Key{Kind: "Workflow", Name: name}, CorrelationID: fmt.Sprint(round, "-", i)})
				}
			}
			var want []events.TriggeredKey
			place := map[events.Key]int{}
			for _, tk := range input {
				tk.Key = tk.Key.Canonical()
				if i, ok := place[tk.Key]; ok {
					want[i].CorrelationID = tk.CorrelationID
					continue
				}
				place[tk.Key] = len(want)
				want = append(want, tk)
			}

			assert.Equal(t, want, collect(events.NewTriggeredKeys(input...)))
			var builder events.TriggeredKeysBuilder
			for _, tk := range input {
				builder.Add(tk)
			}
			assert.Equal(t, want, collect(builder.Build()))
			assert.Equal(t, distinct, builder.Len())
		})
	}
}

func TestTriggerMergerFoldsTriggersOfOneReason(t *testing.T) {
	a := events.NewKey("Workflow", "", "a")
	b := events.NewKey("Workflow", "", "b")
	c := events.NewKey("Workflow", "", "c")
	first := events.ReconciliationTriggered{Meta: events.Meta{CorrelationID: "old"}, Reason: events.ReasonChange,
		Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: a, CorrelationID: "1"}, events.TriggeredKey{Key: b, CorrelationID: "2"})}
	second := events.ReconciliationTriggered{Meta: events.Meta{CorrelationID: "mid"}, Reason: events.ReasonChange,
		Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: c, CorrelationID: "3"}, events.TriggeredKey{Key: a, CorrelationID: "4"})}
	third := events.ReconciliationTriggered{Meta: events.Meta{CorrelationID: "new"}, Reason: events.ReasonChange,
		Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: b, CorrelationID: "5"})}
	firstBefore, secondBefore := collect(first.Keys), collect(second.Keys)

	m := events.NewTriggerMerger(first)
	m.Add(second)
	m.Add(third)
	merged, ok := m.Result().(events.ReconciliationTriggered)
	require.True(t, ok)

	assert.Equal(t, third.Meta, merged.Meta, "the newest trigger's metadata")
	assert.Equal(t, events.ReasonChange, merged.Reason)
	var all []events.TriggeredKey
	for _, e := range []events.ReconciliationTriggered{first, second, third} {
		all = append(all, collect(e.Keys)...)
	}
	assert.Equal(t, events.NewTriggeredKeys(all...), merged.Keys, "the keys NewTriggeredKeys makes of all the triggers' keys")
	assert.Equal(t, []events.TriggeredKey{{Key: a, CorrelationID: "4"}, {Key: b, CorrelationID: "5"}, {Key: c, CorrelationID: "3"}}, collect(merged.Keys))
	assert.Equal(t, firstBefore, collect(first.Keys), "folding never changes the first trigger's shared keys")
	assert.Equal(t, secondBefore, collect(second.Keys), "nor a later one's")

	m.Add(events.ReconciliationTriggered{Reason: events.ReasonChange,
		Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: a, CorrelationID: "later"}, events.TriggeredKey{Key: events.NewKey("Workflow", "", "d")})})
	assert.Equal(t, []events.TriggeredKey{{Key: a, CorrelationID: "4"}, {Key: b, CorrelationID: "5"}, {Key: c, CorrelationID: "3"}}, collect(merged.Keys),
		"a result is immutable: later folds do not reach it")
}

func TestTriggerMergerCopiesEachKeyOnce(t *testing.T) {
	// A burst of single-key triggers folds in amortised constant work per
	// trigger. Rebuilding the union on every fold (NewTriggeredKeys of
	// older+newer) allocates a list and an index per trigger.
	const n = 10_000
	triggers := make([]events.Event, n) // boxed up front: boxing allocates
	for i := range triggers {
		triggers[i] = events.ReconciliationTriggered{Reason: events.ReasonChange,
			Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: events.NewKey("Workflow", "", fmt.Sprint(i)), CorrelationID: "c"})}
	}
	m := events.NewTriggerMerger(triggers[0].(events.ReconciliationTriggered))
	next := 1
	// AllocsPerRun makes one warm-up run and truncates the mean.
	perFold := testing.AllocsPerRun(n-2, func() { m.Add(triggers[next]); next++ })
	assert.Zero(t, perFold, "allocations per fold, amortised")
	assert.Equal(t, n, m.Result().(events.ReconciliationTriggered).Keys.Len())
}

func TestTriggerMergerRejectsOtherEvents(t *testing.T) {
	m := events.NewTriggerMerger(events.ReconciliationTriggered{})
	assert.PanicsWithValue(t, "events: TriggerMerger.Add(events.BecameLeader): only ReconciliationTriggered events fold into a trigger",
		func() { m.Add(events.BecameLeader{}) })
}

func collect(keys events.TriggeredKeys) []events.TriggeredKey {
	var out []events.TriggeredKey
	for tk := range keys.All() {
		out = append(out, tk)
	}
	return out
}

func TestNewMetaStartsOrContinuesAChain(t *testing.T) {
	fresh := events.NewMeta("")
	assert.Len(t, fresh.CorrelationID, 16)
	assert.NotEqual(t, fresh.CorrelationID, events.NewMeta("").CorrelationID)
	assert.Equal(t, "abc", events.NewMeta("abc").CorrelationID)
	assert.Equal(t, time.UTC, fresh.Time.Location())
}
