package coretools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/musterd/musterd/pkg/declare"
	"github.com/musterd/musterd/pkg/events"
)

// DefaultStoreTimeout bounds each call of the Store when
// Options.StoreTimeout is zero.
const DefaultStoreTimeout = 30 * time.Second

// boundedStore bounds every call of its Store by timeout. An MCP call's
// context has no deadline, and a Kubernetes store waits on an API server
// that may never answer (the client's rest config has no timeout, and
// must not: the informers' watches share it); a file store's write to a
// hung disk is no better.
type boundedStore struct {
	declare.Store
	timeout time.Duration
}

// errStoreTimeout is the cause of a store call that ran out of time.
var errStoreTimeout = errors.New("store call timed out")

func (s boundedStore) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, s.timeout, errStoreTimeout)
}

// explain names the store, the operation, the key and the timeout when
// the call failed for want of time.
func (s boundedStore) explain(ctx context.Context, op string, key events.Key, err error) error {
	if err != nil && errors.Is(context.Cause(ctx), errStoreTimeout) {
		return fmt.Errorf("%s %s: the %s store did not answer within %s", op, key, s.Mode(), s.timeout)
	}
	return err
}

func (s boundedStore) Get(ctx context.Context, key events.Key) (declare.Definition, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	def, err := s.Store.Get(ctx, key)
	return def, s.explain(ctx, "get", key, err)
}

func (s boundedStore) Create(ctx context.Context, key events.Key, spec map[string]any, meta ...declare.Meta) (declare.Definition, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	def, err := s.Store.Create(ctx, key, spec, meta...)
	return def, s.explain(ctx, "create", key, err)
}

func (s boundedStore) Update(ctx context.Context, key events.Key, patch map[string]any, version string) (declare.Definition, error) {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	def, err := s.Store.Update(ctx, key, patch, version)
	return def, s.explain(ctx, "update", key, err)
}

func (s boundedStore) Delete(ctx context.Context, key events.Key, version string) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	return s.explain(ctx, "delete", key, s.Store.Delete(ctx, key, version))
}
