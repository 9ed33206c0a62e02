package events

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Event is implemented by every event type. User components may define their
// own event types; they travel on the bus like the catalogue's own.
type Event interface {
	// EventType is the stable name of the event's type, such as
	// "ResourceChanged". Two Go types must not share one name.
	EventType() string
	// Metadata returns the event's timestamp and correlation ID.
	Metadata() Meta
}

// Meta is embedded in every catalogue event.
type Meta struct {
	// Time is when the event was made, in UTC, without a monotonic reading so
	// that it survives a JSON round trip unchanged.
	Time time.Time `json:"time"`
	// CorrelationID ties together the events of one chain.
	CorrelationID string `json:"correlationId"`
}

// Metadata returns m. Embedding Meta gives an event its Metadata method.
func (m Meta) Metadata() Meta { return m }

// NewMeta stamps an event made now. An empty correlationID starts a new
// chain with a fresh ID; pass the ID of the event being reacted to in order
// to continue its chain.
func NewMeta(correlationID string) Meta { return NewMetaAt(time.Now(), correlationID) }

// NewMetaAt is NewMeta for an event made at t, as a stage that reads an
// injected clock stamps its events: UTC, the monotonic reading stripped.
func NewMetaAt(t time.Time, correlationID string) Meta {
	if correlationID == "" {
		correlationID = NewCorrelationID()
	}
	return Meta{Time: t.Round(0).UTC(), CorrelationID: correlationID}
}

// Now is the time as events record it: UTC with the monotonic reading
// stripped. Under testing/synctest it is the bubble's virtual time.
func Now() time.Time { return time.Now().Round(0).UTC() }

// NewCorrelationID returns a random 16-hex-digit ID.
func NewCorrelationID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error.
	return hex.EncodeToString(b[:])
}

// DefaultNamespace is the namespace of a resource that names none. Muster
// lost a restart to two sources spelling one key "" and "default"; a Key
// never holds an empty namespace.
const DefaultNamespace = "default"

// Key names one resource: kind, namespace and name.
//
// Build keys with [NewKey] or normalise them with [Key.Canonical]; both fill
// in the default namespace. The JSON decoder does the same.
type Key struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// NewKey returns the canonical key for kind, namespace and name.
func NewKey(kind, namespace, name string) Key {
	return Key{Kind: kind, Namespace: namespace, Name: name}.Canonical()
}

// Canonical returns k with the default namespace filled in.
func (k Key) Canonical() Key {
	if k.Namespace == "" {
		k.Namespace = DefaultNamespace
	}
	return k
}

// String spells k as kind/namespace/name.
func (k Key) String() string {
	k = k.Canonical()
	return k.Kind + "/" + k.Namespace + "/" + k.Name
}

// ParseKey reads a key spelled kind/namespace/name or kind/name.
func ParseKey(s string) (Key, error) {
	parts := strings.Split(s, "/")
	switch {
	case len(parts) == 3 && parts[0] != "" && parts[2] != "":
		return NewKey(parts[0], parts[1], parts[2]), nil
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return NewKey(parts[0], "", parts[1]), nil
	}
	return Key{}, fmt.Errorf("events: key %q is not kind/namespace/name or kind/name", s)
}

// UnmarshalJSON decodes a key and makes it canonical.
func (k *Key) UnmarshalJSON(data []byte) error {
	type plain Key
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*k = Key(p).Canonical()
	return nil
}

// Keyed is implemented by events about one resource. Subscribers coalesce
// such events by their key.
type Keyed interface {
	Event
	ResourceKey() Key
}

// Operation is what happened to a resource's definition.
type Operation string

// Operations.
const (
	OperationCreate Operation = "create"
	OperationUpdate Operation = "update"
	OperationDelete Operation = "delete"
)

// Source is where a change was seen.
type Source string

// Sources.
const (
	SourceFilesystem   Source = "filesystem"
	SourceKubernetes   Source = "kubernetes"
	SourceManual       Source = "manual"
	SourceServiceState Source = "service-state"
	// SourceDependency: a workflow that this one calls (workflow_<name>)
	// was created, changed or deleted, which may change this one's
	// verdict.
	SourceDependency Source = "dependency"
)

// Reason says why a reconciliation was triggered.
type Reason string

// Reasons.
const (
	// ReasonChange: the first change of a key after a quiet period.
	ReasonChange Reason = "change"
	// ReasonRefractoryEnd: changes that arrived inside a key's refractory
	// period, fired once when it ended.
	ReasonRefractoryEnd Reason = "refractory-end"
	// ReasonIndexSynced: a watcher finished its initial listing.
	ReasonIndexSynced Reason = "index-synced"
	// ReasonResync: the periodic level-triggered resync.
	ReasonResync Reason = "resync"
	// ReasonManual: an operator or a program asked for it.
	ReasonManual Reason = "manual"
	// ReasonRetry: a failed reconcile's backoff ran out.
	ReasonRetry Reason = "retry"
	// ReasonServiceState: a running service changed state (crashed, failed a
	// health check).
	ReasonServiceState Reason = "service-state"
)
