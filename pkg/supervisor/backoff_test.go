package supervisor

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestBackoffDelay(t *testing.T) {
	def := Backoff{}
	tests := []struct {
		name     string
		b        Backoff
		failures int
		r        float64
		want     time.Duration
	}{
		{name: "no failure, no delay", b: def, failures: 0, want: 0},
		{name: "first failure waits base", b: def, failures: 1, want: time.Second},
		{name: "doubles", b: def, failures: 2, want: 2 * time.Second},
		{name: "doubles again", b: def, failures: 4, want: 8 * time.Second},
		{name: "jitter stretches by up to 10%", b: def, failures: 4, r: 0.5, want: 8*time.Second + 400*time.Millisecond},
		{name: "256s is below the cap", b: def, failures: 9, want: 256 * time.Second},
		{name: "capped at 5m", b: def, failures: 10, want: 5 * time.Minute},
		{name: "jitter never passes the cap", b: Backoff{Jitter: 0.5}, failures: 9, r: 0.5, want: 5 * time.Minute},
		{name: "far past the cap, no overflow", b: def, failures: 10_000, r: 0.999, want: 5 * time.Minute},
		{name: "custom base and max", b: Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: -1}, failures: 4, want: 800 * time.Millisecond},
		{name: "custom, capped", b: Backoff{Base: 100 * time.Millisecond, Max: time.Second, Jitter: -1}, failures: 5, want: time.Second},
		{name: "negative jitter is none", b: Backoff{Jitter: -1}, failures: 2, r: 0.9, want: 2 * time.Second},
		{name: "custom jitter", b: Backoff{Jitter: 0.5}, failures: 1, r: 0.5, want: 1250 * time.Millisecond},
		{name: "max below base is base", b: Backoff{Base: time.Minute, Max: time.Second, Jitter: -1}, failures: 3, want: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.b.Delay(tt.failures, tt.r))
		})
	}
}

func TestRestartGateHoldsOnlyTheFailedSpecUntilItsRetryTime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var g restartGate
	_, blocked := g.blocked(t0, "a")
	assert.False(t, blocked, "a server that never failed starts")

	g.fail(t0, "a", Backoff{}, 0)
	until, blocked := g.blocked(t0.Add(999*time.Millisecond), "a")
	assert.True(t, blocked)
	assert.Equal(t, t0.Add(time.Second), until)
	_, blocked = g.blocked(t0.Add(time.Second), "a")
	assert.False(t, blocked, "free from NextRetryAfter on")
	_, blocked = g.blocked(t0, "b")
	assert.False(t, blocked, "a changed spec is not held back")

	g.fail(t0.Add(time.Second), "b", Backoff{}, 0)
	assert.Equal(t, 2, g.failures, "a changed spec's failures keep counting")
	until, blocked = g.blocked(t0.Add(time.Second), "b")
	assert.True(t, blocked)
	assert.Equal(t, t0.Add(3*time.Second), until)
}

// A server that crashes at once, with a caller that asks Ensure to start it
// every 10ms (muster's loop asked on every event: 131 restarts in 53s),
// starts exactly at 0, 1, 3, 7, 15 and 31s of its first minute with the
// default backoff and the shortest jitter, and never more than 6 times.
func TestACrashingServerStartsAtMostSixTimesInItsFirstMinute(t *testing.T) {
	for _, r := range []float64{0, 0.5, 0.999} {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var (
			g      restartGate
			starts []time.Duration
		)
		for now := t0; now.Before(t0.Add(time.Minute)); now = now.Add(10 * time.Millisecond) {
			if _, blocked := g.blocked(now, "spec"); blocked {
				continue
			}
			starts = append(starts, now.Sub(t0))
			g.fail(now, "spec", Backoff{}, r) // crashes at once
		}
		assert.LessOrEqual(t, len(starts), 6, "r=%v: starts at %v", r, starts)
		if r == 0 {
			assert.Equal(t, []time.Duration{0, time.Second, 3 * time.Second, 7 * time.Second, 15 * time.Second, 31 * time.Second}, starts)
		}
	}
}
