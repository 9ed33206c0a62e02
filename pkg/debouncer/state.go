package debouncer

import (
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// keyState is a key in its refractory period. A key is tracked exactly
// while it is in one; it sits in the deadline heap for as long.
type keyState struct {
	key events.Key
	// deadline ends the refractory period.
	deadline time.Time
	// seq orders keys whose deadlines are equal by when they entered the
	// period, so that a trigger lists them in a reproducible order.
	seq uint64
	// index is the key's position in the heap.
	index int
	// pending says a change arrived inside the period and fires at its end;
	// correlationID is that of the newest such change.
	pending bool
	// runtimeOnly says every pending change came from a running service
	// (ServiceStateChanged), none from a definition: the period then ends
	// with a service-state trigger, which does not reset a key's retry
	// backoff as a change of its definition does.
	runtimeOnly   bool
	correlationID string
}

// deadlineHeap is a min-heap of refractory deadlines, for container/heap.
type deadlineHeap []*keyState

func (h deadlineHeap) Len() int { return len(h) }

func (h deadlineHeap) Less(i, j int) bool {
	if !h[i].deadline.Equal(h[j].deadline) {
		return h[i].deadline.Before(h[j].deadline)
	}
	return h[i].seq < h[j].seq
}

func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *deadlineHeap) Push(x any) {
	s := x.(*keyState)
	s.index = len(*h)
	*h = append(*h, s)
}

func (h *deadlineHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return s
}

// keySet is an insertion-ordered set of triggered keys, each with its
// newest correlation ID. Its memory is bounded by the number of keys,
// however often they change.
type keySet struct {
	list  []events.TriggeredKey
	index map[events.Key]int
}

// add records key and reports whether it was there already.
func (s *keySet) add(key events.Key, correlationID string) (had bool) {
	if i, ok := s.index[key]; ok {
		s.list[i].CorrelationID = correlationID
		return true
	}
	if s.index == nil {
		s.index = map[events.Key]int{}
	}
	s.index[key] = len(s.list)
	s.list = append(s.list, events.TriggeredKey{Key: key, CorrelationID: correlationID})
	return false
}

// batch gathers the keys that fired at once for one reason, until they are
// published together.
type batch struct {
	reason events.Reason
	keys   []events.TriggeredKey
	// correlationID names the trigger when it has no keys: an index-synced
	// trigger is published even then.
	correlationID string
}

// trigger makes the event for keys. Its correlation ID is that of its first
// key, so that the same input always makes the same event.
func trigger(reason events.Reason, keys []events.TriggeredKey, correlationID string, at time.Time) events.ReconciliationTriggered {
	list := events.NewTriggeredKeys(keys...)
	if list.Len() > 0 {
		correlationID = list.At(0).CorrelationID
	}
	return events.ReconciliationTriggered{
		Meta:   events.Meta{Time: at.Round(0).UTC(), CorrelationID: correlationID},
		Keys:   list,
		Reason: reason,
	}
}
