package controls

import "github.com/musterd/musterd/pkg/events"

// Type names of the events controls publishes.
const (
	TypeServiceRequested      = "ServiceRequested"
	TypeReconciliationToggled = "ReconciliationToggled"
	TypeResyncRequested       = "ResyncRequested"
)

// Actions of a ServiceRequested.
const (
	ActionStart   = "start"
	ActionStop    = "stop"
	ActionRestart = "restart"
)

// ServiceRequested says an operator asked to start, stop or restart a
// declared MCP server. The reconcile it causes carries its correlation ID.
type ServiceRequested struct {
	events.Meta
	Key    events.Key `json:"key"`
	Action string     `json:"action"`
	// Reason is the operator's, redacted.
	Reason string `json:"reason,omitempty"`
}

func (ServiceRequested) EventType() string  { return TypeServiceRequested }
func (e ServiceRequested) ResourceKey() Key { return e.Key }

// Key is events.Key, for the method's signature.
type Key = events.Key

// ReconciliationToggled says an operator enabled or disabled the
// reconciliation of a kind.
type ReconciliationToggled struct {
	events.Meta
	Kind    string `json:"kind"`
	Enabled bool   `json:"enabled"`
}

func (ReconciliationToggled) EventType() string { return TypeReconciliationToggled }

// ResyncRequested says an operator asked for a full reconcile of a kind, or
// of every kind when Kind is empty; Keys is how many keys were triggered.
type ResyncRequested struct {
	events.Meta
	Kind string `json:"kind,omitempty"`
	Keys int    `json:"keys"`
}

func (ResyncRequested) EventType() string { return TypeResyncRequested }

func init() {
	events.Register[ServiceRequested]()
	events.Register[ReconciliationToggled]()
	events.Register[ResyncRequested]()
}
