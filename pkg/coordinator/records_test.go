package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
)

// A handle that the queue or a worker holds is never given back, or
// another key could get it while the old holder still acts on it, and the
// queue's one-worker-per-item rule would then guard the wrong key. Nor is
// one whose key has work, a tombstone, or a resource that exists.
func TestAHandleIsReleasedOnlyOnceNothingHoldsOrNeedsIt(t *testing.T) {
	c := &Coordinator{}
	a := events.NewKey("Workflow", "", "a")
	h, st := c.record(a)
	for _, keep := range []func(*keyState){
		func(st *keyState) { st.held = true },
		func(st *keyState) { st.queued = true },
		func(st *keyState) { st.pending = runtimeTrigger },
		func(st *keyState) { st.failed = true },
		func(st *keyState) { st.exists = true },
		func(st *keyState) { st.delayed().wakeAt = time.Unix(1, 0) },
	} {
		*st = keyState{}
		keep(st)
		c.releaseIfIdle(h)
		assert.True(t, c.handles.Held(h))
	}
	*st = keyState{}
	c.releaseIfIdle(h)
	assert.False(t, c.handles.Held(h), "released once nothing holds or needs it")
	b, _ := c.record(events.NewKey("Workflow", "", "b"))
	assert.Equal(t, h, b, "and given to the next key")
}

// A key keeps a delay only while it has a wake scheduled or a failure
// streak: one at rest keeps none.
func TestARecordKeepsItsDelayOnlyWhileItHasOne(t *testing.T) {
	var st keyState
	st.delayed().wakeAt = time.Unix(1, 0)
	st.delayed().backoff.failures = 2
	st.clearWake()
	assert.Equal(t, 2, st.failures(), "the streak outlives the wake")
	assert.True(t, st.wakeAt().IsZero())
	st.resetBackoff()
	assert.Nil(t, st.delay, "neither: no delay")

	st.delayed().wakeAt = time.Unix(1, 0)
	st.resetBackoff()
	assert.Equal(t, time.Unix(1, 0), st.wakeAt(), "the wake outlives the streak")
	st.clearWake()
	assert.Nil(t, st.delay)
}
