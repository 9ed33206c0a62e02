package events_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// samples holds one fully populated value of every catalogue event.
func samples() []events.Event {
	meta := events.Meta{Time: time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC), CorrelationID: "c0ffee"}
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
		events.ResourceFailed{Meta: meta, Key: key, Error: "boom", Attempt: 3, Duration: time.Second, Permanent: false,
			NextRetry: time.Date(2026, 11, 21, 10, 0, 4, 0, time.UTC)},
		events.StatusSynced{Meta: meta, Key: key, Category: events.StatusWritten},
		events.StatusSyncFailed{Meta: meta, Key: key, Category: "timeout", Error: "deadline", Attempt: 1},
		events.ServiceStateChanged{Meta: meta, Key: key, State: "Failed", PreviousState: "Running", Error: "exit 1"},
		events.BecameLeader{Meta: meta, Identity: "pod-a"},
		events.LostLeadership{Meta: meta, Identity: "pod-a"},
	}
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
		"BecameLeader", "IndexSynchronized", "LostLeadership", "ReconciliationStarted",
		"ReconciliationTriggered", "ResourceChanged", "ResourceFailed", "ResourceSynced",
		"ServiceStateChanged", "StatusSyncFailed", "StatusSynced",
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

func TestMergeTriggersUnitesKeys(t *testing.T) {
	a := events.NewKey("Workflow", "", "a")
	b := events.NewKey("Workflow", "", "b")
	older := events.ReconciliationTriggered{Meta: events.Meta{CorrelationID: "old"}, Reason: events.ReasonChange,
		Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: a, CorrelationID: "1"})}
	newer := events.ReconciliationTriggered{Meta: events.Meta{CorrelationID: "new"}, Reason: events.ReasonResync,
		Keys: events.NewTriggeredKeys(events.TriggeredKey{Key: b, CorrelationID: "2"}, events.TriggeredKey{Key: a, CorrelationID: "3"})}

	merged := events.MergeTriggers(older, newer)
	assert.Equal(t, events.ReasonResync, merged.Reason)
	assert.Equal(t, "new", merged.CorrelationID)
	assert.Equal(t, []events.TriggeredKey{{Key: a, CorrelationID: "3"}, {Key: b, CorrelationID: "2"}}, collect(merged.Keys))
	assert.Equal(t, 1, older.Keys.Len(), "merging leaves its inputs alone")
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
