package kube

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/redact"
	"github.com/musterd/musterd/pkg/resources"
)

// DefaultSyncTimeout is how long Start waits for the informers' initial
// listing when Options.SyncTimeout is zero.
const DefaultSyncTimeout = 30 * time.Second

// Name is the component's name.
const Name = "kube-watcher"

// Options configures a Watcher.
type Options struct {
	// Config reaches the API server. Required.
	Config *rest.Config
	// Index receives the resources' definitions. Required.
	Index *resources.Index
	// Namespace limits the watch to one namespace. Empty: all namespaces.
	Namespace string
	// SyncTimeout bounds the wait for the initial listing. Default
	// DefaultSyncTimeout.
	SyncTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Watcher feeds a resources.Index from MCPServer and Workflow informers.
// Make one with New; it is a lifecycle component.
type Watcher struct {
	bus     *bus.Bus
	opts    Options
	log     *slog.Logger
	started atomic.Bool
	synced  chan struct{}

	// mu serialises the informers' handlers, so that index changes are
	// published in the order they are made.
	mu     sync.Mutex
	handed map[events.Key]version // the version last handed to the index
}

// version identifies what a resource's spec is: a generation of one
// object. A resource deleted and created again under its name is another
// object (another UID) whose generation starts at 1 again; a relist after
// a watch gap that missed both delivers it as an update with an equal
// generation.
type version struct {
	uid types.UID
	gen int64
	// musterd is musterd's own annotations (musterdAnnotations): the
	// one metadata change that counts, as they say how a server is
	// exposed and served, beside its spec.
	musterd string
}

// musterdAnnotationPrefix begins the annotations musterd reads
// (musterd.io/exposure, musterd.io/client-sessions).
const musterdAnnotationPrefix = "musterd.io/"

// musterdAnnotations spells obj's musterd.io/ annotations, sorted, as one
// string; "" if it has none.
func musterdAnnotations(obj v1alpha1.Object) string {
	var keys []string
	for k := range obj.GetAnnotations() {
		if strings.HasPrefix(k, musterdAnnotationPrefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(obj.GetAnnotations()[k])
		b.WriteByte(0)
	}
	return b.String()
}

// New returns a watcher publishing on b. It contacts the API server only
// in Start.
func New(b *bus.Bus, opts Options) (*Watcher, error) {
	switch {
	case b == nil:
		return nil, errors.New("kube-watcher: nil bus")
	case opts.Config == nil:
		return nil, errors.New("kube-watcher: Options.Config is required")
	case opts.Index == nil:
		return nil, errors.New("kube-watcher: Options.Index is required")
	}
	if opts.SyncTimeout <= 0 {
		opts.SyncTimeout = DefaultSyncTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Watcher{
		bus:    b,
		opts:   opts,
		log:    opts.Logger.With("component", Name, "namespace", opts.Namespace),
		synced: make(chan struct{}),
		handed: map[events.Key]version{},
	}, nil
}

// Name identifies the component.
func (w *Watcher) Name() string { return Name }

// Synced is closed once the initial listing is in the index and
// IndexSynchronized is published.
func (w *Watcher) Synced() <-chan struct{} { return w.synced }

// Path is the index path declaring the resource key: kube/<ns>/<kind>/<name>.
func Path(key events.Key) string {
	key = key.Canonical()
	return "kube/" + key.Namespace + "/" + key.Kind + "/" + key.Name
}

// Scheme returns a scheme holding the v1alpha1 types.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// Start runs the informers, publishes IndexSynchronized once they have
// synced, and follows changes until ctx is done. It fails when the
// informers cannot be set up or do not sync within Options.SyncTimeout.
func (w *Watcher) Start(ctx context.Context) error {
	if !w.started.CompareAndSwap(false, true) {
		return errors.New("kube-watcher: already started")
	}
	scheme, err := Scheme()
	if err != nil {
		return fmt.Errorf("kube-watcher: %w", err)
	}
	copts := cache.Options{Scheme: scheme}
	if w.opts.Namespace != "" {
		copts.DefaultNamespaces = map[string]cache.Config{w.opts.Namespace: {}}
	}
	c, err := cache.New(w.opts.Config, copts)
	if err != nil {
		return fmt.Errorf("kube-watcher: create cache: %w", err)
	}
	var checks []toolscache.InformerSynced
	for _, obj := range []client.Object{&v1alpha1.MCPServer{}, &v1alpha1.Workflow{}} {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("kube-watcher: informer for %T (are the muster.giantswarm.io CRDs installed?): %w", obj, err)
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.upsert(o) },
			UpdateFunc: func(_, o any) { w.upsert(o) },
			DeleteFunc: w.remove,
		})
		if err != nil {
			return fmt.Errorf("kube-watcher: add handler for %T: %w", obj, err)
		}
		checks = append(checks, reg.HasSynced)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cacheDone := make(chan error, 1)
	go func() { cacheDone <- c.Start(ctx) }()

	syncCtx, syncCancel := context.WithTimeout(ctx, w.opts.SyncTimeout)
	defer syncCancel()
	// The registrations' HasSynced, not the informers': they report that
	// the handlers, and so the index, have seen the initial listing.
	if !toolscache.WaitForCacheSync(syncCtx.Done(), checks...) {
		if ctx.Err() != nil {
			return nil // stopping
		}
		cancel()
		<-cacheDone
		return fmt.Errorf("kube-watcher: the informers did not sync within %s: the API server is unreachable, refuses the watch, or the CRDs are missing", w.opts.SyncTimeout)
	}
	bus.Publish(w.bus, events.IndexSynchronized{Meta: events.NewMeta(""), Source: events.SourceKubernetes})
	close(w.synced)
	w.log.Info("informers synced", "resources", len(w.opts.Index.List("")))

	select {
	case err := <-cacheDone:
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("kube-watcher: cache stopped: %w", err)
	case <-ctx.Done():
		<-cacheDone
		return nil
	}
}

// upsert hands an added or updated resource to the index, unless only its
// status or metadata changed: same object (UID), same generation.
func (w *Watcher) upsert(o any) {
	obj, ok := o.(v1alpha1.Object)
	if !ok {
		w.log.Error("informer delivered an unexpected type", "type", fmt.Sprintf("%T", o))
		return
	}
	key := keyOf(obj)
	gen := obj.GetGeneration()
	v := version{uid: obj.GetUID(), gen: gen, musterd: musterdAnnotations(obj)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, seen := w.handed[key]; seen && last == v {
		return // a status-only (or metadata-only) update, or a resync
	}
	w.handed[key] = v
	doc := decode(key, obj)
	changes := w.opts.Index.SetFile(Path(key), []resources.Doc{doc}, nil, key)
	if doc.Err != nil && len(changes) > 0 {
		w.log.Warn("resource unusable; its last good definition stays in force", "key", key.String(), "generation", gen, "error", redact.String(doc.Err.Error()))
	}
	w.publish(changes, gen)
}

// remove drops a deleted resource from the index.
func (w *Watcher) remove(o any) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	obj, ok := o.(v1alpha1.Object)
	if !ok {
		w.log.Error("informer delivered an unexpected type", "type", fmt.Sprintf("%T", o))
		return
	}
	key := keyOf(obj)
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.handed, key)
	w.publish(w.opts.Index.RemoveFile(Path(key)), obj.GetGeneration())
}

func (w *Watcher) publish(changes []resources.Change, gen int64) {
	for _, c := range changes {
		w.log.Debug("resource changed", "key", c.Key.String(), "op", string(c.Op), "generation", gen)
		bus.Publish(w.bus, events.ResourceChanged{
			Meta:       events.NewMeta(""),
			Key:        c.Key,
			Operation:  c.Op,
			Source:     events.SourceKubernetes,
			Generation: gen,
		})
	}
}

// keyOf names obj by its Go type: objects from typed informers carry no
// TypeMeta.
func keyOf(obj v1alpha1.Object) events.Key {
	return events.NewKey(kindOf(obj), obj.GetNamespace(), obj.GetName())
}

func kindOf(obj v1alpha1.Object) string {
	switch obj.(type) {
	case *v1alpha1.MCPServer:
		return v1alpha1.KindMCPServer
	case *v1alpha1.Workflow:
		return v1alpha1.KindWorkflow
	}
	return ""
}

// decode turns a resource into the index's document: a defaulted copy,
// validated, hashed with its UID and generation so that every generation,
// and a recreated object, counts as a change.
func decode(key events.Key, obj v1alpha1.Object) resources.Doc {
	obj = obj.DeepCopyObject().(v1alpha1.Object)
	obj.GetObjectKind().SetGroupVersionKind(v1alpha1.GroupVersion.WithKind(key.Kind))
	obj.Default()
	if err := obj.Validate().Err(); err != nil {
		return resources.Doc{Key: key, Err: fmt.Errorf("%s (generation %d): %w", key, obj.GetGeneration(), err)}
	}
	return resources.Doc{Key: key, Object: obj, Hash: hash(obj)}
}

// hash identifies a resource's object, generation and spec.
func hash(obj v1alpha1.Object) string {
	var spec any
	switch o := obj.(type) {
	case *v1alpha1.MCPServer:
		spec = o.Spec
	case *v1alpha1.Workflow:
		spec = o.Spec
	}
	data, err := json.Marshal(struct {
		UID        types.UID `json:"uid"`
		Generation int64     `json:"generation"`
		Spec       any       `json:"spec"`
		Musterd    string    `json:"musterd,omitempty"`
	}{obj.GetUID(), obj.GetGeneration(), spec, musterdAnnotations(obj)})
	if err != nil {
		// The types marshal; this would be a programming error.
		panic(fmt.Sprintf("kube-watcher: marshal %T: %v", obj, err))
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
