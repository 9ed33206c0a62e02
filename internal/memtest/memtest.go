// Package memtest measures what the heap retains, for the benchmarks that
// report bytes a resource: the index's, the status store's,
// the workflow reconciler's.
//
// Place: test support; only test binaries import it. It imports nothing
// of musterd's.
package memtest

import "runtime"

// LiveHeap is the heap's live bytes: two collections first, so that what
// the first one finalizes or sweeps is gone too.
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
