// Command heapspans reads a Go heap dump (runtime/debug.WriteHeapDump) and
// says, for each size class of small objects, how full the spans holding
// its live objects are: what a heap profile cannot show, and what the
// release log's heap_unused_in_spans_mb only totals.
//
// It shows, for instance, long-lived objects of a cold start that share a
// size class with the scan's garbage: once the garbage is collected their
// spans stay partly empty, resident memory no heap profile attributes.
//
// Usage:
//
//	MUSTERD_DEBUG_PPROF=127.0.0.1:6060 musterd run …
//	curl -o heap.dump 127.0.0.1:6060/debug/pprof/heapdump
//	go run ./internal/heapspans heap.dump
//
// Place: a developer's tool; nothing imports it. It reads the dump's
// objects (format "go1.7 heap dump", which the runtime still writes) and
// groups them into spans by address, each class's span being as many
// pages as the runtime's size class table gives it. The dump does not
// give spans' bounds: a span is taken to begin at the page of its first
// live object, which is exact for the one-page spans of the classes up to
// 1,280 bytes and may merge neighbouring spans of a larger class, so that
// their unused bytes are a lower bound.
package main
