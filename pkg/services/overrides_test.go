package services

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

var key = events.NewKey("MCPServer", "", "git")

func TestRecordsSurviveARestartAndEndWithAChangedDefinition(t *testing.T) {
	path := filepath.Join(t.TempDir(), "overrides", "mcpservers.json")
	o, err := New(File{Path: path})
	require.NoError(t, err)
	since := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	require.NoError(t, o.Set(Record{Key: key, State: StateStopped, Reason: "maintenance", Hash: "h1", Since: since, CorrelationID: "c1"}))
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// musterd restarts: the stop holds for the same definition.
	o, err = New(File{Path: path})
	require.NoError(t, err)
	ov := o.Override(key, "h1")
	assert.True(t, ov.Stop)
	assert.Equal(t, "maintenance", ov.Reason)
	r, ok := o.Get(key)
	require.True(t, ok)
	assert.Equal(t, since, r.Since)

	// A restart request is not carried out while it is stopped.
	o.Restart(key, "r1")
	assert.Empty(t, o.Override(key, "h1").Restart)

	// The definition changed: the stop ends, and the end is persisted.
	assert.False(t, o.Override(key, "h2").Stop)
	o, err = New(File{Path: path})
	require.NoError(t, err)
	assert.Empty(t, o.List())
}

func TestARestartIsCarriedOutOnce(t *testing.T) {
	o, err := New(nil)
	require.NoError(t, err)
	o.Restart(key, "r1")
	assert.Equal(t, "r1", o.Override(key, "h").Restart)
	o.Restarted(key, "r0") // an older request's acknowledgement changes nothing
	assert.Equal(t, "r1", o.Override(key, "h").Restart)
	o.Restarted(key, "r1")
	assert.Empty(t, o.Override(key, "h").Restart)
	o.Restart(key, "r2")
	assert.Empty(t, o.Override(key, "").Restart, "a deletion drops a pending restart")
	assert.Empty(t, o.Override(key, "h").Restart)
}

type failing struct{}

func (failing) Load() ([]Record, error) { return nil, nil }
func (failing) Save([]Record) error     { return errors.New("disk full") }

func TestARequestThatCannotBePersistedChangesNothing(t *testing.T) {
	o, err := New(failing{})
	require.NoError(t, err)
	require.ErrorContains(t, o.Set(Record{Key: key, State: StateStopped, Hash: "h"}), "disk full")
	assert.False(t, o.Override(key, "h").Stop, "a stop that would not survive a restart is not made")
}

func TestACorruptFileIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "o.json")
	require.NoError(t, os.WriteFile(path, []byte("{not json"), 0o600))
	_, err := New(File{Path: path})
	require.ErrorContains(t, err, path)
}
