package apitest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
)

// Fixture is the API served over a real index and a real status store on
// a real bus. Use it inside a synctest bubble only.
type Fixture struct {
	Bus     *bus.Bus
	Index   *resources.Index
	Store   *statusync.Store
	History *statusync.History
	Metrics *prometheus.Registry
	// URL and HTTP reach the API.
	URL  string
	HTTP *http.Client

	ready     atomic.Bool
	changes   atomic.Int64 // numbers the correlation IDs of Declare and Remove
	mu        sync.Mutex
	triggered []events.Key
	statuses  map[events.Key]any
	health    []lifecycle.ComponentHealth
}

// New starts a fixture. configure, if not nil, may change the API's
// options (such as Token) before the handler is made.
func New(t *testing.T, configure func(*api.Options)) *Fixture {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &Fixture{
		Bus:      bus.New(bus.Options{Logger: quiet}),
		Index:    resources.New(),
		Metrics:  prometheus.NewRegistry(),
		statuses: map[events.Key]any{},
	}
	f.Store = statusync.NewStore(f.Bus, statusync.StoreOptions{Logger: quiet})
	f.History = statusync.NewHistory(f.Bus, statusync.HistoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 2)
	go func() { stopped <- f.Store.Start(ctx) }()
	go func() { stopped <- f.History.Start(ctx) }()
	<-f.Store.SubscriptionReady()
	<-f.History.SubscriptionReady()
	f.Bus.Start()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-stopped; err != nil {
				t.Errorf("status store or history: %v", err)
			}
		}
		f.Bus.Close()
	})

	opts := api.Options{
		Index:    f.Index,
		Statuses: f.Store,
		ResourceStatus: func(k events.Key) (any, bool) {
			f.mu.Lock()
			defer f.mu.Unlock()
			st, ok := f.statuses[k]
			return st, ok
		},
		Trigger: func(k events.Key) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.triggered = append(f.triggered, k)
		},
		Bus:     f.Bus,
		History: f.History,
		Metrics: f.Metrics,
		Health: func() []lifecycle.ComponentHealth {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.health
		},
		Ready:  f.ready.Load,
		Logger: quiet,
	}
	if configure != nil {
		configure(&opts)
	}
	h, err := api.NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.URL, f.HTTP = Serve(t, h)
	return f
}

// Declare records path's content in the index as the filesystem watcher
// would, publishes a ResourceChanged per changed resource, and waits until
// the bubble is idle. The n'th change of a fixture has correlation ID
// "change-n", so that tests can expect it. A file that does not decode is recorded with its
// error under the key its directory and name imply.
func (f *Fixture) Declare(path, content string) {
	docs, err := v1alpha1.DecodeFile(path, []byte(content))
	idx := make([]resources.Doc, len(docs))
	for i, d := range docs {
		idx[i] = resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err, Warnings: d.Warnings.Strings()}
	}
	kind, _ := types.ResolveKind(filepath.Base(filepath.Dir(path)))
	fallback := events.NewKey(kind.Name, "", strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)))
	f.publishChanges(f.Index.SetFile(path, idx, err, fallback))
}

// Remove forgets path as the watcher would on its deletion.
func (f *Fixture) Remove(path string) {
	f.publishChanges(f.Index.RemoveFile(path))
}

func (f *Fixture) publishChanges(changes []resources.Change) {
	for _, c := range changes {
		f.Bus.Publish(events.ResourceChanged{
			Meta: events.NewMeta(fmt.Sprintf("change-%d", f.changes.Add(1))), Key: c.Key, Operation: c.Op, Source: events.SourceFilesystem,
			FilePath: c.File, ContentHash: c.Hash,
		})
	}
	synctest.Wait()
}

// Publish publishes e and waits until the bubble is idle.
func (f *Fixture) Publish(e ...events.Event) {
	for _, e := range e {
		f.Bus.Publish(e)
	}
	synctest.Wait()
}

// SetResourceStatus sets what ResourceStatus returns for key.
func (f *Fixture) SetResourceStatus(key events.Key, status any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[key] = status
}

// SetHealth sets what Health returns.
func (f *Fixture) SetHealth(h ...lifecycle.ComponentHealth) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health = h
}

// SetReady sets what Ready returns.
func (f *Fixture) SetReady(ready bool) { f.ready.Store(ready) }

// Triggered returns the keys Trigger received, in order.
func (f *Fixture) Triggered() []events.Key {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]events.Key(nil), f.triggered...)
}
