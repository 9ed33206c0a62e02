package replay

import (
	"runtime"
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
	// watchBus and watch tell the sequencer what settle waits for.
	watchBus(b *bus.Bus)
	watch(q quiescer)
	// started waits until the registry has started every stage, or until
	// it has ended (when ran holds its error; started leaves it there).
	started(reg *lifecycle.Registry, ran <-chan error) bool
	// emitted tells the sequencer that a stage emitted an event.
	emitted()
	// settle returns once the stages have done everything they can do at
	// the current time.
	settle()
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

func (bubble) clock() clock.WithTicker { return clock.RealClock{} }
func (bubble) now() time.Time          { return time.Now() }
func (bubble) watchBus(*bus.Bus)       {}
func (bubble) watch(quiescer)          {}
func (bubble) settle()                 { synctest.Wait() }

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
	buses  []*bus.Bus
	stages []quiescer
	// ran holds the registry's error once it has ended (a critical stage
	// failed): then nothing will become quiescent, and waiting stops.
	ran <-chan error
}

func newStepped(start time.Time) *stepped {
	return &stepped{fake: testingclock.NewFakeClock(start)}
}

func (s *stepped) clock() clock.WithTicker { return s.fake }
func (s *stepped) now() time.Time          { return s.fake.Now() }
func (s *stepped) watchBus(b *bus.Bus)     { s.buses = append(s.buses, b) }
func (s *stepped) watch(q quiescer)        { s.stages = append(s.stages, q) }
func (s *stepped) emitted()                {}

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

func (s *stepped) settle() {
	for poll := (pollBackoff{}); !s.quiescent(); poll.wait() {
	}
}

// quiescent reports whether every bus is idle and every stage has nothing
// due, all at once (see stepped), or the registry has ended.
func (s *stepped) quiescent() bool {
	if len(s.ran) > 0 {
		return true
	}
	before := s.progress()
	now := s.fake.Now()
	for _, b := range s.buses {
		if !b.Idle() {
			return false
		}
	}
	for _, q := range s.stages {
		if quiet, _ := q.Quiescent(now); !quiet {
			return false
		}
	}
	return s.progress() == before
}

func (s *stepped) progress() uint64 {
	var sum uint64
	for _, b := range s.buses {
		sum += b.Progress()
	}
	return sum
}

// advance sets the clock to to, or to the earliest instant before it at
// which a stage has said it will act (a refractory period's end, a retry,
// a resync); the fake clock fires the timers due then.
func (s *stepped) advance(to time.Time) {
	now := s.fake.Now()
	for _, q := range s.stages {
		if _, wake := q.Quiescent(now); !wake.IsZero() && wake.Before(to) {
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
