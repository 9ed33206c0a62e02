package events

import (
	"encoding/json"
	"iter"
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
type TriggeredKeys struct {
	list []TriggeredKey
}

// NewTriggeredKeys copies keys into a list. Keys are made canonical; a key
// given twice keeps its first place and its last correlation ID.
func NewTriggeredKeys(keys ...TriggeredKey) TriggeredKeys {
	if len(keys) == 0 {
		return TriggeredKeys{}
	}
	list := make([]TriggeredKey, 0, len(keys))
	index := make(map[Key]int, len(keys))
	for _, tk := range keys {
		tk.Key = tk.Key.Canonical()
		if i, ok := index[tk.Key]; ok {
			list[i].CorrelationID = tk.CorrelationID
			continue
		}
		index[tk.Key] = len(list)
		list = append(list, tk)
	}
	return TriggeredKeys{list: list}
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

// MergeTriggers folds newer into older: the union of their keys, each with
// its newest correlation ID, under newer's reason and metadata. Subscribers
// that coalesce triggers use it so that memory stays bounded by the number
// of keys while no key is lost.
func MergeTriggers(older, newer ReconciliationTriggered) ReconciliationTriggered {
	merged := make([]TriggeredKey, 0, older.Keys.Len()+newer.Keys.Len())
	merged = append(merged, older.Keys.list...)
	merged = append(merged, newer.Keys.list...)
	newer.Keys = NewTriggeredKeys(merged...)
	return newer
}
