package events

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
)

// TriggeredKey is one resource of a ReconciliationTriggered, with the
// correlation ID of the change that triggered it: one trigger may batch
// many chains.
type TriggeredKey struct {
	Key           Key    `json:"key"`
	CorrelationID string `json:"correlationId"`
}

// TriggeredKeys is an immutable list of triggered keys, each key at most
// once. Its zero value is the empty list.
//
// It hides its slice so that no subscriber can change a published trigger.
// Make one with [NewTriggeredKeys] or, key by key, with a
// [TriggeredKeysBuilder].
type TriggeredKeys struct {
	list []TriggeredKey
}

// NewTriggeredKeys copies keys into a list. Keys are made canonical; a key
// given twice keeps its first place and its last correlation ID.
func NewTriggeredKeys(keys ...TriggeredKey) TriggeredKeys {
	if len(keys) == 0 {
		return TriggeredKeys{}
	}
	b := TriggeredKeysBuilder{list: make([]TriggeredKey, 0, len(keys))}
	for _, tk := range keys {
		b.Add(tk)
	}
	// b is dropped here, so its list needs no copy to stay immutable.
	return TriggeredKeys{list: b.list}
}

// DistinctTriggeredKeys makes a list of keys that the caller vouches are
// canonical and distinct, and takes keys over: the caller must not change
// it afterwards. It spares the hash of every key that [NewTriggeredKeys]
// spends on deduplicating, for a caller that knows each key's place
// already (the debouncer's batches).
func DistinctTriggeredKeys(keys []TriggeredKey) TriggeredKeys {
	if len(keys) == 0 {
		return TriggeredKeys{}
	}
	return TriggeredKeys{list: keys}
}

// Len returns the number of keys.
func (t TriggeredKeys) Len() int { return len(t.list) }

// At returns the i'th key.
func (t TriggeredKeys) At(i int) TriggeredKey { return t.list[i] }

// All yields the keys in order.
func (t TriggeredKeys) All() iter.Seq[TriggeredKey] {
	return func(yield func(TriggeredKey) bool) {
		for _, tk := range t.list {
			if !yield(tk) {
				return
			}
		}
	}
}

// Keys returns a fresh slice of the keys alone.
func (t TriggeredKeys) Keys() []Key {
	out := make([]Key, len(t.list))
	for i, tk := range t.list {
		out[i] = tk.Key
	}
	return out
}

// MarshalJSON encodes the list as a JSON array.
func (t TriggeredKeys) MarshalJSON() ([]byte, error) {
	if t.list == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(t.list)
}

// UnmarshalJSON decodes a JSON array.
func (t *TriggeredKeys) UnmarshalJSON(data []byte) error {
	var list []TriggeredKey
	if err := json.Unmarshal(data, &list); err != nil {
		return err
	}
	*t = NewTriggeredKeys(list...)
	return nil
}

// TriggeredKeysBuilder gathers triggered keys one at a time, in amortised
// constant time per key, with the semantics of [NewTriggeredKeys]: keys are
// made canonical, and a key added twice keeps its first place and its last
// correlation ID. Its zero value is empty and ready to use. It is not safe
// for concurrent use.
type TriggeredKeysBuilder struct {
	list  []TriggeredKey
	index map[Key]int // key → position in list; nil up to linearScanKeys keys
}

// linearScanKeys is how many keys a builder dedupes by scanning its list
// before it builds an index. Most triggers name one key or a few: a scan
// beats hashing them and spares a map per trigger.
const linearScanKeys = 8

// Add adds tk.
func (b *TriggeredKeysBuilder) Add(tk TriggeredKey) {
	tk.Key = tk.Key.Canonical()
	if i, ok := b.find(tk.Key); ok {
		b.list[i].CorrelationID = tk.CorrelationID
		return
	}
	b.list = append(b.list, tk)
	switch {
	case b.index != nil:
		b.index[tk.Key] = len(b.list) - 1
	case len(b.list) > linearScanKeys:
		b.index = make(map[Key]int, cap(b.list))
		for i, listed := range b.list {
			b.index[listed.Key] = i
		}
	}
}

func (b *TriggeredKeysBuilder) find(k Key) (int, bool) {
	if b.index != nil {
		i, ok := b.index[k]
		return i, ok
	}
	for i := range b.list {
		if b.list[i].Key == k {
			return i, true
		}
	}
	return 0, false
}

// AddAll adds every key of keys, in order. keys itself is left alone.
func (b *TriggeredKeysBuilder) AddAll(keys TriggeredKeys) {
	for _, tk := range keys.list {
		b.Add(tk)
	}
}

// Len returns the number of distinct keys added so far.
func (b *TriggeredKeysBuilder) Len() int { return len(b.list) }

// Build returns the keys added so far. It copies them, so the result stays
// immutable while the builder goes on.
func (b *TriggeredKeysBuilder) Build() TriggeredKeys {
	if len(b.list) == 0 {
		return TriggeredKeys{}
	}
	return TriggeredKeys{list: slices.Clone(b.list)}
}

// TriggerMerger folds ReconciliationTriggered events into one: the union of
// their keys, each in its first place and with its newest correlation ID,
// under the newest event's reason and metadata. It is meant for events of
// one reason: the reasons of all but the newest are dropped, so a subscriber
// that acts on the reason must merge per reason.
//
// Folding keeps each event's key list as it is (lists are immutable, and
// each is distinct within itself) and builds the union once, when the
// result is taken: a fold costs amortised constant time and no hashing,
// where merging key by key hashed every key into an index as it came (the
// largest allocation of the no-op benchmark's coordinator). So that a key
// folded again and again does not grow the fold without bound, the lists
// are merged into one whenever they hold more than twice the keys they held
// at the last merge, plus 1,024. It never changes the events folded in,
// whose keys other subscribers share. Its method set is that of
// bus.Merger, for coalescing subscriptions that accumulate triggers
// (bus.Coalescing(key).WithMerge). It is not safe for concurrent use.
type TriggerMerger struct {
	newest ReconciliationTriggered // without its Keys: parts hold them
	parts  []TriggeredKeys
	held   int // keys in parts, a key counted once per list it is in
	merged int // keys in parts at the last merge
}

// NewTriggerMerger starts a fold with first.
func NewTriggerMerger(first ReconciliationTriggered) *TriggerMerger {
	m := &TriggerMerger{}
	m.fold(first)
	return m
}

// Add folds in newer, which must be a ReconciliationTriggered: anything
// else is a programming error and panics.
func (m *TriggerMerger) Add(newer Event) {
	t, ok := newer.(ReconciliationTriggered)
	if !ok {
		panic(fmt.Sprintf("events: TriggerMerger.Add(%T): only ReconciliationTriggered events fold into a trigger", newer))
	}
	m.fold(t)
}

func (m *TriggerMerger) fold(t ReconciliationTriggered) {
	if t.Keys.Len() > 0 {
		m.parts = append(m.parts, t.Keys)
		m.held += t.Keys.Len()
	}
	t.Keys = TriggeredKeys{}
	m.newest = t
	if m.held > 2*m.merged+1024 {
		union := m.union()
		m.parts = append(m.parts[:0], union)
		m.held, m.merged = union.Len(), union.Len()
	}
}

// union returns the union of the parts' keys.
func (m *TriggerMerger) union() TriggeredKeys {
	if len(m.parts) == 1 {
		return m.parts[0]
	}
	b := TriggeredKeysBuilder{list: make([]TriggeredKey, 0, m.held)}
	if m.held > linearScanKeys {
		b.index = make(map[Key]int, m.held)
	}
	for _, part := range m.parts {
		for _, tk := range part.list {
			b.Add(tk)
		}
	}
	// b is dropped here, so its list needs no copy to stay immutable.
	return TriggeredKeys{list: b.list}
}

// Result returns the folded trigger, a ReconciliationTriggered. Folding
// more events in afterwards does not change it.
func (m *TriggerMerger) Result() Event {
	t := m.newest
	t.Keys = m.union()
	return t
}
