package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/events"
)

// The delays come out due ones only, earliest first and, at one instant,
// first delayed first; a key delayed again, or no longer delayed, leaves a
// stale entry that never comes out; and re-delays do not grow the heap
// without bound.
func TestDelaysComeOutDueInOrderAndStaleOnesNever(t *testing.T) {
	c := &Coordinator{}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	delay := func(name string, after time.Duration) {
		h, st := c.record(events.NewKey("Workflow", "", name))
		c.delays++
		d := st.delayed()
		d.wakeAt, d.wakeSeq = t0.Add(after), c.delays
		c.pushWakeLocked(h, d.wakeAt, c.delays)
	}
	names := func(due []events.Handle) (out []string) {
		for _, h := range due {
			out = append(out, c.handles.Key(h).Name)
		}
		return out
	}

	delay("late", 3*time.Second)
	delay("b", time.Second)
	delay("a", time.Second) // due with b, delayed after it
	delay("moved", time.Second)
	delay("moved", 5*time.Second) // its 1 s entry is stale now
	delay("cleared", time.Second)
	_, cleared, _ := c.lookup(events.NewKey("Workflow", "", "cleared"))
	cleared.clearWake() // triggered meanwhile

	due, next := c.takeDueLocked(t0.Add(time.Second))
	assert.Equal(t, []string{"b", "a"}, names(due))
	assert.Equal(t, t0.Add(3*time.Second), next)
	due, next = c.takeDueLocked(t0.Add(10 * time.Second))
	assert.Equal(t, []string{"late", "moved"}, names(due))
	assert.True(t, next.IsZero())

	for range 1000 {
		delay("busy", time.Minute)
	}
	assert.LessOrEqual(t, len(c.wakes), 2*c.handles.Len()+64, "stale entries are dropped")
	due, _ = c.takeDueLocked(t0.Add(time.Hour))
	assert.Equal(t, []string{"busy"}, names(due), "one live entry among the re-delays")
}
