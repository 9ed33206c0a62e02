package router

import (
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// DefaultCallInterval is Options.CallInterval's default.
const DefaultCallInterval = 10 * time.Second

// CallIntervals is how many intervals a server's call history holds: ten
// minutes of the default's.
const CallIntervals = 60

// CallCount is a server's calls in one interval of time: those that
// ended in it, and how many of them failed (an error, or a result with
// isError).
type CallCount struct {
	Start    time.Time
	Interval time.Duration
	Calls    int
	Errors   int
}

// CallHistory is a server's recent calls, counted in CallIntervals
// intervals of Interval each, oldest first: Calls[i] and Errors[i] are
// those of the interval that began at Start + i×Interval. The last is the
// interval running now, still counting.
type CallHistory struct {
	Start    time.Time
	Interval time.Duration
	Calls    []int
	Errors   []int
}

// callHistory counts each server's calls in a ring of intervals. Memory is
// bounded: one ring per server that had calls in the last CallIntervals
// intervals; a ring is dropped once its calls are that old (looked at when
// an interval is told) or when its server's definition is deleted. Nothing
// runs while nobody calls: a timer is armed by the first call of an
// interval, for its end, and no other.
type callHistory struct {
	interval time.Duration
	notify   func(events.Key, CallCount) // nil: nobody is told

	mu    sync.Mutex
	rings map[events.Key]*callRing
}

// callRing is one server's intervals, by their number (the time since the
// epoch divided by the interval), modulo CallIntervals.
type callRing struct {
	newest int64 // the number of the newest interval counted
	armed  int64 // the number of the interval whose end a timer will tell; -1 for none
	calls  [CallIntervals]int
	errors [CallIntervals]int
}

func newCallHistory(interval time.Duration, notify func(events.Key, CallCount)) *callHistory {
	return &callHistory{interval: interval, notify: notify, rings: map[events.Key]*callRing{}}
}

func (h *callHistory) number(t time.Time) int64 { return t.UnixNano() / int64(h.interval) }

func (h *callHistory) startOf(n int64) time.Time { return time.Unix(0, n*int64(h.interval)).UTC() }

// advance moves r's newest interval to n, clearing the ones it skips. A
// number older than the newest (the clock went back) counts in the newest.
func (r *callRing) advance(n int64) int64 {
	if n <= r.newest {
		return r.newest
	}
	for i := r.newest + 1; i <= n && i <= r.newest+CallIntervals; i++ {
		r.calls[i%CallIntervals], r.errors[i%CallIntervals] = 0, 0
	}
	r.newest = n
	return n
}

// record counts a call of server that ended now, failed or not. The first
// call of an interval arms the timer that tells it once it is over.
func (h *callHistory) record(server events.Key, failed bool) {
	now := time.Now()
	n := h.number(now)
	server = server.Canonical()
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rings[server]
	if r == nil {
		r = &callRing{newest: n, armed: -1}
		h.rings[server] = r
	}
	n = r.advance(n)
	r.calls[n%CallIntervals]++
	if failed {
		r.errors[n%CallIntervals]++
	}
	if h.notify != nil && r.armed != n {
		r.armed = n
		time.AfterFunc(h.startOf(n+1).Sub(now), func() { h.tell(server, n) })
	}
}

// tell tells the notify func of server's interval n, now over, and drops
// the rings whose calls are all older than the history.
func (h *callHistory) tell(server events.Key, n int64) {
	now := h.number(time.Now())
	h.mu.Lock()
	var c CallCount
	if r := h.rings[server]; r != nil && r.newest-n < CallIntervals {
		c = CallCount{Start: h.startOf(n), Interval: h.interval, Calls: r.calls[n%CallIntervals], Errors: r.errors[n%CallIntervals]}
	}
	for k, r := range h.rings {
		if now-r.newest >= CallIntervals {
			delete(h.rings, k)
		}
	}
	h.mu.Unlock()
	if c.Calls > 0 {
		h.notify(server, c)
	}
}

// forget drops server's history: its definition is deleted.
func (h *callHistory) forget(server events.Key) {
	h.mu.Lock()
	delete(h.rings, server)
	h.mu.Unlock()
}

// history returns server's history as of now.
func (h *callHistory) history(server events.Key) CallHistory {
	n := h.number(time.Now())
	first := n - CallIntervals + 1
	out := CallHistory{Start: h.startOf(first), Interval: h.interval, Calls: make([]int, CallIntervals), Errors: make([]int, CallIntervals)}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.rings[server]
	if r == nil {
		return out
	}
	for i := range CallIntervals {
		m := first + int64(i)
		if m > r.newest || r.newest-m >= CallIntervals {
			continue
		}
		out.Calls[i], out.Errors[i] = r.calls[m%CallIntervals], r.errors[m%CallIntervals]
	}
	return out
}

// CallHistory returns the recent calls of the server key, counted as its
// tools' calls are in the metrics (through CallTool and CallServerTool):
// zeros for a server that had none.
func (r *Router) CallHistory(key events.Key) CallHistory { return r.calls.history(key.Canonical()) }
