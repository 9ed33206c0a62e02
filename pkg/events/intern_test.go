package events_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// A key keeps its handle while held; a released handle goes to the next new
// key; an emptied table that a burst grew is dropped.
func TestInternerHandlesAreReusedAndTheTableShrinks(t *testing.T) {
	var in events.Interner
	a, b := events.NewKey("Workflow", "", "a"), events.NewKey("Workflow", "", "b")
	ha, added := in.Intern(a)
	require.True(t, added)
	again, added := in.Intern(a)
	assert.False(t, added)
	assert.Equal(t, ha, again)
	hb, _ := in.Intern(b)
	assert.NotEqual(t, ha, hb)
	assert.Equal(t, b, in.Key(hb))

	assert.False(t, in.Release(ha))
	assert.False(t, in.Held(ha))
	_, ok := in.Lookup(a)
	assert.False(t, ok)
	c, _ := in.Intern(events.NewKey("Workflow", "", "c"))
	assert.Equal(t, ha, c, "the released handle is reused")
	assert.Equal(t, 2, in.Len())
	assert.Equal(t, 2, in.Cap())

	var burst events.Interner
	var hs []events.Handle
	for i := range 2000 {
		h, _ := burst.Intern(events.NewKey("Workflow", "", string(rune('a'+i%26))+string(rune(i))))
		hs = append(hs, h)
	}
	reset := false
	for _, h := range hs {
		reset = burst.Release(h)
	}
	assert.True(t, reset, "the last release drops the burst's table")
	assert.Equal(t, 0, burst.Cap())
}
