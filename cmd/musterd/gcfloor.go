package main

// The collector's heap floor.
//
// Why: every JSON message the go-sdk decodes (internal/json.Unmarshal, over
// segmentio's Decoder) allocates a fresh 32 KiB read buffer, several of
// them for one tool call proxied through /mcp/direct: nearly all the bytes
// musterd allocates under call load. The daemon's live heap while serving
// calls is small (a few MB), and Go's collector starts a cycle each time
// the heap doubles (GOGC=100, with a 4 MB minimum goal): a collection every
// few calls, a large share of the daemon's CPU in marking, and each cycle's
// stop-the-world pauses on the calls' path. The cause is in the go-sdk;
// what musterd can do is not collect so often while its heap is small.
//
// How: after each collection the goal is set so that the heap may grow to
// at least gcHeapFloor before the next one: GOGC = (floor-live)/live, never
// under Go's default 100 (a heap above the floor is collected exactly as
// before, so the large-heap figures of a cold start are unchanged) nor
// over gcMaxPercent. An operator's GOGC in the environment turns this off.
//
// When: at the first request to the MCP endpoint, not at start. Engaged at
// start, the floor would let start-up garbage stay until the heap reached
// 16 MiB, and an idle daemon that serves no MCP client would keep that
// much more resident for nothing.

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

const (
	// gcHeapFloor is the heap size below which musterd does not collect
	// for the sake of the go-sdk's garbage. 16 MiB makes collections several
	// times rarer under call load for a resident size some 10 MB larger
	// while calls are served; a larger floor buys no more latency and costs
	// its whole size in resident memory.
	gcHeapFloor = 16 << 20
	// gcMaxPercent bounds GOGC for a tiny live heap (1 MB: goal 17 MB).
	gcMaxPercent = 1600
	// gcDefaultPercent is Go's own default, the least the floor sets.
	gcDefaultPercent = 100
)

// gcPercentFor is the GOGC that lets a heap of live bytes grow to floor
// before its next collection, within [gcDefaultPercent, gcMaxPercent].
func gcPercentFor(live, floor uint64) int {
	if live == 0 || live >= floor {
		return gcDefaultPercent
	}
	p := (floor - live) * 100 / live
	return int(max(gcDefaultPercent, min(gcMaxPercent, p)))
}

// gcFloorEngaged makes engageGCFloor start the floor once.
var gcFloorEngaged sync.Once

// engageGCFloor starts the floor if it has not started yet. The MCP
// endpoint's handler calls it on every request: after the first, it costs
// an atomic load.
func engageGCFloor() { gcFloorEngaged.Do(startGCFloor) }

// startGCFloor sets the collector's goal after each collection from the
// live heap, unless the environment sets GOGC. It runs for the process's
// life: the goal is the process's.
func startGCFloor() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := -1
	var rearm func()
	rearm = func() {
		// A finalizer runs once after the collection that found its object
		// unreachable: a fresh sentinel for each cycle. 16 bytes: past the
		// tiny allocator, whose objects may never be finalized.
		sentinel := new([16]byte)
		runtime.SetFinalizer(sentinel, func(*[16]byte) {
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				if p := gcPercentFor(sample[0].Value.Uint64(), gcHeapFloor); p != current {
					current = p
					debug.SetGCPercent(p)
				}
			}
			rearm()
		})
	}
	rearm()
}
