package bus

import (
	"cmp"
	"sync"

	"github.com/musterd/musterd/pkg/events"
)

// DefaultFollowBuffer is FollowOptions.Buffer's default.
const DefaultFollowBuffer = 1024

// followHandoff is how many selected events wait for the reader beyond
// the mailbox, so that a reader woken by one takes the others queued
// behind it as one batch.
const followHandoff = 64

// FollowOptions configure a Follow. Name and Select are required.
type FollowOptions[T any] struct {
	// Name is the subscription's name, unique among the bus's live
	// subscriptions (Stats names it).
	Name string
	// Select turns a published event into what the reader wants, or
	// reports that it wants none of it. It runs on the subscription's
	// goroutine, in publish order.
	Select func(events.Event) (T, bool)
	// Buffer bounds the events published but not yet selected and taken:
	// past it the newest are dropped and counted (Dropped), never waited
	// for. Default DefaultFollowBuffer.
	Buffer int
}

// Follower is a reader's own view of the bus: every event published from
// Follow's return on, selected and in publish order, for a reader that
// takes them at its own pace (an HTTP event stream, a page). A reader that
// falls behind loses the newest events, counted by Dropped, and delays
// nothing else. Make one with Follow; Stop it when the reader goes.
type Follower[T any] struct {
	sub  *Subscription
	out  chan T
	gone chan struct{}
	stop sync.Once
}

// Follow subscribes a Follower to every event type.
func Follow[T any](b *Bus, opts FollowOptions[T]) (*Follower[T], error) {
	f := &Follower[T]{out: make(chan T, followHandoff), gone: make(chan struct{})}
	sub, err := b.Subscribe(SubscriberOptions{
		Name:     opts.Name,
		Delivery: Lossy(cmp.Or(opts.Buffer, DefaultFollowBuffer)),
		Handlers: []Handler{On(func(e events.Event) {
			v, ok := opts.Select(e)
			if !ok {
				return
			}
			// While the reader works, the mailbox absorbs what comes and
			// drops (and counts) the excess.
			select {
			case f.out <- v:
			case <-f.gone:
			}
		})},
	})
	if err != nil {
		return nil, err
	}
	f.sub = sub
	return f, nil
}

// Events delivers the selected events in publish order. It is never
// closed: wait on Done too.
func (f *Follower[T]) Events() <-chan T { return f.out }

// Done is closed once the follower has stopped: Stop was called, or the
// bus closed.
func (f *Follower[T]) Done() <-chan struct{} { return f.sub.Done() }

// Dropped counts the events the follower lost because its reader fell
// Buffer behind (counted before selection: some might not have been
// selected).
func (f *Follower[T]) Dropped() uint64 {
	var n uint64
	for _, h := range f.sub.handlers {
		n += h.dropped.Load()
	}
	return n
}

// Stop ends the follower and waits for its goroutine; what is pending is
// discarded. It may be called more than once.
func (f *Follower[T]) Stop() {
	f.stop.Do(func() {
		close(f.gone) // releases a handler waiting for the reader
		f.sub.Unsubscribe()
	})
	<-f.sub.Done()
}
