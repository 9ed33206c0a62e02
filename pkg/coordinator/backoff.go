package coordinator

import (
	"math/rand/v2"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// JitteredBackoff is a per-item exponential backoff with jitter. It is a
// workqueue.TypedRateLimiter, usable with a rate-limiting workqueue; and it
// remembers the delay it last returned, so that the time of the next retry
// can be announced exactly.
//
// The delay after the n'th consecutive failure is d = min(max, base·2^(n-1))
// stretched by a random factor r·jitter, r in [0, 1): d·(1+r·jitter). Where
// that would pass max, the delay is max shrunk by that factor instead,
// max·(1-r·min(jitter, 1)), so delays never exceed max and keys that keep
// failing are still spread out once their delays reach it. Jitter spreads
// the retries of keys that failed together (a shared dependency went down)
// so they do not return in step.
type JitteredBackoff[T comparable] struct {
	base, max time.Duration
	jitter    float64
	rand      func() float64

	mu    sync.Mutex
	items map[T]backoffItem
}

type backoffItem struct {
	failures int
	last     time.Duration
	// next, when nextSet, is what the next When returns instead of the
	// backoff's delay.
	next    time.Duration
	nextSet bool
}

var _ workqueue.TypedRateLimiter[string] = (*JitteredBackoff[string])(nil)

// NewJitteredBackoff returns a backoff from base up to limit. A jitter of
// zero or less means none. random returns a number in [0, 1); nil means
// math/rand/v2's Float64.
func NewJitteredBackoff[T comparable](base, limit time.Duration, jitter float64, random func() float64) *JitteredBackoff[T] {
	if random == nil {
		random = rand.Float64
	}
	return &JitteredBackoff[T]{base: base, max: limit, jitter: max(jitter, 0), rand: random, items: map[T]backoffItem{}}
}

// When records a failure of item and returns how long to wait before
// retrying it.
func (b *JitteredBackoff[T]) When(item T) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	it := b.items[item]
	d := b.whenItem(&it)
	b.items[item] = it
	return d
}

// whenItem records a failure in it and returns the delay before its retry:
// When on state its caller keeps, as the coordinator does in its record of
// each key. The caller serialises calls on one it, and rand must be safe
// for the callers it has.
func (b *JitteredBackoff[T]) whenItem(it *backoffItem) time.Duration {
	it.failures++
	if it.nextSet {
		it.last, it.next, it.nextSet = it.next, 0, false
	} else {
		it.last = b.delay(it.failures)
	}
	return it.last
}

// SetNextDelay makes the next When of item return d instead of the
// backoff's delay, for a retry whose time is known (reconcilers.RetryAt).
// That When still counts a failure; Forget drops d.
func (b *JitteredBackoff[T]) SetNextDelay(item T, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	it := b.items[item]
	it.setNext(d)
	b.items[item] = it
}

// setNext is SetNextDelay on state the caller keeps.
func (it *backoffItem) setNext(d time.Duration) { it.next, it.nextSet = max(d, 0), true }

func (b *JitteredBackoff[T]) delay(failures int) time.Duration {
	d := b.base
	for i := 1; i < failures && d < b.max; i++ {
		if d > b.max/2 { // doubling would pass max, or overflow
			d = b.max
			break
		}
		d *= 2
	}
	d = min(d, b.max)
	if b.jitter == 0 {
		return d
	}
	r := b.rand()
	if stretched := d + time.Duration(float64(d)*b.jitter*r); stretched <= b.max {
		return stretched
	}
	return b.max - time.Duration(float64(b.max)*min(b.jitter, 1)*r)
}

// Forget clears item's failures: its next delay starts from base again.
func (b *JitteredBackoff[T]) Forget(item T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.items, item)
}

// NumRequeues returns item's consecutive failures since it was last
// forgotten.
func (b *JitteredBackoff[T]) NumRequeues(item T) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.items[item].failures
}

// LastDelay returns the delay When last returned for item; zero if it has
// none since it was last forgotten.
func (b *JitteredBackoff[T]) LastDelay(item T) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.items[item].last
}
