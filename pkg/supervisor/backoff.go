package supervisor

import "time"

// Defaults of Backoff.
const (
	DefaultBackoffBase   = time.Second
	DefaultBackoffMax    = 5 * time.Minute
	DefaultBackoffJitter = 0.1
)

// Backoff is how long a failed server waits before it may start again. After
// its n'th consecutive failure a server waits Base·2^(n-1), stretched by a
// random fraction of itself up to Jitter, and never longer than Max. The
// zero value is the default: 1s, 2s, 4s, … up to 5m, each up to 10% longer.
type Backoff struct {
	// Base is the delay after the first failure. Default 1s.
	Base time.Duration
	// Max caps every delay, jitter included. Default 5m.
	Max time.Duration
	// Jitter is the largest fraction by which a delay is stretched, so that
	// servers that failed together do not restart in lockstep: 0.1 gives a
	// delay in [d, 1.1·d). Default 0.1; a negative value turns jitter off.
	// Jitter only ever lengthens a delay, so Base·2^(n-1) (capped at Max) is
	// a floor that no caller can get under.
	Jitter float64
}

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Max < b.Base {
		b.Max = b.Base
	}
	// A negative Jitter stays negative, so that defaults applied twice (by
	// Options and again by Delay) still turn it off.
	if b.Jitter == 0 {
		b.Jitter = DefaultBackoffJitter
	}
	return b
}

// Delay returns the wait after the failures'th consecutive failure, with r
// in [0, 1) drawing the jitter: min(Max, d + d·Jitter·r) where
// d = min(Max, Base·2^(failures-1)). It is zero for failures < 1.
func (b Backoff) Delay(failures int, r float64) time.Duration {
	if failures < 1 {
		return 0
	}
	b = b.withDefaults()
	d := b.Base
	for i := 1; i < failures && d < b.Max; i++ {
		if d > b.Max/2 {
			d = b.Max
			break
		}
		d *= 2
	}
	d = min(d, b.Max)
	d += time.Duration(float64(d) * max(b.Jitter, 0) * r)
	return min(d, b.Max)
}

// restartGate decides when a server that failed may start again. It is
// plain data with methods over explicit times, so that the schedule it
// enforces is tested exactly; Ensure consults it on every call, whoever
// calls and however often.
type restartGate struct {
	failures   int       // consecutive failures
	retryAfter time.Time // no start of failedHash before this
	failedHash string    // the spec whose failure armed the gate
}

// blocked reports whether a start of the spec with hash at now must wait,
// and until when. Only the spec that failed waits: a changed spec is the
// user's fix and starts at once, though its failures keep counting.
func (g restartGate) blocked(now time.Time, hash string) (time.Time, bool) {
	if g.failures == 0 || hash != g.failedHash || !now.Before(g.retryAfter) {
		return time.Time{}, false
	}
	return g.retryAfter, true
}

// fail records a failure of the spec with hash at now, r drawing the jitter.
func (g *restartGate) fail(now time.Time, hash string, b Backoff, r float64) {
	g.failures++
	g.failedHash = hash
	g.retryAfter = now.Add(b.Delay(g.failures, r))
}
