package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// envelope is how an event is written: its type name beside its payload.
type envelope struct {
	Type  string          `json:"type"`
	Event json.RawMessage `json:"event"`
}

type decoder func(data []byte) (Event, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]decoder{}
)

func init() {
	Register[ResourceChanged]()
	Register[IndexSynchronized]()
	Register[ReconciliationTriggered]()
	Register[ReconciliationStarted]()
	Register[ResourceSynced]()
	Register[ResourceFailed]()
	Register[StatusSynced]()
	Register[StatusSyncFailed]()
	Register[ServiceStateChanged]()
	Register[BecameLeader]()
	Register[LostLeadership]()
	Register[WorkflowExecutionStarted]()
	Register[WorkflowExecutionFinished]()
	Register[WorkflowStepStarted]()
	Register[WorkflowStepFinished]()
	Register[DefinitionValidated]()
	Register[ToolCallsCounted]()
}

// Register makes T decodable by Unmarshal under its EventType name. The
// catalogue's types are registered already; user components register their
// own. Registering a second type under a name taken panics: two types with
// one name would make traces ambiguous.
func Register[T Event]() {
	var zero T
	name := zero.EventType()
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, taken := registry[name]; taken {
		panic(fmt.Sprintf("events: type name %q registered twice", name))
	}
	registry[name] = func(data []byte) (Event, error) {
		var v T
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		return v, nil
	}
}

// Types lists the registered type names, sorted.
func Types() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for name := range registry {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Marshal encodes e with its type name, as {"type":…,"event":{…}}.
func Marshal(e Event) ([]byte, error) {
	if e == nil {
		return nil, fmt.Errorf("events: cannot marshal a nil event")
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("events: marshal %s: %w", e.EventType(), err)
	}
	return json.Marshal(envelope{Type: e.EventType(), Event: payload})
}

// Unmarshal decodes what Marshal wrote. An unknown type name or a payload
// with unknown fields is an error.
func Unmarshal(data []byte) (Event, error) {
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	registryMu.RLock()
	decode, ok := registry[env.Type]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("events: unknown event type %q", env.Type)
	}
	if len(env.Event) == 0 {
		return nil, fmt.Errorf("events: %s has no payload", env.Type)
	}
	e, err := decode(env.Event)
	if err != nil {
		return nil, fmt.Errorf("events: decode %s: %w", env.Type, err)
	}
	return e, nil
}
