package reconcilers

import (
	"context"
	"errors"
	"fmt"
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
	// Err is nil on success. Wrap it with Permanent to stop retries.
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
