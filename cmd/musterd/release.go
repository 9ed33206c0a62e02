package main

// The start's memory, given back.
//
// Why: a cold start decodes, indexes, reconciles and writes the status of
// every resource at once, and Go's collector lets the heap grow to twice
// what is live at that peak. Once the start has settled, most of that heap
// is free, but the runtime keeps it resident, returning it to the system
// only as far as the collector's goal, which is still twice the live
// heap: a daemon at rest would stay at about twice its live heap resident.
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
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
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
func releaseAfterStart(ctx context.Context, ready, written func() bool, release func(what string)) {
	t := time.NewTicker(settlePoll)
	defer t.Stop()
	for i, settled := range []func() bool{ready, written} {
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
		release([]string{"ready", "status written"}[i])
	}
}

// releaseAndLog returns the free heap to the system (debug.FreeOSMemory)
// and logs what was resident before and after, with the heap's live and
// free bytes: the figures that show whether the start's garbage went back,
// and, when the resident size stays high, whether the heap is fragmented
// (free bytes the runtime could not return) or simply live.
func releaseAndLog(log *slog.Logger, what string) {
	before := readMemory()
	debug.FreeOSMemory()
	after := readMemory()
	log.Info("returned the free heap to the system", "after", what,
		"rss_mb_before", before.rssMB, "rss_mb", after.rssMB,
		"heap_live_mb", after.liveMB, "heap_free_mb", after.freeMB, "heap_unused_in_spans_mb", after.fragMB)
}

// memoryFigures are the resident size and the heap's composition, in MiB.
type memoryFigures struct {
	rssMB, liveMB, freeMB, fragMB float64
}

// readMemory reads the process's resident size (VmRSS, 0 where /proc is
// absent) and runtime/metrics' view of the heap: live objects, free spans
// still resident, and the unused bytes inside spans in use.
func readMemory() memoryFigures {
	samples := []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(samples)
	mb := func(s metrics.Sample) float64 {
		if s.Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return float64(s.Value.Uint64()) / (1 << 20)
	}
	return memoryFigures{rssMB: residentMB(), liveMB: mb(samples[0]), freeMB: mb(samples[1]), fragMB: mb(samples[2])}
}

// residentMB is VmRSS from /proc/self/status in MiB, or 0.
func residentMB() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
