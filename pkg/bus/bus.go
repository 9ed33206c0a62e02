package bus

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	evbus "github.com/asaskevich/EventBus"

	"github.com/musterd/musterd/pkg/events"
)

// Options configures a Bus.
type Options struct {
	// Logger receives handler panics and misuse. Default: slog.Default().
	Logger *slog.Logger
}

// Bus is a typed in-process event bus. The zero value is not usable; call
// New. A Bus is safe for concurrent use.
type Bus struct {
	eb  evbus.Bus
	log *slog.Logger

	// topics maps a Go type to its topic. Topics are created on first use
	// and never removed.
	topics   sync.Map // reflect.Type → *topic
	topicsMu sync.Mutex
	nTopics  int
	wildcard *topic // subscribers of events.Event receive every event.

	// startMu guards the start barrier: held is appended to until started.
	startMu sync.Mutex
	started atomic.Bool
	held    []events.Event

	subsMu sync.Mutex
	subs   map[string]*Subscription // live subscriptions by name
	closed bool

	// publishMu serialises dispatches, as EventBus's own lock did when
	// every publish went through it: concurrent publishes reach every
	// subscription in one and the same order.
	publishMu sync.Mutex

	rejected atomic.Uint64 // nil events published

	// progress counts deliveries: events put into a mailbox and batches
	// handled. See Progress.
	progress atomic.Uint64
}

// topic is one Go event type. Its EventBus handler is a dispatcher that
// copies each event into the mailboxes of the topic's subscriptions.
type topic struct {
	name      string // the EventBus topic: unique per Go type
	eventType string // the EventType name, for stats
	published atomic.Uint64
	bindings  atomic.Pointer[[]*handler] // copy on write
	// dispatch is the dispatcher registered with EventBus for this topic,
	// which Publish calls directly (see the package documentation).
	dispatch func(events.Event)
}

var eventInterface = reflect.TypeFor[events.Event]()

// New returns a bus that holds published events until Start.
func New(opts Options) *Bus {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	b := &Bus{eb: evbus.New(), log: opts.Logger, subs: map[string]*Subscription{}}
	b.wildcard = &topic{name: "*", eventType: "*"}
	b.wildcard.bindings.Store(&[]*handler{})
	return b
}

// Publish publishes e on b. It never blocks on subscribers.
func Publish[T events.Event](b *Bus, e T) { b.Publish(e) }

// Publish publishes e. Before Start, e is held; after, it is copied into the
// mailbox of every subscription with a handler for e's Go type or for
// events.Event. A nil event is logged and counted as rejected.
func (b *Bus) Publish(e events.Event) {
	if e == nil {
		b.rejected.Add(1)
		b.log.Error("bus: nil event published", "stack", string(debug.Stack()))
		return
	}
	if !b.started.Load() {
		b.startMu.Lock()
		if !b.started.Load() {
			b.held = append(b.held, e)
			b.startMu.Unlock()
			return
		}
		b.startMu.Unlock()
	}
	b.dispatch(e)
}

func (b *Bus) dispatch(e events.Event) {
	t := b.topicFor(reflect.TypeOf(e), e.EventType())
	t.published.Add(1)
	b.publishMu.Lock()
	defer b.publishMu.Unlock()
	t.dispatch(e)
}

// Start releases the barrier: held events are delivered in publish order,
// then Publish delivers directly. Calling Start again does nothing.
func (b *Bus) Start() {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	if b.started.Load() {
		return
	}
	// Publishers that arrive meanwhile wait on startMu and see started set
	// only after every held event is dispatched, so order is kept.
	for i, e := range b.held {
		b.dispatch(e)
		b.held[i] = nil
	}
	b.held = nil
	b.started.Store(true)
}

// Idle reports whether every live subscription has handled every event
// put into its mailbox, and run its OnIdle after them, and no event waits
// for the start barrier. With Progress it tells a caller that drives the
// bus's publishers itself (a replay stepping a fake clock) when everything
// it published has been handled: see Progress.
func (b *Bus) Idle() bool {
	b.startMu.Lock()
	held := len(b.held)
	b.startMu.Unlock()
	if held > 0 {
		return false
	}
	b.subsMu.Lock()
	defer b.subsMu.Unlock()
	for _, s := range b.subs {
		if s.unhandled.Load() != 0 {
			return false
		}
	}
	return true
}

// Progress counts the bus's deliveries: it increases whenever an event is
// put into a mailbox and whenever a subscription finishes handling a
// batch. Idle checks one subscription after another; a caller that reads
// Progress, finds Idle (and whatever else it watches) true, and reads the
// same Progress again knows that no delivery happened meanwhile, so that
// everything was idle at once.
func (b *Bus) Progress() uint64 { return b.progress.Load() }

// Started reports whether Start was called.
func (b *Bus) Started() bool { return b.started.Load() }

func (b *Bus) topicFor(typ reflect.Type, eventType string) *topic {
	if t, ok := b.topics.Load(typ); ok {
		return t.(*topic)
	}
	b.topicsMu.Lock()
	defer b.topicsMu.Unlock()
	if t, ok := b.topics.Load(typ); ok {
		return t.(*topic)
	}
	b.nTopics++
	t := &topic{name: strconv.Itoa(b.nTopics) + ":" + eventType, eventType: eventType}
	t.bindings.Store(&[]*handler{})
	// The dispatcher is EventBus's only handler for this topic, and what
	// Publish calls, under publishMu: it does nothing but copy the event
	// into mailboxes.
	t.dispatch = func(e events.Event) {
		for _, h := range *t.bindings.Load() {
			h.sub.enqueue(e, h)
		}
		for _, h := range *b.wildcard.bindings.Load() {
			h.sub.enqueue(e, h)
		}
	}
	if err := b.eb.Subscribe(t.name, t.dispatch); err != nil {
		panic(fmt.Sprintf("bus: EventBus refused the dispatcher: %v", err)) // only for a non-func
	}
	if !b.eb.HasCallback(t.name) {
		panic("bus: EventBus lost the dispatcher of " + t.name)
	}
	b.topics.Store(typ, t)
	return t
}

// Handler is one typed handler of a subscription. Make it with On.
type Handler struct {
	typ       reflect.Type
	eventType string
	call      func(events.Event)
}

// On makes a handler for events of type T. With T = events.Event it
// receives every event published on the bus.
func On[T events.Event](fn func(T)) Handler {
	var zero T
	name := "*"
	if typ := reflect.TypeFor[T](); typ.Kind() != reflect.Interface {
		name = zero.EventType()
	}
	return Handler{
		typ:       reflect.TypeFor[T](),
		eventType: name,
		call:      func(e events.Event) { fn(e.(T)) },
	}
}

// SubscriberOptions configures a subscription.
type SubscriberOptions struct {
	// Name identifies the subscription in stats, metrics and logs. Required,
	// and unique among the bus's live subscriptions.
	Name string
	// Delivery is how pending events are held. Required.
	Delivery Delivery
	// Handlers, at most one per event type. Required.
	Handlers []Handler
	// OnIdle, if set, runs on the subscription's goroutine each time it has
	// handled every pending event: a place to flush work batched across
	// events. It does not run while the mailbox never empties, so a batch
	// kept for it needs a size cap of its own. It never runs once
	// Unsubscribe has been called, though a handler that was running then
	// finishes; wait on Done before tearing down what handlers use.
	OnIdle func()
	// OnDrop, if set, is told of each event a lossy mailbox drops. It runs
	// on the publisher's goroutine, under the lock that serialises
	// publishing, before any later event reaches the mailbox: it must be
	// quick, must not block and must not publish, subscribe or
	// unsubscribe. A subscriber that must not go on after a loss (a trace
	// recorder, whose trace may have no holes) raises a flag here.
	OnDrop func(events.Event)
	// Once makes the subscription take a single event and then unsubscribe.
	Once bool
}

// Subscribe subscribes fn to events of type T.
func Subscribe[T events.Event](b *Bus, name string, d Delivery, fn func(T)) (*Subscription, error) {
	return b.Subscribe(SubscriberOptions{Name: name, Delivery: d, Handlers: []Handler{On(fn)}})
}

// Subscribe starts a subscription with its own goroutine. Events of every
// handler's type share one mailbox, so they are handled in publish order.
func (b *Bus) Subscribe(opts SubscriberOptions) (*Subscription, error) {
	if opts.Name == "" {
		return nil, errors.New("bus: subscription needs a name")
	}
	if err := opts.Delivery.validate(); err != nil {
		return nil, fmt.Errorf("bus: subscription %q: %w", opts.Name, err)
	}
	if len(opts.Handlers) == 0 {
		return nil, fmt.Errorf("bus: subscription %q has no handlers", opts.Name)
	}
	s := &Subscription{
		bus:      b,
		name:     opts.Name,
		box:      opts.Delivery.newMailbox(),
		onIdle:   opts.OnIdle,
		onDrop:   opts.OnDrop,
		born:     time.Now(),
		once:     opts.Once,
		wake:     make(chan struct{}, 1),
		draining: make(chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	seen := map[reflect.Type]bool{}
	for _, hd := range opts.Handlers {
		if hd.call == nil {
			return nil, fmt.Errorf("bus: subscription %q: handler not made with bus.On", opts.Name)
		}
		if hd.typ.Kind() == reflect.Interface && hd.typ != eventInterface {
			return nil, fmt.Errorf("bus: subscription %q: %s is an interface; subscribe to a concrete event type or to events.Event", opts.Name, hd.typ)
		}
		if seen[hd.typ] {
			return nil, fmt.Errorf("bus: subscription %q has two handlers for %s", opts.Name, hd.typ)
		}
		seen[hd.typ] = true
		s.handlers = append(s.handlers, &handler{Handler: hd, sub: s})
	}

	b.subsMu.Lock()
	defer b.subsMu.Unlock()
	if b.closed {
		return nil, errors.New("bus: closed")
	}
	if _, taken := b.subs[opts.Name]; taken {
		return nil, fmt.Errorf("bus: a subscription named %q exists", opts.Name)
	}
	b.subs[opts.Name] = s
	go s.run()
	for _, h := range s.handlers {
		t := b.wildcard
		if h.typ != eventInterface {
			t = b.topicFor(h.typ, h.eventType)
		}
		h.topic = t
		b.bind(t, h)
	}
	return s, nil
}

// bind and unbind replace a topic's handler list; subsMu serialises them.
func (b *Bus) bind(t *topic, h *handler) {
	old := *t.bindings.Load()
	next := make([]*handler, len(old), len(old)+1)
	copy(next, old)
	next = append(next, h)
	t.bindings.Store(&next)
}

func (b *Bus) unbind(t *topic, h *handler) {
	old := *t.bindings.Load()
	next := make([]*handler, 0, len(old))
	for _, x := range old {
		if x != h {
			next = append(next, x)
		}
	}
	t.bindings.Store(&next)
}

// Close unsubscribes every subscription. It does not wait for handlers that
// are running: a stuck handler must not hold up shutdown, whose time the
// lifecycle registry bounds. Wait on a Subscription's Done to know its
// goroutine has exited. Publishing after Close is harmless: there is no one
// left to deliver to.
func (b *Bus) Close() {
	b.subsMu.Lock()
	b.closed = true
	subs := make([]*Subscription, 0, len(b.subs))
	for _, s := range b.subs {
		subs = append(subs, s)
	}
	b.subsMu.Unlock()
	for _, s := range subs {
		s.Unsubscribe()
	}
}

// Stats is a snapshot of the bus's counters.
type Stats struct {
	// Published counts events published, by EventType, since New.
	Published map[string]uint64
	// Rejected counts nil events published.
	Rejected uint64
	// Handlers has one entry per live subscription and event type.
	Handlers []HandlerStats
}

// HandlerStats counts one subscription's handling of one event type.
type HandlerStats struct {
	Subscriber string
	EventType  string // "*" for the events.Event wildcard
	Delivered  uint64 // handled, including those that panicked
	Coalesced  uint64 // replaced or merged into a pending event of their key
	Dropped    uint64 // lossy delivery only
	Panicked   uint64
	Pending    int // the subscription's whole mailbox
}

// Stats returns the current counters.
func (b *Bus) Stats() Stats {
	st := Stats{Published: map[string]uint64{}, Rejected: b.rejected.Load()}
	b.topics.Range(func(_, v any) bool {
		t := v.(*topic)
		st.Published[t.eventType] += t.published.Load()
		return true
	})
	b.subsMu.Lock()
	for _, s := range b.subs {
		pending := s.Pending()
		for _, h := range s.handlers {
			st.Handlers = append(st.Handlers, HandlerStats{
				Subscriber: s.name, EventType: h.eventType, Pending: pending,
				Delivered: h.delivered.Load(), Coalesced: h.coalesced.Load(), Dropped: h.dropped.Load(), Panicked: h.panicked.Load(),
			})
		}
	}
	b.subsMu.Unlock()
	sort.Slice(st.Handlers, func(i, j int) bool {
		a, c := st.Handlers[i], st.Handlers[j]
		return a.Subscriber < c.Subscriber || a.Subscriber == c.Subscriber && a.EventType < c.EventType
	})
	return st
}

// handler is a Handler bound into a subscription, with its counters.
type handler struct {
	Handler
	sub       *Subscription
	topic     *topic
	delivered atomic.Uint64
	coalesced atomic.Uint64
	dropped   atomic.Uint64
	panicked  atomic.Uint64
}

// Subscription is one subscriber's mailbox and goroutine.
type Subscription struct {
	bus      *Bus
	name     string
	handlers []*handler
	onIdle   func()
	onDrop   func(events.Event)
	once     bool
	claimed  atomic.Bool // Once: the single event has been taken

	mu  sync.Mutex
	box mailbox

	wake      chan struct{} // capacity 1: "the mailbox may hold something"
	draining  chan struct{} // closed by Drain
	drainOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
	stopped   atomic.Bool
	closeOnce sync.Once

	// busySince is, while a handler runs, 1 + its start as nanoseconds
	// after born; 0 when idle. Offsets from born keep the monotonic clock,
	// so a wall-clock step cannot fake or hide a stall.
	born      time.Time
	busySince atomic.Int64

	// unhandled counts the items in the mailbox and those taken from it
	// whose handling, with the OnIdle after them, has not finished.
	unhandled atomic.Int64
}

// Name returns the subscription's name.
func (s *Subscription) Name() string { return s.name }

// enqueue runs on the publisher's goroutine, under EventBus's lock: it must
// not block.
func (s *Subscription) enqueue(e events.Event, h *handler) {
	if s.stopped.Load() {
		return
	}
	if s.once && !s.claimed.CompareAndSwap(false, true) {
		return
	}
	// Counted before the put, so that the item is never in the mailbox
	// uncounted; a put that adds no item takes it back.
	s.unhandled.Add(1)
	s.mu.Lock()
	result, folded := s.box.put(item{ev: e, h: h})
	s.mu.Unlock()
	s.bus.progress.Add(1)
	if folded > 0 { // pending items a lazy mailbox coalesced as it indexed them
		s.unhandled.Add(int64(-folded))
	}
	switch result {
	case dropped:
		s.unhandled.Add(-1)
		h.dropped.Add(1)
		if s.onDrop != nil {
			s.onDrop(e)
		}
		return
	case coalesced:
		s.unhandled.Add(-1)
		h.coalesced.Add(1)
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) run() {
	defer close(s.done)
	var batch []item
	var batchBurst burst
	for {
		select {
		case <-s.wake:
		case <-s.draining:
		case <-s.stop:
			return
		}
		delivered := 0
		for {
			s.mu.Lock()
			batch = s.box.drain(batch[:0])
			s.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			delivered += len(batch)
			for i := range batch {
				if s.stopped.Load() {
					return
				}
				s.deliver(batch[i])
				batch[i] = item{}
			}
			if s.once {
				s.Unsubscribe()
				return
			}
		}
		if batchBurst.over(delivered, cap(batch), 0) {
			batch = nil // a burst does not pin its peak memory
		}
		// A wake left over from events this loop already drained finds
		// nothing; OnIdle runs only after real work.
		if delivered > 0 && s.onIdle != nil && !s.stopped.Load() {
			s.guard(s.onIdle)
		}
		if delivered > 0 {
			s.unhandled.Add(int64(-delivered))
			s.bus.progress.Add(1)
		}
		select {
		case <-s.draining:
			// Events may have arrived while OnIdle ran; once the mailbox is
			// empty, everything published before Drain has been handled.
			if s.Pending() == 0 {
				s.Unsubscribe()
				return
			}
		default:
		}
	}
}

// deliver runs its handler, marking the subscription busy, and recovers
// a panic. It makes no closure: it runs once per event.
func (s *Subscription) deliver(it item) {
	s.busySince.Store(int64(time.Since(s.born)) + 1)
	defer s.recovered(it.h)
	it.h.call(it.event())
}

// guard runs OnIdle, marking the subscription busy, and recovers a panic.
func (s *Subscription) guard(fn func()) {
	s.busySince.Store(int64(time.Since(s.born)) + 1)
	defer s.recovered(nil)
	fn()
}

// recovered, deferred by deliver and guard, marks the subscription idle,
// counts the delivery and recovers a panic of h (nil: OnIdle).
func (s *Subscription) recovered(h *handler) {
	s.busySince.Store(0)
	if h != nil {
		h.delivered.Add(1)
	}
	if r := recover(); r != nil {
		eventType := "OnIdle"
		if h != nil {
			h.panicked.Add(1)
			eventType = h.eventType
		}
		s.bus.log.Error("bus: handler panicked; subscription continues",
			"subscriber", s.name, "event", eventType, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	}
}

// Unsubscribe stops the subscription. Pending events are discarded; a
// handler that is running finishes. It may be called from the
// subscription's own handler, and more than once.
func (s *Subscription) Unsubscribe() {
	s.closeOnce.Do(func() {
		s.stopped.Store(true)
		b := s.bus
		b.subsMu.Lock()
		for _, h := range s.handlers {
			if h.topic != nil {
				b.unbind(h.topic, h)
			}
		}
		if b.subs[s.name] == s {
			delete(b.subs, s.name)
		}
		b.subsMu.Unlock()
		close(s.stop)
	})
}

// Drain ends the subscription once it has handled every event already in
// its mailbox: every event whose Publish returned before Drain was called is
// handled (and OnIdle runs after the last of them, as after any batch), and
// none published after Drain returns is. Events published concurrently with Drain may or may not be,
// and events held by the start barrier are in no mailbox yet.
// It returns at once; Done is closed when the last event has been handled
// and the subscription has unsubscribed. Unsubscribe or Bus.Close during a
// drain discard what is still pending, as always. Lossless subscribers use
// it to stop without losing what was published before they were told to.
func (s *Subscription) Drain() {
	s.drainOnce.Do(func() {
		b := s.bus
		b.subsMu.Lock()
		for _, h := range s.handlers {
			if h.topic != nil {
				b.unbind(h.topic, h)
			}
		}
		b.subsMu.Unlock()
		close(s.draining)
	})
}

// Done is closed when the subscription's goroutine has exited.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Pending returns the number of events waiting in the mailbox.
func (s *Subscription) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.box.len()
}

// Unhandled returns the number of events published to the subscription
// that its handlers have not finished with: those in its mailbox, and
// those taken from it but not yet delivered (between two deliveries of a
// batch the subscription is neither busy nor holding them pending).
func (s *Subscription) Unhandled() int { return int(s.unhandled.Load()) }

// BusySince reports since when a handler (or OnIdle) has been running, if
// one is. A component that has been busy on one event for too long is
// stalled.
func (s *Subscription) BusySince() (time.Time, bool) {
	offset := s.busySince.Load()
	if offset == 0 {
		return time.Time{}, false
	}
	return s.born.Add(time.Duration(offset - 1)), true
}

// Attachment tracks a pipeline component's subscription for the lifecycle
// registry: it signals SubscriptionReady once the component has subscribed
// and reports BusySince for stall detection. Keep one in the component and
// forward those two methods to it. The zero value is ready to use.
type Attachment struct {
	once  sync.Once
	ready chan struct{}
	sub   atomic.Pointer[Subscription]
}

func (a *Attachment) init() { a.once.Do(func() { a.ready = make(chan struct{}) }) }

// Attach records sub and closes SubscriptionReady. Call it once.
func (a *Attachment) Attach(sub *Subscription) {
	a.init()
	a.sub.Store(sub)
	close(a.ready)
}

// SubscriptionReady is closed once Attach has been called.
func (a *Attachment) SubscriptionReady() <-chan struct{} {
	a.init()
	return a.ready
}

// BusySince is that of the attached subscription; not busy before Attach.
func (a *Attachment) BusySince() (time.Time, bool) {
	if s := a.sub.Load(); s != nil {
		return s.BusySince()
	}
	return time.Time{}, false
}
