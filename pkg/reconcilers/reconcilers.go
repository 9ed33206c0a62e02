package reconcilers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/musterd/musterd/pkg/events"
)

// Reconciler makes what runs for one kind of resource match its definition.
type Reconciler interface {
	// Kind is the resource kind handled, such as "MCPServer".
	Kind() string
	// Reconcile brings one resource to its desired state.
	Reconcile(ctx context.Context, req Request) Result
	// List returns the keys of every resource of this kind that is declared
	// or actually running.
	List(ctx context.Context) ([]events.Key, error)
}

// Request names the resource to reconcile.
type Request struct {
	// Key is canonical: its namespace is never empty.
	Key events.Key
	// Attempt counts from 1 and grows while the key keeps failing.
	Attempt int
	// CorrelationID is that of the change that led here, for logs.
	CorrelationID string
}

// Result is the outcome of one Reconcile.
type Result struct {
	// Err is nil on success. Wrap it with Permanent to stop retries, or with
	// RetryAt to say when to retry.
	Err error
	// RequeueAfter, when positive and Err is nil, asks for another reconcile
	// of the key after this long.
	RequeueAfter time.Duration
	// Deleted reports that the resource is not declared and nothing runs
	// for it any more, so its status can be forgotten.
	Deleted bool
}

// PermanentError marks an error that retrying cannot fix, such as an
// invalid definition: the key waits for its next change or resync.
type PermanentError struct {
	Err error
}

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err as a PermanentError. It returns nil for nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err is, or wraps, a PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// RetryAtError marks an error whose retry must come at a known time, such
// as that of a dependency whose own backoff says when it may be tried
// again: the coordinator retries it at At instead of after its own backoff
// delay, for as long as the error says so. The dependency owns the schedule
// and must bound it, as the supervisor's restart backoff does.
type RetryAtError struct {
	Err error
	At  time.Time
}

func (e *RetryAtError) Error() string { return e.Err.Error() }
func (e *RetryAtError) Unwrap() error { return e.Err }

// RetryAt wraps err as a RetryAtError: retry it at at. It returns nil for
// nil. A Permanent error stays permanent.
func RetryAt(err error, at time.Time) error {
	if err == nil {
		return nil
	}
	return &RetryAtError{Err: err, At: at}
}

// RetryTime returns the time err asks to be retried at, if it is or wraps
// a RetryAtError.
func RetryTime(err error) (time.Time, bool) {
	var r *RetryAtError
	if !errors.As(err, &r) {
		return time.Time{}, false
	}
	return r.At, true
}

// Registry holds one reconciler per kind. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]Reconciler
}

// NewRegistry returns a registry holding rs, or an error if two share a kind.
func NewRegistry(rs ...Reconciler) (*Registry, error) {
	reg := &Registry{kinds: map[string]Reconciler{}}
	for _, r := range rs {
		if err := reg.Register(r); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Register adds r. A kind may be registered once.
func (reg *Registry) Register(r Reconciler) error {
	if r == nil || r.Kind() == "" {
		return errors.New("reconcilers: a reconciler needs a kind")
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.kinds == nil {
		reg.kinds = map[string]Reconciler{}
	}
	if _, taken := reg.kinds[r.Kind()]; taken {
		return fmt.Errorf("reconcilers: kind %q registered twice", r.Kind())
	}
	reg.kinds[r.Kind()] = r
	return nil
}

// Get returns the reconciler of kind.
func (reg *Registry) Get(kind string) (Reconciler, bool) {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	r, ok := reg.kinds[kind]
	return r, ok
}

// Kinds returns the registered kinds, sorted.
func (reg *Registry) Kinds() []string {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	kinds := make([]string, 0, len(reg.kinds))
	for k := range reg.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	return kinds
}

// StatusReporter is implemented by reconcilers that know a resource's own
// status (an MCPServer's state, a Workflow's validity) in the v1alpha1
// schema, as they last observed it. Status files, CRD status and the API
// show it.
type StatusReporter interface {
	Status(key events.Key) (status any, ok bool)
}

// Status returns the status the reconciler of key's kind last observed,
// if it reports one.
func (reg *Registry) Status(key events.Key) (any, bool) {
	r, ok := reg.Get(key.Kind)
	if !ok {
		return nil, false
	}
	sr, ok := r.(StatusReporter)
	if !ok {
		return nil, false
	}
	return sr.Status(key.Canonical())
}

// Observed is a concurrency-safe record of what a reconciler observed per
// key: the actual state it compares the desired state with. The zero value
// is ready to use.
type Observed[S any] struct {
	mu sync.RWMutex
	// kind is the kind of the first key recorded. A reconciler's keys are
	// all of its kind, so m holds them by namespace and name alone: a
	// 32-byte key in each of the map's slots, not 48, in a map with a slot
	// per resource of the kind. A key of
	// another kind, which a reconciler does not record, is kept in others.
	kind   string
	m      map[namedKey]S
	others map[events.Key]S
}

// namedKey is a key of Observed's kind without it.
type namedKey struct{ namespace, name string }

// Set records s for key.
func (o *Observed[S]) Set(key events.Key, s S) {
	key = key.Canonical()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.kind, o.m = key.Kind, map[namedKey]S{}
	}
	if key.Kind == o.kind {
		o.m[namedKey{key.Namespace, key.Name}] = s
		return
	}
	if o.others == nil {
		o.others = map[events.Key]S{}
	}
	o.others[key] = s
}

// Delete forgets key.
func (o *Observed[S]) Delete(key events.Key) {
	key = key.Canonical()
	o.mu.Lock()
	defer o.mu.Unlock()
	if key.Kind == o.kind {
		delete(o.m, namedKey{key.Namespace, key.Name})
	} else {
		delete(o.others, key)
	}
}

// Get returns what was recorded for key.
func (o *Observed[S]) Get(key events.Key) (S, bool) {
	key = key.Canonical()
	o.mu.RLock()
	defer o.mu.RUnlock()
	var s S
	var ok bool
	if key.Kind == o.kind {
		s, ok = o.m[namedKey{key.Namespace, key.Name}]
	} else {
		s, ok = o.others[key]
	}
	return s, ok
}

// Keys returns the recorded keys, in no particular order.
func (o *Observed[S]) Keys() []events.Key {
	o.mu.RLock()
	defer o.mu.RUnlock()
	keys := make([]events.Key, 0, len(o.m)+len(o.others))
	for k := range o.m {
		keys = append(keys, events.Key{Kind: o.kind, Namespace: k.namespace, Name: k.name})
	}
	for k := range o.others {
		keys = append(keys, k)
	}
	return keys
}

// Union returns the recorded keys together with keys, sorted and without
// repeats: what a List reports, the declared and the actually running.
func (o *Observed[S]) Union(keys []events.Key) []events.Key {
	all := append(o.Keys(), keys...)
	for i := range all {
		all[i] = all[i].Canonical()
	}
	slices.SortFunc(all, events.CompareKeys)
	return slices.Compact(all)
}
