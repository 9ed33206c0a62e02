package musterevents

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
)

// Defaults of LogOptions.
const (
	DefaultLimit       = 10_000
	DefaultCapacity    = 4096
	DefaultCatchUp     = time.Second
	DefaultFollowQueue = 1024
)

// LogOptions configure a Log. The zero value of each field is its default.
type LogOptions struct {
	// Translate are the translator's lookups (Options.Listed is ignored:
	// the log starts before the watchers list).
	Translate Options
	// Limit is how many events are kept; past it the oldest goes first.
	// Default DefaultLimit.
	Limit int
	// Capacity bounds the bus mailbox of events not yet translated (a
	// lossy delivery: the log is a view, its drops are counted by the bus).
	// Default DefaultCapacity.
	Capacity int
	// CatchUp bounds how long Query waits for the events published before
	// it to be translated. Default DefaultCatchUp.
	CatchUp time.Duration
}

// Log keeps muster's view of the bus's events, for core_events: the
// latest Limit, translated as they were published. Make it with NewLog;
// it records once Start runs. Query and Follow are safe for concurrent use.
type Log struct {
	bus      *bus.Bus
	opts     LogOptions
	tr       *Translator
	attached bus.Attachment
	sub      atomic.Pointer[bus.Subscription]
	starts   atomic.Bool

	mu        sync.Mutex
	ring      []Event // the oldest at start
	start     int
	idle      chan struct{} // closed, and replaced, whenever the mailbox runs empty
	followers map[*follower]struct{}
}

// NewLog returns a log of b's events.
func NewLog(b *bus.Bus, opts LogOptions) *Log {
	opts.Translate.Listed = false
	if opts.Limit <= 0 {
		opts.Limit = DefaultLimit
	}
	if opts.Capacity <= 0 {
		opts.Capacity = DefaultCapacity
	}
	if opts.CatchUp <= 0 {
		opts.CatchUp = DefaultCatchUp
	}
	return &Log{bus: b, opts: opts, tr: New(opts.Translate), idle: make(chan struct{}), followers: map[*follower]struct{}{}}
}

// Name is the component's name.
func (l *Log) Name() string { return "muster-events" }

// SubscriptionReady is closed once Start has subscribed.
func (l *Log) SubscriptionReady() <-chan struct{} { return l.attached.SubscriptionReady() }

// BusySince reports since when its handler has been running, if it is.
func (l *Log) BusySince() (time.Time, bool) { return l.attached.BusySince() }

// Start subscribes and records until ctx is done.
func (l *Log) Start(ctx context.Context) error {
	if !l.starts.CompareAndSwap(false, true) {
		return errors.New("muster-events: started twice")
	}
	sub, err := l.bus.Subscribe(bus.SubscriberOptions{
		Name:     l.Name(),
		Delivery: bus.Lossy(l.opts.Capacity),
		Handlers: []bus.Handler{bus.On(l.record)},
		OnIdle:   l.wentIdle,
	})
	if err != nil {
		return err
	}
	l.sub.Store(sub)
	l.attached.Attach(sub)
	<-ctx.Done()
	sub.Unsubscribe()
	return nil
}

// record translates e and keeps what it amounts to.
func (l *Log) record(e events.Event) {
	out := l.tr.Translate(e)
	if len(out) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range out {
		if len(l.ring) < l.opts.Limit {
			l.ring = append(l.ring, ev)
		} else {
			l.ring[l.start] = ev
			l.start = (l.start + 1) % l.opts.Limit
		}
		for f := range l.followers {
			if f.filter.Match(ev) {
				f.offer(ev)
			}
		}
	}
}

func (l *Log) wentIdle() {
	l.mu.Lock()
	close(l.idle)
	l.idle = make(chan struct{})
	l.mu.Unlock()
}

// catchUp waits, at most CatchUp, until the events in the log's mailbox
// now are translated: a query sees what was published before it.
func (l *Log) catchUp(ctx context.Context) {
	sub := l.sub.Load()
	if sub == nil {
		return
	}
	if sub.Unhandled() == 0 {
		return
	}
	l.mu.Lock()
	idle := l.idle
	l.mu.Unlock()
	timer := time.NewTimer(l.opts.CatchUp)
	defer timer.Stop()
	select {
	case <-idle:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// Filter selects events; an empty field selects all.
type Filter struct {
	Kind, Name, Namespace string
	// Type is Normal or Warning, in any case.
	Type         string
	Since, Until time.Time
}

// Match reports whether f selects e.
func (f Filter) Match(e Event) bool {
	return (f.Kind == "" || e.Kind == f.Kind) &&
		(f.Name == "" || e.Name == f.Name) &&
		(f.Namespace == "" || e.Namespace == f.Namespace) &&
		(f.Type == "" || strings.EqualFold(e.Type, f.Type)) &&
		(f.Since.IsZero() || !e.Time.Before(f.Since)) &&
		(f.Until.IsZero() || !e.Time.After(f.Until))
}

// Query returns the newest limit events f selects, newest first, as
// muster lists them (limit < 1: all). Events published before the call
// are in it, unless the log is more than CatchUp behind.
func (l *Log) Query(ctx context.Context, f Filter, limit int) []Event {
	l.catchUp(ctx)
	l.mu.Lock()
	var out []Event
	for i := len(l.ring) - 1; i >= 0; i-- { // newest first
		if e := l.ring[(l.start+i)%len(l.ring)]; f.Match(e) {
			out = append(out, e)
		}
	}
	l.mu.Unlock()
	// Newest published first; sorted by time too, as a clock stepped back
	// may have put them out of order.
	slices.SortStableFunc(out, func(x, y Event) int { return y.Time.Compare(x.Time) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// Follow calls fn with every event f selects that is recorded from now on,
// in order, on a goroutine of its own, until stop is called or ctx is
// done. A follower that falls DefaultFollowQueue events behind loses the
// newer ones (counted by Dropped) and delays nothing else.
func (l *Log) Follow(ctx context.Context, f Filter, fn func(Event)) (stop func(), dropped func() uint64) {
	fl := &follower{filter: f, queue: make(chan Event, DefaultFollowQueue), done: make(chan struct{})}
	l.mu.Lock()
	l.followers[fl] = struct{}{}
	l.mu.Unlock()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.followers, fl)
			l.mu.Unlock()
			close(fl.done)
		})
	}
	go func() {
		defer stop()
		for {
			select {
			case e := <-fl.queue:
				fn(e)
			case <-fl.done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return stop, fl.dropped.Load
}

type follower struct {
	filter  Filter
	queue   chan Event
	done    chan struct{}
	dropped atomic.Uint64
}

// offer queues e without waiting: a follower behind loses it.
func (f *follower) offer(e Event) {
	select {
	case f.queue <- e:
	default:
		f.dropped.Add(1)
	}
}
