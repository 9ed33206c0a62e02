package statusync

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/keyqueue"
)

// A page of the store's Records (256 entries) is an exact size class at 72
// bytes an entry (18 KB); a field more, or a field order that pads, costs a
// resource 10 bytes or more, at every resource a daemon holds.
func TestEntryIs72Bytes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are of a 64-bit platform")
	}
	assert.Equal(t, uintptr(72), unsafe.Sizeof(entry{}))
}

// An instant gives back the very time.Time it was made of, or says that it
// cannot.
func TestInstantRoundTripsOrDeclines(t *testing.T) {
	for _, at := range []time.Time{
		{}, time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), time.Date(1969, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Now().Round(0).UTC(),
	} {
		i, ok := instantOf(at)
		assert.True(t, ok, at)
		assert.True(t, at == i.time(time.Time{}), at) // the representation, not only the instant
	}
	for _, at := range []time.Time{
		time.Now(), time.Now().Round(0), time.Unix(0, 0).UTC(), time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("X", 3600)),
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC), // beyond UnixNano's range
		time.Time{}.In(time.FixedZone("X", 3600)),
	} {
		i, ok := instantOf(at)
		assert.False(t, ok, at)
		assert.Equal(t, exactInstant, i, at)
	}
}

// BenchmarkStoreUpdate is the CPU a key's Reconciling and Synced cost the
// store's subscriber, and a Get of the result; the write queue is there but
// no writer takes from it.
func BenchmarkStoreUpdate(b *testing.B) {
	s := NewStore(bus.New(bus.Options{}), StoreOptions{})
	s.queue = keyqueue.New(keyqueue.Config{Name: storeName})
	keys := make([]events.Key, 1000)
	for i := range keys {
		keys[i] = events.NewKey("MCPServer", "team", fmt.Sprint("server-", i))
	}
	meta := events.Meta{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CorrelationID: "c1"}
	i := 0
	for b.Loop() {
		k := keys[i%len(keys)]
		i++
		s.onStarted(events.ReconciliationStarted{Meta: meta, Key: k, Attempt: 1})
		s.onSynced(events.ResourceSynced{Meta: meta, Key: k, Attempt: 1, Hash: "h1"})
		if _, ok := s.Get(k); !ok {
			b.Fatal("no status")
		}
	}
}
