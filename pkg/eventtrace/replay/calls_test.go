package replay_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
)

// A recording holds the router's counts of calls; no stage reads or
// emits them, so they are not fed and the replay is the one without them.
func TestCountedCallsInATraceChangeNothingOfItsReplay(t *testing.T) {
	counted := func(m events.Meta) events.Event {
		return events.ToolCallsCounted{Meta: m, Key: keyA, Start: m.Time.Add(-10 * time.Second), Interval: 10 * time.Second, Calls: 7, Errors: 1}
	}
	base := []entry{
		{0, indexSynced},
		{time.Second, changed(keyA, events.OperationCreate)},
		{1500 * time.Millisecond, changed(keyB, events.OperationCreate)},
	}
	var plain, with []string
	synctest.Test(t, func(t *testing.T) {
		got, err := replay.Replay(writeTrace(t, eventtrace.Config{Debounce: eventtrace.Duration(100 * time.Millisecond)}, base...), pipeline)
		require.NoError(t, err)
		plain = lines(t, got)
	})
	synctest.Test(t, func(t *testing.T) {
		tr := writeTrace(t, eventtrace.Config{Debounce: eventtrace.Duration(100 * time.Millisecond)},
			append(base, entry{1500 * time.Millisecond, counted}, entry{1500 * time.Millisecond, counted})...)
		got, err := replay.Replay(tr, pipeline)
		require.NoError(t, err)
		with = lines(t, got)
	})
	require.NotEmpty(t, plain)
	assert.Equal(t, plain, with)
}
