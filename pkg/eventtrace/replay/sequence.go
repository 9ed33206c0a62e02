package replay

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing/synctest"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/lifecycle"
)

// sequencer is how a replay waits for the stages and moves time on: in a
// testing/synctest bubble (Replay) or on a fake clock it steps itself
// (ReplayStepped). Everything else about a replay is the same code, so
// that both give the same output.
type sequencer interface {
	// clock is the stages' clock.
	clock() clock.WithTicker
	now() time.Time
	// watchBus and watch tell the sequencer what settle waits for, and
	// by what name to report it busy.
	watchBus(name string, b *bus.Bus)
	watch(name string, q quiescer)
	// started waits until the registry has started every stage, or until
	// it has ended (when ran holds its error; started leaves it there).
	started(reg *lifecycle.Registry, ran <-chan error) bool
	// emitted tells the sequencer that a stage emitted an event.
	emitted()
	// settle returns once the stages have done everything they can do at
	// the current time, or an error naming what is still busy if they do
	// not within the sequencer's bound.
	settle() error
	// advance moves time on to to, or to an earlier instant at which a
	// stage acts on its own. It is called when the stages are settled.
	advance(to time.Time)
}

// quiescer is a stage that reports when it has nothing to do:
// debouncer.Debouncer, coordinator.Coordinator and statusync.Store.
type quiescer interface {
	Quiescent(now time.Time) (quiet bool, wake time.Time)
}

// bubble sequences a replay in a synctest bubble, whose clock is virtual:
// settled means every goroutine of the bubble is durably blocked.
type bubble struct {
	notify chan struct{} // a stage emitted something; capacity 1
}

func (bubble) clock() clock.WithTicker   { return clock.RealClock{} }
func (bubble) now() time.Time            { return time.Now() }
func (bubble) watchBus(string, *bus.Bus) {}
func (bubble) watch(string, quiescer)    {}

// settle cannot fail: synctest.Wait returns once every goroutine of the
// bubble is durably blocked, and the test's own deadline bounds a stage
// that never blocks.
func (bubble) settle() error {
	synctest.Wait()
	return nil
}

func (bubble) started(reg *lifecycle.Registry, _ <-chan error) bool {
	synctest.Wait() // every component has started and subscribed, or failed to
	return reg.Ready()
}

func (b bubble) emitted() {
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

// advance sleeps until to, in virtual time, unless a stage's own timer
// makes it emit first.
func (b bubble) advance(to time.Time) {
	select { // drop wakeups for what was relayed already
	case <-b.notify:
	default:
	}
	timer := time.NewTimer(time.Until(to))
	defer timer.Stop()
	select {
	case <-b.notify:
	case <-timer.C:
	}
}

// stepped sequences a replay on a fake clock. The stages are settled when
// they are quiescent: every bus has handled every event published on it
// (Bus.Idle) and every watched stage has nothing due now (Quiescent). The
// checks run one after another; reading the buses' Progress before and
// after them, unchanged, shows that nothing was delivered meanwhile, so
// that they held all at once. That suffices because work passes between
// the stages only through the buses: a stage that becomes busy again was
// handed an event, which the Progress counts, or its own timer fired,
// which only advance makes happen.
type stepped struct {
	fake   *testingclock.FakeClock
	buses  []watchedBus
	stages []watchedStage
	// bound is how long, in real time, settle waits for quiescence at one
	// instant before it fails naming what is busy.
	bound time.Duration
	// ran holds the registry's error once it has ended (a critical stage
	// failed): then nothing will become quiescent, and waiting stops.
	ran <-chan error
}

type watchedBus struct {
	name string
	bus  *bus.Bus
}

type watchedStage struct {
	name string
	q    quiescer
}

func newStepped(start time.Time, bound time.Duration) *stepped {
	return &stepped{fake: testingclock.NewFakeClock(start), bound: bound}
}

func (s *stepped) clock() clock.WithTicker { return s.fake }
func (s *stepped) now() time.Time          { return s.fake.Now() }
func (s *stepped) watchBus(name string, b *bus.Bus) {
	s.buses = append(s.buses, watchedBus{name: name, bus: b})
}
func (s *stepped) watch(name string, q quiescer) {
	s.stages = append(s.stages, watchedStage{name: name, q: q})
}
func (s *stepped) emitted() {}

// started polls: starting takes no time on the fake clock, and the
// registry has no channel to wait on.
func (s *stepped) started(reg *lifecycle.Registry, ran <-chan error) bool {
	s.ran = ran
	for poll := (pollBackoff{}); ; poll.wait() {
		if reg.Ready() {
			return true
		}
		if len(ran) > 0 {
			return false
		}
	}
}

func (s *stepped) settle() error {
	deadline := time.Now().Add(s.bound)
	for poll := (pollBackoff{}); !s.quiescent(); poll.wait() {
		if time.Now().After(deadline) {
			return fmt.Errorf("the stages were not quiescent at %s after %s of real time; busy: %w",
				s.fake.Now().UTC().Format(time.RFC3339Nano), s.bound, s.busy())
		}
	}
	return nil
}

// busy names what keeps the stages from being quiescent: each bus with
// events unhandled, with its subscriptions' pending counts, and each stage
// with something due now.
func (s *stepped) busy() error {
	var errs []error
	now := s.fake.Now()
	for _, w := range s.buses {
		if w.bus.Idle() {
			continue
		}
		var pending []string
		for _, h := range w.bus.Stats().Handlers {
			if h.Pending > 0 {
				pending = append(pending, fmt.Sprintf("%s %s: %d pending", h.Subscriber, h.EventType, h.Pending))
			}
		}
		if len(pending) == 0 {
			pending = append(pending, "a handler or OnIdle still running")
		}
		errs = append(errs, fmt.Errorf("the bus of %s has events unhandled (%s)", w.name, strings.Join(pending, "; ")))
	}
	for _, w := range s.stages {
		if quiet, wake := w.q.Quiescent(now); !quiet {
			errs = append(errs, fmt.Errorf("%s has work due (its next wake: %s)", w.name, wake.UTC().Format(time.RFC3339Nano)))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("nothing now: the stages were busy and are quiet again"))
	}
	return errors.Join(errs...)
}

// quiescent reports whether every bus is idle and every stage has nothing
// due, all at once (see stepped), or the registry has ended.
func (s *stepped) quiescent() bool {
	if len(s.ran) > 0 {
		return true
	}
	before := s.progress()
	now := s.fake.Now()
	for _, w := range s.buses {
		if !w.bus.Idle() {
			return false
		}
	}
	for _, w := range s.stages {
		if quiet, _ := w.q.Quiescent(now); !quiet {
			return false
		}
	}
	return s.progress() == before
}

func (s *stepped) progress() uint64 {
	var sum uint64
	for _, w := range s.buses {
		sum += w.bus.Progress()
	}
	return sum
}

// advance sets the clock to to, or to the earliest instant before it at
// which a stage has said it will act (a refractory period's end, a retry,
// a resync); the fake clock fires the timers due then.
func (s *stepped) advance(to time.Time) {
	now := s.fake.Now()
	for _, w := range s.stages {
		if _, wake := w.q.Quiescent(now); !wake.IsZero() && wake.Before(to) {
			to = wake
		}
	}
	s.fake.SetTime(to)
}

// pollBackoff paces a loop that polls a condition: it yields the processor
// at first, as what it waits for is usually a few goroutine switches
// away, then sleeps a little between polls. The condition decides; the
// pace only spares the CPU.
type pollBackoff struct{ polls int }

func (p *pollBackoff) wait() {
	p.polls++
	if p.polls < 64 {
		runtime.Gosched()
		return
	}
	time.Sleep(20 * time.Microsecond)
}
