package debouncer

import (
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// keyState is the record of a key in its refractory period, in a slice
// indexed by the key's handle (events.Interner). A key holds a handle
// exactly while it is in a period; the deadline queue has a live entry of
// it for as long.
type keyState struct {
	// seq is that of the key's last firing, which started its period: the
	// deadline queue's entry with this seq is the period's end.
	seq uint64
	// pending says a change arrived inside the period and fires at its end;
	// correlationID is that of the newest such change.
	pending bool
	// runtimeOnly says every pending change came from a running service
	// (ServiceStateChanged), none from a definition: the period then ends
	// with a service-state trigger, which does not reset a key's retry
	// backoff as a change of its definition does.
	runtimeOnly   bool
	correlationID string
	// batchFlush, batchIdx and batchPos place the key in the batches
	// waiting to be published: in batches[batchIdx].keys[batchPos], if
	// batchFlush is the debouncer's flush count (a flush invalidates every
	// place at once).
	batchFlush         uint64
	batchIdx, batchPos int32
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
	// keys are canonical and distinct unless mixed: a key was fired with
	// another reason before it came here, so its place tells nothing of
	// this batch, which is then deduplicated as it is published.
	keys  []events.TriggeredKey
	mixed bool
	// correlationID names the trigger when it has no keys: an index-synced
	// trigger is published even then.
	correlationID string
}

// trigger makes the event for keys, which it takes over. Its correlation
// ID is that of its first key, so that the same input always makes the
// same event. Unless distinct vouches that keys are canonical and
// distinct, they are deduplicated.
func trigger(reason events.Reason, keys []events.TriggeredKey, distinct bool, correlationID string, at time.Time) events.ReconciliationTriggered {
	var list events.TriggeredKeys
	if distinct {
		list = events.DistinctTriggeredKeys(keys)
	} else {
		list = events.NewTriggeredKeys(keys...)
	}
	if list.Len() > 0 {
		correlationID = list.At(0).CorrelationID
	}
	return events.ReconciliationTriggered{
		Meta:   events.Meta{Time: at.Round(0).UTC(), CorrelationID: correlationID},
		Keys:   list,
		Reason: reason,
	}
}
