package services

import (
	"fmt"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
)

// States of an Override.
const (
	StateStopped = "stopped"
	StateStarted = "started"
)

// Record is one persisted override.
type Record struct {
	Key events.Key `json:"key"`
	// State is StateStopped or StateStarted.
	State string `json:"state"`
	// Reason is the operator's reason, shown in status.
	Reason string `json:"reason,omitempty"`
	// Hash is the definition's content hash when the override was made: a
	// different one ends it.
	Hash string `json:"hash"`
	// Since is when it was made.
	Since time.Time `json:"since"`
	// CorrelationID is the request's.
	CorrelationID string `json:"correlationId,omitempty"`
}

// status is r as status.override shows it.
func (r Record) status() *v1alpha1.MCPServerOverride {
	return &v1alpha1.MCPServerOverride{State: r.State, Reason: r.Reason, Hash: r.Hash, Since: metav1.NewTime(r.Since), CorrelationID: r.CorrelationID}
}

// RecordOf is the record status.override holds for key; false if none.
func RecordOf(key events.Key, o *v1alpha1.MCPServerOverride) (Record, bool) {
	if o == nil || (o.State != StateStopped && o.State != StateStarted) {
		return Record{}, false
	}
	return Record{Key: key.Canonical(), State: o.State, Reason: o.Reason, Hash: o.Hash, Since: o.Since.UTC(), CorrelationID: o.CorrelationID}, true
}

// Persister keeps the records across musterd's restarts.
type Persister interface {
	Load() ([]Record, error)
	// Save replaces what is kept with records.
	Save(records []Record) error
}

// Overrides holds the records and pending restarts. It is safe for
// concurrent use. It implements mcpserver.Overrides.
type Overrides struct {
	persist Persister

	mu       sync.Mutex
	records  map[events.Key]Record
	restarts map[events.Key]string // key → pending restart request's ID
	// saveErr is the last failure to persist a drop, reported with the
	// next request.
	saveErr error
}

var _ mcpserver.Overrides = (*Overrides)(nil)

// New loads the records p keeps; p may be nil, for overrides kept in
// memory only.
func New(p Persister) (*Overrides, error) {
	o := &Overrides{persist: p, records: map[events.Key]Record{}, restarts: map[events.Key]string{}}
	if p == nil {
		return o, nil
	}
	records, err := p.Load()
	if err != nil {
		return nil, fmt.Errorf("services: load overrides: %w", err)
	}
	for _, r := range records {
		r.Key = r.Key.Canonical()
		o.records[r.Key] = r
	}
	return o, nil
}

// Set records r, replacing key's, and persists it before it returns. On a
// failure to persist nothing changes.
func (o *Overrides) Set(r Record) error {
	r.Key = r.Key.Canonical()
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, had := o.records[r.Key]
	o.records[r.Key] = r
	if err := o.saveLocked(); err != nil {
		if had {
			o.records[r.Key] = prev
		} else {
			delete(o.records, r.Key)
		}
		return err
	}
	return nil
}

// Clear drops key's record, persisting the drop. Clearing nothing is no
// error.
func (o *Overrides) Clear(key events.Key) error {
	key = key.Canonical()
	o.mu.Lock()
	defer o.mu.Unlock()
	prev, had := o.records[key]
	if !had {
		return nil
	}
	delete(o.records, key)
	if err := o.saveLocked(); err != nil {
		o.records[key] = prev
		return err
	}
	return nil
}

// Restart asks for a fresh start of key, once; id names the request.
func (o *Overrides) Restart(key events.Key, id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.restarts[key.Canonical()] = id
}

// Get returns key's record, if any.
func (o *Overrides) Get(key events.Key) (Record, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.records[key.Canonical()]
	return r, ok
}

// List returns every record, sorted by key.
func (o *Overrides) List() []Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]Record, 0, len(o.records))
	for _, r := range o.records {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Record) int { return events.CompareKeys(a.Key, b.Key) })
	return out
}

// Override is the reconciler's question: what holds for key's definition
// of hash. A record of another hash is dropped.
func (o *Overrides) Override(key events.Key, hash string) mcpserver.Override {
	key = key.Canonical()
	o.mu.Lock()
	defer o.mu.Unlock()
	var ov mcpserver.Override
	if r, ok := o.records[key]; ok {
		if r.Hash != hash || hash == "" {
			delete(o.records, key)
			// A failure is kept for the next request to report; the drop
			// holds in memory, and a restart of musterd drops it again.
			o.saveErr = o.saveLocked()
		} else {
			ov.Stop, ov.Start, ov.Reason = r.State == StateStopped, r.State == StateStarted, r.Reason
			ov.Status = r.status()
		}
	}
	if hash == "" {
		delete(o.restarts, key)
	} else if !ov.Stop {
		ov.Restart = o.restarts[key]
	}
	return ov
}

// Restarted marks the restart request id done.
func (o *Overrides) Restarted(key events.Key, id string) {
	key = key.Canonical()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.restarts[key] == id {
		delete(o.restarts, key)
	}
}

func (o *Overrides) saveLocked() error {
	if o.persist == nil {
		return nil
	}
	records := make([]Record, 0, len(o.records))
	for _, r := range o.records {
		records = append(records, r)
	}
	slices.SortFunc(records, func(a, b Record) int { return events.CompareKeys(a.Key, b.Key) })
	if err := o.persist.Save(records); err != nil {
		return fmt.Errorf("services: persist overrides: %w", err)
	}
	return nil
}
