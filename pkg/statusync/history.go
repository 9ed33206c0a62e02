package statusync

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// DefaultHistoryDepth is how many events History keeps per resource.
const DefaultHistoryDepth = 20

// HistoryOptions configures a History.
type HistoryOptions struct {
	// Depth is how many of a resource's latest events are kept. Default
	// DefaultHistoryDepth.
	Depth int
	// Capacity bounds the mailbox of events not yet recorded (a lossy
	// delivery: History is a convenience view, and its drops are counted
	// in musterd_bus_dropped_total). Default 4096.
	Capacity int
}

// History keeps the latest events of every resource, for `musterd
// describe`: memory is bounded by resources × Depth, and a resource's
// history is forgotten once it is deleted. Make it with NewHistory; it
// records once Start runs. Recent is safe for concurrent use.
type History struct {
	bus      *bus.Bus
	opts     HistoryOptions
	attached bus.Attachment
	starts   atomic.Bool

	mu    sync.RWMutex
	byKey map[events.Key][]events.Event
}

// NewHistory returns a history of b's events.
func NewHistory(b *bus.Bus, opts HistoryOptions) *History {
	if opts.Depth <= 0 {
		opts.Depth = DefaultHistoryDepth
	}
	if opts.Capacity <= 0 {
		opts.Capacity = 4096
	}
	return &History{bus: b, opts: opts, byKey: map[events.Key][]events.Event{}}
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

func (h *History) record(e events.Event) {
	k, ok := e.(events.Keyed)
	if !ok {
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
			delete(h.byKey, key)
			return
		}
	case events.StatusSynced:
		if e.Category == events.StatusDeleted {
			delete(h.byKey, key)
			return
		}
	}
	list := append(h.byKey[key], e)
	if len(list) > h.opts.Depth {
		// Shift rather than reslice, so the backing array stays Depth long.
		list = append(list[:0], list[len(list)-h.opts.Depth:]...)
	}
	h.byKey[key] = list
}

// Recent returns key's latest events, oldest first.
func (h *History) Recent(key events.Key) []events.Event {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return slices.Clone(h.byKey[key.Canonical()])
}
