package bus

import (
	"errors"
	"fmt"

	"github.com/musterd/musterd/pkg/events"
)

// Delivery is how a subscription's mailbox holds events its goroutine has
// not yet handled. Make one with [Coalescing], [Lossy] or [Unbounded].
type Delivery struct {
	capacity  int  // Lossy: the bound.
	unbounded bool // Unbounded.
	// coalescing makes a Coalescing mailbox, for the key's type, which
	// Delivery cannot name without being generic itself.
	coalescing func(merge func(pending events.Event) Merger, lazy int) mailbox
	noKey      bool                              // Coalescing(nil): refused.
	merge      func(pending events.Event) Merger // Coalescing: optional.
	lazy       int                               // Coalescing: see Lazy.
}

// Coalescing delivers the newest pending event of each key, for state
// events: when an event arrives while another with the same key waits, the
// older one is replaced and the newer one takes its place at the end of the
// queue. Delivered events therefore keep the order in which they were
// published, but an event that replaced another may now come after events
// of other keys that were published between the two. Memory is bounded by
// the number of distinct keys; no key's newest event is lost. key must not
// be nil; see [ByResourceKey].
//
// K is any comparable type. A struct of the fields that decide, such as
// [CoalesceKey], is hashed as it is; a string spelled from them would be
// built, allocated and hashed on the publisher's goroutine for every event.
func Coalescing[K comparable](key func(events.Event) K) Delivery {
	if key == nil {
		return Delivery{noKey: true}
	}
	return Delivery{coalescing: func(merge func(events.Event) Merger, lazy int) mailbox {
		return &coalescingBox[K]{key: key, merge: merge, lazy: lazy, indexed: lazy == 0}
	}}
}

// Lazy makes a coalescing delivery coalesce only while at least n events
// are pending: below that, every event is kept, in publish order, and
// nothing is hashed on the publisher's goroutine, under the lock that
// serialises publishing. When the n-th pending event arrives, the pending
// events are indexed by key at once (the newest of each key kept, merged
// as WithMerge says, the rest counted as coalesced), and the mailbox
// coalesces as usual until it is drained. The subscriber therefore sees
// the newest event of every key as ever, and some older ones too while it
// keeps up; memory stays bounded, by the number of keys plus n. It suits
// a subscriber that applies states idempotently and usually keeps up,
// such as the status store: the no-op benchmark's publishers spent a
// tenth of their time hashing its keys under the publish lock.
func (d Delivery) Lazy(n int) Delivery {
	d.lazy = n
	return d
}

// Merger folds the events of one key that wait in a coalescing mailbox (see
// [Delivery.WithMerge]). The mailbox owns it, so it may accumulate in place,
// which a merge of two published events may not: those are immutable, their
// contents shared with other subscribers. Add is called serially, under the
// mailbox's lock on a publisher's goroutine, so it must be quick and must
// neither block nor publish. Result is called at most once, on the
// subscription's goroutine when the folded event is delivered (never, if
// the subscription stops first), and never concurrently with Add; a panic
// in it is recovered and counted like one in the handler.
// [events.TriggerMerger] is one.
type Merger interface {
	// Add folds in an event that arrived while the fold was pending.
	Add(newer events.Event)
	// Result is the event to deliver in place of all those folded in.
	Result() events.Event
}

// WithMerge makes a coalescing delivery fold a newer event into the pending
// one of the same key and handler type, instead of replacing it. Use it for
// events that accumulate, such as triggers that name sets of keys.
//
// On the first collision of a pending event, the mailbox calls
// start(pending), under its lock like Add, and Adds the newer event to the
// Merger it returns; later collisions Add to the same Merger, and its Result
// is delivered. The folded event takes the place of the newest, at the end
// of the queue. An event whose handler type differs from the pending one's
// replaces it, Merger and all, as without WithMerge. Folding into one
// accumulator keeps a burst of N events O(N) when Add is O(1); merging them
// pairwise into new immutable events would be O(N²).
func (d Delivery) WithMerge(start func(pending events.Event) Merger) Delivery {
	d.merge = start
	return d
}

// Lossy holds at most capacity pending events, for observers such as
// loggers. An event that arrives when the mailbox is full is dropped and
// counted in [Bus.Stats] under the subscription and the event's type.
func Lossy(capacity int) Delivery {
	return Delivery{capacity: capacity}
}

// Unbounded holds every pending event, in publish order, with no bound: for
// the few subscribers that must see every event, such as a trace recorder.
// It never drops and never coalesces. The price is memory: while the
// subscriber lags, its mailbox grows by one entry per event published (the
// event itself is shared with other subscribers), without limit. Watch its
// [Subscription.Pending], exported as musterd_bus_pending; a subscriber that
// cannot keep up with the publish rate for long will exhaust memory. Once
// drained after its burst, a mailbox that grew large gives its memory back.
func Unbounded() Delivery {
	return Delivery{unbounded: true}
}

func (d Delivery) validate() error {
	switch {
	case d.unbounded && (d.coalescing != nil || d.capacity != 0):
		return errors.New("an unbounded delivery is neither coalescing nor lossy")
	case d.coalescing != nil && d.capacity != 0:
		return errors.New("a delivery is either coalescing or lossy")
	case d.noKey:
		return errors.New("a coalescing delivery needs a key function")
	case d.coalescing == nil && d.capacity <= 0 && !d.unbounded:
		return errors.New("delivery unset: use bus.Coalescing(key), bus.Lossy(capacity > 0) or bus.Unbounded()")
	case d.coalescing == nil && d.merge != nil:
		return errors.New("WithMerge needs a coalescing delivery")
	case d.lazy != 0 && d.coalescing == nil:
		return errors.New("Lazy needs a coalescing delivery")
	case d.lazy < 0:
		return fmt.Errorf("Lazy(%d): the number of pending events must not be negative", d.lazy)
	}
	return nil
}

func (d Delivery) newMailbox() mailbox {
	if d.coalescing != nil {
		return d.coalescing(d.merge, d.lazy)
	}
	if d.unbounded {
		return &fifoBox{}
	}
	return &fifoBox{capacity: d.capacity}
}

// CoalesceKey is what [ByResourceKey] and [ByTypeAndResourceKey] coalesce
// by. It is a plain comparable struct, so that a mailbox hashes its fields
// as they are, building nothing per event.
type CoalesceKey struct {
	// Type is the event's type where it decides, "" where the resource
	// alone does.
	Type string
	// Key is the resource's key, canonical; zero for an event about no one
	// resource.
	Key events.Key
	// Tag tells apart events that the fields above do not: an
	// IndexSynchronized's source. A subscriber may set it to keep one kind
	// of event apart from the rest (the debouncer's manual changes).
	Tag string
}

// ByResourceKey coalesces events about one resource (events.Keyed) by the
// resource, whatever their type: a pending ReconciliationStarted is replaced
// by the ResourceSynced that follows it. IndexSynchronized coalesces per
// source; other events by type.
func ByResourceKey(e events.Event) CoalesceKey {
	if k, ok := e.(events.Keyed); ok {
		return CoalesceKey{Key: k.ResourceKey().Canonical()}
	}
	return unkeyed(e)
}

// ByTypeAndResourceKey coalesces events of one type about one resource.
// IndexSynchronized coalesces per source; other events by type.
func ByTypeAndResourceKey(e events.Event) CoalesceKey {
	if k, ok := e.(events.Keyed); ok {
		return CoalesceKey{Type: e.EventType(), Key: k.ResourceKey().Canonical()}
	}
	return unkeyed(e)
}

// unkeyed is the coalescing key of an event about no one resource. Each
// watcher's IndexSynchronized must arrive: one source's must not replace
// another's.
func unkeyed(e events.Event) CoalesceKey {
	if s, ok := e.(events.IndexSynchronized); ok {
		return CoalesceKey{Type: e.EventType(), Tag: string(s.Source)}
	}
	return CoalesceKey{Type: e.EventType()}
}

// item is one pending delivery: ev, or the Result of merger if it is set.
type item struct {
	ev     events.Event
	h      *handler
	merger Merger
}

// event returns the event to deliver. It runs on the subscription's
// goroutine, outside the mailbox's lock.
func (it item) event() events.Event {
	if it.merger != nil {
		return it.merger.Result()
	}
	return it.ev
}

// outcome is what a mailbox did with an event put in it.
type outcome uint8

const (
	queued    outcome = iota // added to the queue
	coalesced                // replaced, or merged into, a pending event of its key
	dropped                  // refused: a lossy mailbox was full
)

// mailbox is the pending queue of one subscription. Its owner serialises
// access.
type mailbox interface {
	// put adds it and says what became of it, and how many items that were
	// pending it coalesced besides (a lazy mailbox indexing its items).
	put(it item) (outcome, int)
	// drain appends every pending item, oldest first, to buf and empties the
	// mailbox.
	drain(buf []item) []item
	len() int
}

// fifoBox is a queue in publish order: lossy with a capacity, unbounded
// without (capacity 0).
type fifoBox struct {
	capacity int
	items    []item
	burst    burst
}

// retainedItems is the most a drained mailbox keeps allocated once the
// burst that grew it is over, so that one burst does not pin its peak
// memory for the life of the subscription.
const retainedItems = 1024

func (b *fifoBox) put(it item) (outcome, int) {
	if b.capacity > 0 && len(b.items) >= b.capacity {
		return dropped, 0
	}
	b.items = append(b.items, it)
	return queued, 0
}

// burst tells when a mailbox may let go of the allocation a burst grew.
// It follows the recent drains with a peak that decays by an eighth a
// drain: the allocation goes once it has room for more than
// retainedItems and for more than four times that peak, which after a
// burst takes about a dozen small drains. Letting it go at the first
// small drain would make a long burst, whose drains are large and small
// in turn, grow its mailbox afresh, doublings and all, again and again,
// and those regrowths would be a large share of a burst's allocations.
type burst struct{ peak int }

// over records a drain of n from an allocation with room for capacity
// items, and reports whether to let the allocation go. bound is a lossy
// mailbox's capacity, which it may keep.
func (g *burst) over(n, capacity, bound int) bool {
	g.peak = max(n, g.peak-g.peak/8)
	return capacity > max(bound, retainedItems, 4*g.peak)
}

func (b *fifoBox) drain(buf []item) []item {
	buf = append(buf, b.items...)
	if b.burst.over(len(b.items), cap(b.items), b.capacity) {
		b.items = nil
		return buf
	}
	clear(b.items)
	b.items = b.items[:0]
	return buf
}

func (b *fifoBox) len() int { return len(b.items) }

// coalescingBox is an ordered map from key to the newest pending item. A
// replaced item leaves a tombstone that compaction reclaims, so the slice
// stays within a constant factor of the number of live keys.
//
// Its index is an events.InternerOf the pending keys, which hashes a key
// once a put (a Go map hashed a new key twice, the lookup and the insert)
// and is emptied at a drain by one clear; each item carries its key's
// handle, and pos maps a handle to its item's place. The bus's own keys
// are 80 bytes, and the no-op benchmark's mailboxes held up to 100,000 of
// them.
type coalescingBox[K comparable] struct {
	key   func(events.Event) K
	merge func(pending events.Event) Merger
	slots []slot
	keys  events.InternerOf[K]  // the pending keys
	pos   events.Records[int32] // by handle: the place in slots of its live item
	dead  int
	burst burst
	// lazy is Delivery.Lazy's n; indexed says keys and pos cover the
	// slots: always if lazy is 0, else from the lazy-th pending item on
	// until the next drain.
	lazy    int
	indexed bool
}

type slot struct {
	item
	key  events.Handle // the handle of the item's key in keys
	live bool
}

func (b *coalescingBox[K]) put(it item) (outcome, int) {
	folded := 0
	if !b.indexed {
		if len(b.slots)+1 < b.lazy { // the n-th pending event indexes them all
			b.slots = append(b.slots, slot{item: it, live: true})
			return queued, 0
		}
		folded = b.index()
	}
	result := queued
	if b.place(it) {
		result = coalesced
	}
	b.compactIfSparse()
	return result, folded
}

// place appends it, indexed by its key. A pending item of the key is
// retired, and folded into it if they merge; place reports whether there
// was one.
func (b *coalescingBox[K]) place(it item) (replaced bool) {
	h, added := b.keys.Intern(b.key(it.ev))
	pos := b.pos.At(h)
	if !added {
		old := &b.slots[*pos]
		if b.merge != nil && old.h == it.h {
			m := old.merger
			if m == nil {
				m = b.merge(old.ev)
			}
			m.Add(it.ev)
			it = item{h: it.h, merger: m}
		}
		old.live, old.item = false, item{}
		b.dead++
	}
	*pos = int32(len(b.slots))
	b.slots = append(b.slots, slot{item: it, key: h, live: true})
	return !added
}

// index indexes what a lazy mailbox holds, placing each item in order as
// if it had just been put, and returns how many items it coalesced, each
// counted with the handler of the item that replaced it, as put's are.
func (b *coalescingBox[K]) index() (folded int) {
	b.indexed = true
	pending := b.slots
	b.slots = make([]slot, 0, max(2*len(pending), 64))
	for i := range pending {
		if b.place(pending[i].item) {
			folded++
			pending[i].h.coalesced.Add(1)
		}
		pending[i] = slot{}
	}
	b.compactIfSparse()
	return folded
}

// compactIfSparse compacts once tombstones are most of the slots.
func (b *coalescingBox[K]) compactIfSparse() {
	if b.dead > 32 && b.dead > len(b.slots)/2 {
		b.compact()
	}
}

// compact drops the tombstones, moving each live item down to its new
// place.
func (b *coalescingBox[K]) compact() {
	live := b.slots[:0]
	for _, s := range b.slots {
		if s.live {
			*b.pos.At(s.key) = int32(len(live))
			live = append(live, s)
		}
	}
	clear(b.slots[len(live):])
	b.slots = live
	b.dead = 0
}

func (b *coalescingBox[K]) drain(buf []item) []item {
	n := len(buf)
	for _, s := range b.slots {
		if s.live {
			buf = append(buf, s.item)
		}
	}
	b.dead = 0
	if b.burst.over(len(buf)-n, cap(b.slots), 0) {
		// A burst's peak goes: the slots, the index and the places.
		b.slots, b.keys, b.indexed = nil, events.InternerOf[K]{}, b.lazy == 0
		b.pos.Reset()
		return buf
	}
	clear(b.slots)
	b.slots = b.slots[:0]
	if b.indexed {
		b.keys.Clear()
	}
	b.indexed = b.lazy == 0
	return buf
}

func (b *coalescingBox[K]) len() int {
	if !b.indexed {
		return len(b.slots)
	}
	return b.keys.Len()
}
