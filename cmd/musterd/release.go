package main

// The start's memory, given back.
//
// Why: a cold start decodes, indexes, reconciles and writes the status of
// every resource at once, and Go's collector lets the heap grow to twice
// what is live at that peak. Once the start has settled, most of that heap
// is free, but the runtime keeps it resident, returning it to the system
// only as far as the collector's goal, which is still twice the live heap:
// issue #15's profile of 10,000 resources showed 42 MB live at rest and
// 98 MB of anonymous resident memory.
//
// How: once /readyz is true (every key of the initial listing has an
// outcome), one collection returns the free heap to the system
// (debug.FreeOSMemory); once the status store also has no write queued or
// in progress, another. The status writes wait for /readyz
// (statusWritesHold) and with 100,000 resources take a minute after it.
// Both happen once per process: later bursts are smaller, and the
// collector's own pacing, with its default GOGC, governs them.

import (
	"context"
	"time"
)

// settlePoll is how often releaseAfterStart looks whether the start has
// settled; it stops looking once it has. A look is an atomic load and a
// glance at the status store's counters, so it can be often: the start's
// garbage goes back within a fifth of a second of the last status write.
const settlePoll = 100 * time.Millisecond

// releaseAfterStart calls release (debug.FreeOSMemory in the daemon) once
// ready reports true, and again once written does too, each when it did
// twice in a row, a poll apart (the store may not have seen the last
// outcomes yet when /readyz turns true). It returns early when ctx is
// done.
func releaseAfterStart(ctx context.Context, ready, written func() bool, release func()) {
	t := time.NewTicker(settlePoll)
	defer t.Stop()
	for _, settled := range []func() bool{ready, written} {
		for streak := 0; streak < 2; {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if settled() {
					streak++
				} else {
					streak = 0
				}
			}
		}
		release()
	}
}
