package resources

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// The warnings of a document reach its entry while it is the definition
// in force: set with it, replaced by the next good version's, kept while a
// broken version is not in force, and forgotten with the entry.
func TestWarningsReachTheEntry(t *testing.T) {
	ix := New()
	a, b := events.NewKey("Workflow", "", "a"), events.NewKey("Workflow", "", "b")
	warned := []string{"workflows/a.yaml:6: spec.input_schema: unknown field, ignored"}
	entry := func(k events.Key) Entry {
		t.Helper()
		e, ok := ix.Get(k)
		require.True(t, ok)
		return e
	}

	changes := ix.SetFile("workflows/a.yaml", []Doc{{Key: a, Object: "a1", Hash: "h1", Warnings: warned}}, nil, a)
	require.Len(t, changes, 1)
	assert.Equal(t, warned, entry(a).Warnings)

	// The same document read again: no change, the same warnings.
	assert.Empty(t, ix.SetFile("workflows/a.yaml", []Doc{{Key: a, Object: "a1", Hash: "h1", Warnings: warned}}, nil, a))
	assert.Equal(t, warned, entry(a).Warnings)

	// A broken version: the last good one stays in force, with its warnings.
	ix.SetFile("workflows/a.yaml", []Doc{{Key: a, Err: errors.New("broken"), Hash: "h2", Warnings: []string{"other"}}}, nil, a)
	assert.Equal(t, "a1", entry(a).Object)
	assert.Equal(t, warned, entry(a).Warnings)

	// A good version without warnings clears them.
	changes = ix.SetFile("workflows/a.yaml", []Doc{{Key: a, Object: "a3", Hash: "h3"}}, nil, a)
	require.Len(t, changes, 1)
	assert.Nil(t, entry(a).Warnings)
	assert.Empty(t, ix.warnings)

	// Another file: each entry has its own.
	ix.SetFile("workflows/ab.yaml", []Doc{
		{Key: b, Object: "b1", Hash: "hb", Warnings: []string{"workflows/ab.yaml:3: spec.x: unknown field, ignored"}},
	}, nil, b)
	assert.Equal(t, []string{"workflows/ab.yaml:3: spec.x: unknown field, ignored"}, entry(b).Warnings)
	assert.Nil(t, entry(a).Warnings)

	ix.RemoveFile("workflows/ab.yaml")
	_, ok := ix.Get(b)
	assert.False(t, ok)
	assert.Empty(t, ix.warnings, "a deleted entry's warnings are forgotten")
}
