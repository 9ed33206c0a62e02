package events

import "time"

// Stable type names of the catalogue's events.
const (
	TypeResourceChanged         = "ResourceChanged"
	TypeIndexSynchronized       = "IndexSynchronized"
	TypeReconciliationTriggered = "ReconciliationTriggered"
	TypeReconciliationStarted   = "ReconciliationStarted"
	TypeResourceSynced          = "ResourceSynced"
	TypeResourceFailed          = "ResourceFailed"
	TypeStatusSynced            = "StatusSynced"
	TypeStatusSyncFailed        = "StatusSyncFailed"
	TypeServiceStateChanged     = "ServiceStateChanged"
	TypeBecameLeader            = "BecameLeader"
	TypeLostLeadership          = "LostLeadership"
)

// ResourceChanged says a resource's definition was created, updated or
// deleted. Watchers publish it; so do manual triggers, with SourceManual.
type ResourceChanged struct {
	Meta
	Key       Key       `json:"key"`
	Operation Operation `json:"operation"`
	Source    Source    `json:"source"`
	// FilePath is the definition's file, in filesystem mode.
	FilePath string `json:"filePath,omitempty"`
	// ContentHash identifies the definition's content, in filesystem mode.
	ContentHash string `json:"contentHash,omitempty"`
	// Generation is metadata.generation, in Kubernetes mode.
	Generation int64 `json:"generation,omitempty"`
}

func (ResourceChanged) EventType() string  { return TypeResourceChanged }
func (e ResourceChanged) ResourceKey() Key { return e.Key }

// IndexSynchronized says a watcher finished its initial listing: every
// resource it could see has been published as a ResourceChanged.
type IndexSynchronized struct {
	Meta
	Source Source `json:"source"`
}

func (IndexSynchronized) EventType() string { return TypeIndexSynchronized }

// ReconciliationTriggered asks the coordinator to reconcile some keys.
type ReconciliationTriggered struct {
	Meta
	Keys   TriggeredKeys `json:"keys"`
	Reason Reason        `json:"reason"`
}

func (ReconciliationTriggered) EventType() string { return TypeReconciliationTriggered }

// ReconciliationStarted says a worker began reconciling a key.
type ReconciliationStarted struct {
	Meta
	Key Key `json:"key"`
	// Attempt counts from 1; it grows while a key keeps failing.
	Attempt int `json:"attempt"`
}

func (ReconciliationStarted) EventType() string  { return TypeReconciliationStarted }
func (e ReconciliationStarted) ResourceKey() Key { return e.Key }

// ResourceSynced says a key's reconcile succeeded: what runs matches what is
// declared.
type ResourceSynced struct {
	Meta
	Key      Key           `json:"key"`
	Attempt  int           `json:"attempt"`
	Duration time.Duration `json:"duration"`
	// Deleted is true when the resource is no longer declared and whatever
	// ran for it is gone.
	Deleted bool `json:"deleted,omitempty"`
	// RequeueAfter is the reconciler's request to look again, if any.
	RequeueAfter time.Duration `json:"requeueAfter,omitempty"`
	// Hash is the content hash of the key's definition in force as the
	// reconcile began (the index entry's), which the reconcile read or a
	// newer one: what this success refers to. Empty if unknown.
	Hash string `json:"hash,omitempty"`
}

func (ResourceSynced) EventType() string  { return TypeResourceSynced }
func (e ResourceSynced) ResourceKey() Key { return e.Key }

// ResourceFailed says a key's reconcile failed.
type ResourceFailed struct {
	Meta
	Key      Key           `json:"key"`
	Error    string        `json:"error"`
	Attempt  int           `json:"attempt"`
	Duration time.Duration `json:"duration"`
	// Permanent is true for an error the reconciler marked as not worth
	// retrying.
	Permanent bool `json:"permanent,omitempty"`
	// NextRetry is when the key is retried; zero when it is not: the error is
	// permanent or the retries are used up, and the key waits for its next
	// change or resync.
	NextRetry time.Time `json:"nextRetry,omitzero"`
}

func (ResourceFailed) EventType() string  { return TypeResourceFailed }
func (e ResourceFailed) ResourceKey() Key { return e.Key }

// WillRetry reports whether a retry is scheduled.
func (e ResourceFailed) WillRetry() bool { return !e.NextRetry.IsZero() }

// Categories of StatusSynced.
const (
	StatusWritten   = "written"
	StatusUnchanged = "unchanged"
	StatusDeleted   = "deleted"
	// StatusSkipped: the writer chose not to write, the status not being
	// this replica's to write (a follower in Kubernetes mode).
	StatusSkipped = "skipped"
)

// StatusSynced says a resource's status reached where users look for it.
type StatusSynced struct {
	Meta
	Key Key `json:"key"`
	// Category is StatusWritten, StatusUnchanged (the write was skipped:
	// nothing changed), StatusDeleted or StatusSkipped (not this replica's
	// to write).
	Category string `json:"category"`
}

func (StatusSynced) EventType() string  { return TypeStatusSynced }
func (e StatusSynced) ResourceKey() Key { return e.Key }

// StatusSyncFailed says a status write failed.
type StatusSyncFailed struct {
	Meta
	Key Key `json:"key"`
	// Category classifies the failure for metrics and logs, such as
	// "conflict_after_retries", "api_server_unreachable" or "other".
	Category string `json:"category"`
	Error    string `json:"error"`
	Attempt  int    `json:"attempt"`
}

func (StatusSyncFailed) EventType() string  { return TypeStatusSyncFailed }
func (e StatusSyncFailed) ResourceKey() Key { return e.Key }

// ServiceStateChanged bridges runtime state to reconciliation: a service
// that musterd runs started, crashed or failed a health check.
type ServiceStateChanged struct {
	Meta
	Key           Key    `json:"key"`
	State         string `json:"state"`
	PreviousState string `json:"previousState,omitempty"`
	Error         string `json:"error,omitempty"`
}

func (ServiceStateChanged) EventType() string  { return TypeServiceStateChanged }
func (e ServiceStateChanged) ResourceKey() Key { return e.Key }

// BecameLeader says this replica acquired leadership.
type BecameLeader struct {
	Meta
	Identity string `json:"identity"`
}

func (BecameLeader) EventType() string { return TypeBecameLeader }

// LostLeadership says this replica lost leadership.
type LostLeadership struct {
	Meta
	Identity string `json:"identity"`
}

func (LostLeadership) EventType() string { return TypeLostLeadership }
