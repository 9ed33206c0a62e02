package statusync

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// DefaultHistoryDepth is how many events History keeps per resource.
const DefaultHistoryDepth = 20

// DefaultHistoryLimit is how many events History keeps in all: with events
// of a few hundred bytes, a few megabytes however many resources there are.
const DefaultHistoryLimit = 10_000

// HistoryOptions configures a History.
type HistoryOptions struct {
	// Depth is how many of a resource's latest events are kept. Default
	// DefaultHistoryDepth.
	Depth int
	// Limit is how many events are kept over all resources; past it, the
	// oldest event of all goes first. Default DefaultHistoryLimit.
	Limit int
	// Capacity bounds the mailbox of events not yet recorded (a lossy
	// delivery: History is a convenience view, and its drops are counted
	// in musterd_bus_dropped_total). Default 4096.
	Capacity int
}

// History keeps the latest events of every resource, for `musterd
// describe` and core_events: at most Depth a resource and Limit in all, so
// its memory does not grow with the resources declared. A resource's
// history is forgotten once it is deleted. Make it with NewHistory; it
// records once Start runs. Recent and All are safe for concurrent use.
//
// The events sit in one ring in the order they were recorded; each slot
// links to its resource's next newer event, and each resource keeps its
// oldest and newest slot. The ring overwrites the oldest event of all,
// which is always its resource's oldest, so that only moves the
// resource's start along its links.
type History struct {
	bus      *bus.Bus
	opts     HistoryOptions
	attached bus.Attachment
	starts   atomic.Bool

	mu    sync.RWMutex
	ring  []historySlot // slot of sequence number s: ring[s % Limit]
	next  uint64        // sequence number of the next event recorded
	byKey map[events.Key]historyChain
}

// historySlot is one recorded event, or none (e nil) if it was dropped
// for its resource's Depth or forgotten with its resource.
type historySlot struct {
	e     events.Event
	key   events.Key
	newer uint64 // sequence number of key's next newer event, if e is not its newest
}

// historyChain is where a resource's events are in the ring.
type historyChain struct {
	oldest, newest uint64 // sequence numbers
	n              int
}

// NewHistory returns a history of b's events.
func NewHistory(b *bus.Bus, opts HistoryOptions) *History {
	if opts.Depth <= 0 {
		opts.Depth = DefaultHistoryDepth
	}
	if opts.Limit <= 0 {
		opts.Limit = DefaultHistoryLimit
	}
	if opts.Capacity <= 0 {
		opts.Capacity = 4096
	}
	return &History{bus: b, opts: opts, byKey: map[events.Key]historyChain{}}
}

// Name is the component's name.
func (h *History) Name() string { return "history" }

// SubscriptionReady is closed once Start has subscribed.
func (h *History) SubscriptionReady() <-chan struct{} { return h.attached.SubscriptionReady() }

// BusySince reports since when its handler has been running, if it is.
func (h *History) BusySince() (time.Time, bool) { return h.attached.BusySince() }

// Start subscribes and records until ctx is done.
func (h *History) Start(ctx context.Context) error {
	if !h.starts.CompareAndSwap(false, true) {
		return errors.New("history: started twice")
	}
	sub, err := h.bus.Subscribe(bus.SubscriberOptions{
		Name:     h.Name(),
		Delivery: bus.Lossy(h.opts.Capacity),
		Handlers: []bus.Handler{bus.On(h.record)},
	})
	if err != nil {
		return err
	}
	h.attached.Attach(sub)
	<-ctx.Done()
	sub.Unsubscribe()
	return nil
}

func (h *History) slot(seq uint64) *historySlot { return &h.ring[seq%uint64(h.opts.Limit)] }

func (h *History) record(e events.Event) {
	k, ok := e.(events.Keyed)
	if !ok {
		return
	}
	if _, counts := e.(events.ToolCallsCounted); counts {
		// A busy server tells its calls every interval: they would push
		// its reconciles out of its Depth. The router keeps its calls.
		return
	}
	key := k.ResourceKey().Canonical()
	h.mu.Lock()
	defer h.mu.Unlock()
	// A deletion and the removal of its status that follows it end the
	// resource's history.
	switch e := e.(type) {
	case events.ResourceSynced:
		if e.Deleted {
			h.forget(key)
			return
		}
	case events.StatusSynced:
		if e.Category == events.StatusDeleted {
			h.forget(key)
			return
		}
	}
	seq := h.next
	h.next++
	if len(h.ring) < h.opts.Limit {
		h.ring = append(h.ring, historySlot{})
	} else if old := h.slot(seq); old.e != nil {
		h.dropOldest(old.key)
	}
	*h.slot(seq) = historySlot{e: e, key: key}
	c, had := h.byKey[key]
	if had {
		h.slot(c.newest).newer = seq
		c.newest = seq
		c.n++
	} else {
		c = historyChain{oldest: seq, newest: seq, n: 1}
	}
	h.byKey[key] = c
	if c.n > h.opts.Depth {
		h.dropOldest(key)
	}
}

// dropOldest lets key's oldest event go.
func (h *History) dropOldest(key events.Key) {
	c := h.byKey[key]
	s := h.slot(c.oldest)
	s.e = nil
	if c.n--; c.n == 0 {
		delete(h.byKey, key)
		return
	}
	c.oldest = s.newer
	h.byKey[key] = c
}

// forget lets all of key's events go.
func (h *History) forget(key events.Key) {
	for range h.byKey[key].n {
		h.dropOldest(key)
	}
}

// Recent returns key's latest events, oldest first.
func (h *History) Recent(key events.Key) []events.Event {
	h.mu.RLock()
	defer h.mu.RUnlock()
	c, ok := h.byKey[key.Canonical()]
	if !ok {
		return nil
	}
	list := make([]events.Event, 0, c.n)
	for seq, i := c.oldest, 0; i < c.n; i++ {
		s := h.slot(seq)
		list = append(list, s.e)
		seq = s.newer
	}
	return list
}

// All returns every event kept, of all resources, oldest first.
func (h *History) All() []events.Event {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var list []events.Event
	for seq := h.next - uint64(len(h.ring)); seq < h.next; seq++ {
		if e := h.slot(seq).e; e != nil {
			list = append(list, e)
		}
	}
	return list
}
