package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
)

// chain finds, from index from on, the ResourceChanged of key, the
// ReconciliationTriggered that carries its correlation ID for key and the
// ResourceSynced of key with that ID, in that order. It returns the index
// of the ResourceSynced, or -1.
func chain(entries []eventtrace.Entry, from int, key events.Key) (correlationID string, synced int) {
	const (
		wantChange = iota
		wantTrigger
		wantSynced
	)
	step := wantChange
	for i := from; i < len(entries); i++ {
		switch e := entries[i].Event.(type) {
		case events.ResourceChanged:
			if step == wantChange && e.Key == key {
				correlationID, step = e.CorrelationID, wantTrigger
			}
		case events.ReconciliationTriggered:
			for tk := range e.Keys.All() {
				if step == wantTrigger && tk.Key == key && tk.CorrelationID == correlationID {
					step = wantSynced
				}
			}
		case events.ResourceSynced:
			if step == wantSynced && e.Key == key && e.CorrelationID == correlationID {
				return correlationID, i
			}
		}
	}
	return "", -1
}

func TestE2ERecordWritesEveryEventOfTheRunToATrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	e := startFS(t, "-record", path)
	e.write(t, "workflows/deploy.yaml", workflowYAML("deploy", "x_a_one"))
	e.waitWorkflow(t, "deploy", "Synced", "x_a_one")
	e.write(t, "workflows/deploy.yaml", workflowYAML("deploy", "x_a_two"))
	e.waitWorkflow(t, "deploy", "Synced", "x_a_two")

	// Stopped at once: the last ResourceSynced was published just before.
	e.stopWith(t, syscall.SIGTERM, e2eDeadline)

	tr, err := eventtrace.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "dev", tr.Header.Musterd)
	assert.Equal(t, eventtrace.Config{
		Debounce: eventtrace.Duration(50 * time.Millisecond), Workers: 2, ReconcileTimeout: eventtrace.Duration(5*time.Minute + 30*time.Second),
		BackoffBase: eventtrace.Duration(time.Second), BackoffMax: eventtrace.Duration(5 * time.Minute), Jitter: 0.1, MaxRetries: 5,
		Resync: eventtrace.Duration(10 * time.Minute),
	}, tr.Header.Config)

	key := events.NewKey("Workflow", "", "deploy")
	created, first := chain(tr.Entries, 0, key)
	require.NotEqual(t, -1, first, "the create's ResourceChanged → ReconciliationTriggered → ResourceSynced, one correlation ID")
	updated, second := chain(tr.Entries, first+1, key)
	require.NotEqual(t, -1, second, "and the update's")
	assert.NotEqual(t, created, updated)

	var lastSynced events.ResourceSynced
	for _, entry := range tr.Entries {
		if s, ok := entry.Event.(events.ResourceSynced); ok && s.Key == key {
			lastSynced = s
		}
	}
	assert.Equal(t, updated, lastSynced.CorrelationID, "the last ResourceSynced before SIGTERM is in the trace")
	assert.Equal(t, tr.Entries[second].Event, lastSynced)
	var previous time.Duration
	for i, entry := range tr.Entries {
		want := max(entry.Event.Metadata().Time.Sub(tr.Header.Start), previous)
		require.Equal(t, want, entry.At, "entry %d: an offset is its event's time from the start, never below the previous offset", i)
		previous = want
	}
}

func TestRecordComesFromConfigYAMLUnlessTheFlagSaysOtherwise(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("record: /var/lib/musterd/run.trace\n"), 0o644))
	cfg, notes, err := parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, notes, "record is a key musterd uses")
	assert.Equal(t, "/var/lib/musterd/run.trace", cfg.record)

	cfg, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-record", "here.trace"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "here.trace", cfg.record)
}

func TestRecordToAFileThatCannotBeCreatedIsAnError(t *testing.T) {
	cfg := defaultDaemonConfig()
	cfg.record = filepath.Join(t.TempDir(), "missing", "run.trace")
	err := serve(t.Context(), cfg, slog.New(slog.DiscardHandler))
	assert.ErrorContains(t, err, "-record: open "+cfg.record+": no such file or directory")
}
