package events_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

// A key keeps its handle while held; a released handle goes to the next new
// key; a table that a burst grew is kept through a stream of large fills
// and dropped once a fill stays small.
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
	fill := func(n int) (reset bool) {
		var hs []events.Handle
		for i := range n {
			h, _ := burst.Intern(events.NewKey("Workflow", "", fmt.Sprint("k", i)))
			hs = append(hs, h)
		}
		for _, h := range hs {
			reset = burst.Release(h)
		}
		return reset
	}
	assert.False(t, burst.KeepsBurst(), "empty, and never grown")
	assert.False(t, fill(2000), "a large fill keeps the table")
	assert.Equal(t, 2000, burst.Cap())
	assert.True(t, burst.KeepsBurst())
	assert.False(t, fill(2000), "so does the next, of a stream")
	assert.Equal(t, 2000, burst.Cap(), "with its handles reused")
	assert.True(t, fill(3), "a small fill after the burst drops it")
	assert.Equal(t, 0, burst.Cap())
	assert.False(t, burst.KeepsBurst())
}

// The interner's own hash index against a Go map, through random interns
// and releases over few keys (so that probes collide, wrap and shift back)
// and many (so that it grows).
func TestInternerAgreesWithAMap(t *testing.T) {
	for _, keys := range []int{7, 3000} {
		var in events.Interner
		model := map[events.Key]events.Handle{}
		rng := rand.New(rand.NewPCG(1, uint64(keys)))
		for step := range 200_000 {
			k := events.NewKey("Workflow", "", fmt.Sprint("k", rng.IntN(keys)))
			if h, held := model[k]; held && rng.IntN(2) == 0 {
				in.Release(h)
				require.False(t, in.Held(h), "step %d: %s released", step, k)
				delete(model, k)
			} else {
				h, added := in.Intern(k)
				require.Equal(t, !held, added, "step %d: %s", step, k)
				if held {
					require.Equal(t, model[k], h, "step %d: %s changed handle", step, k)
				}
				model[k] = h
			}
			require.Equal(t, len(model), in.Len())
		}
		for k, h := range model {
			got, ok := in.Lookup(k)
			require.True(t, ok, "%s lost", k)
			require.Equal(t, h, got)
			require.Equal(t, k, in.Key(h))
			require.True(t, in.Held(h), "%s", k)
		}
	}
}

// The zero key is a key like any other: a coalescing mailbox's key
// function may give it.
func TestInternerHoldsTheZeroKey(t *testing.T) {
	var in events.InternerOf[string]
	h, added := in.Intern("")
	require.True(t, added)
	other, _ := in.Intern("x")
	assert.True(t, in.Held(h))
	got, ok := in.Lookup("")
	assert.True(t, ok)
	assert.Equal(t, h, got)
	in.Release(h)
	assert.False(t, in.Held(h))
	_, ok = in.Lookup("")
	assert.False(t, ok)
	assert.True(t, in.Held(other))
}

func TestInternerClearReleasesEveryHandleAtOnce(t *testing.T) {
	var in events.InternerOf[string]
	for i := range 100 {
		in.Intern(fmt.Sprint("k", i))
	}
	in.Clear()
	assert.Zero(t, in.Len())
	assert.Zero(t, in.Cap())
	_, ok := in.Lookup("k5")
	assert.False(t, ok, "a cleared key is still found")
	h, added := in.Intern("k7")
	assert.True(t, added)
	assert.Equal(t, events.Handle(0), h, "handles are given from 0 again")
	assert.Equal(t, "k7", in.Key(h))
}
