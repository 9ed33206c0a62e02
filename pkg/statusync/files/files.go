package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// APIVersion is written into every status file.
const APIVersion = "muster.giantswarm.io/v1alpha1"

// Options configures a Writer.
type Options struct {
	// StateDir holds the status/ tree. Required.
	StateDir string
	// ResourceStatus returns a resource's own status in the v1alpha1
	// schema (an MCPServer's state and tools, a Workflow's validity), as
	// its reconciler last observed it. Optional: without it, files carry
	// only the reconcile state.
	ResourceStatus func(key events.Key) (status any, ok bool)
}

// Writer writes status files. It implements statusync.StatusWriter.
type Writer struct {
	opts Options

	// strays guards the removal of temporary files a crash left: a
	// replace holds it shared while its own temporary file exists, the
	// removal exclusively, so it never takes an in-flight file for a stray.
	strays sync.RWMutex
	// cleaned holds the directories already rid of strays. Strays come
	// from an earlier process, so once per directory is enough; listing the
	// directory on every write would cost O(files) per write, O(files²)
	// over a cold start.
	cleaned map[string]bool
}

var _ statusync.StatusWriter = (*Writer)(nil)

// New returns a Writer for opts.
func New(opts Options) (*Writer, error) {
	if opts.StateDir == "" {
		return nil, errors.New("status files: a state dir is required")
	}
	return &Writer{opts: opts, cleaned: map[string]bool{}}, nil
}

// Document is the content of a status file.
type Document struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   Metadata  `json:"metadata"`
	Status     any       `json:"status,omitempty"`
	Reconcile  Reconcile `json:"reconcile"`
}

// Metadata names the resource.
type Metadata struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// Reconcile is musterd's reconcile state of the resource.
type Reconcile struct {
	State             string     `json:"state"`
	LastReconcileTime *time.Time `json:"lastReconcileTime,omitempty"`
	LastError         string     `json:"lastError,omitempty"`
	RetryCount        int        `json:"retryCount"`
	NextRetry         *time.Time `json:"nextRetry,omitempty"`
	CorrelationID     string     `json:"correlationID,omitempty"`
	// ReconciliationDisabled: an operator disabled the reconciliation of
	// this kind; changes to the definition wait until it is enabled.
	ReconciliationDisabled bool `json:"reconciliationDisabled,omitempty"`
}

// Path returns the status file of key, relative to the state dir.
func Path(key events.Key) string {
	key = key.Canonical()
	return filepath.Join("status", Plural(key.Kind), key.Namespace, key.Name+".yaml")
}

// Plural is the lower-case plural of a kind: MCPServer → mcpservers.
func Plural(kind string) string {
	return strings.ToLower(kind) + "s"
}

// WriteStatus replaces the status file of st.Key.
func (w *Writer) WriteStatus(ctx context.Context, st statusync.Status) error {
	doc := Document{
		APIVersion: APIVersion,
		Kind:       st.Key.Kind,
		Metadata:   Metadata{Name: st.Key.Name, Namespace: st.Key.Canonical().Namespace},
		Reconcile: Reconcile{
			State: string(st.State), LastError: st.LastError, RetryCount: st.RetryCount, CorrelationID: st.CorrelationID,
			LastReconcileTime: timeOrNil(st.LastReconcileTime), NextRetry: timeOrNil(st.NextRetry),
			ReconciliationDisabled: st.ReconcileDisabled,
		},
	}
	if w.opts.ResourceStatus != nil {
		if status, ok := w.opts.ResourceStatus(st.Key); ok {
			doc.Status = status
		}
	}
	data, err := encode(doc)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", Path(st.Key), err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return w.replace(Path(st.Key), data)
}

// DeleteStatus removes the status file of key, if there is one.
func (w *Writer) DeleteStatus(_ context.Context, key events.Key) error {
	rel := Path(key)
	err := os.Remove(filepath.Join(w.opts.StateDir, rel))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return categorize(rel, "remove", err)
}

// encode writes doc as YAML through its JSON form, so that the field names
// are the JSON tags of the v1alpha1 types.
func encode(doc Document) ([]byte, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	if out, ok := blockYAML(raw); ok { // emit.go: the common case, quickly
		return out, nil
	}
	var tree yaml.Node
	if err := yaml.Unmarshal(raw, &tree); err != nil {
		return nil, err
	}
	// JSON is YAML; re-encoding the node tree in the default style gives
	// block YAML, quoting only where a plain scalar would read back
	// differently, and keeps the field order of the Go types.
	plainStyle(&tree)
	return yaml.Marshal(&tree)
}

func plainStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		plainStyle(c)
	}
}

// replace writes data to rel atomically.
func (w *Writer) replace(rel string, data []byte) error {
	path := filepath.Join(w.opts.StateDir, rel)
	dir := filepath.Dir(path)
	// Owner only: a status names commands, URLs and errors of servers.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return categorize(rel, "create directory", err)
	}
	if err := w.firstWriteInto(dir); err != nil {
		return categorize(rel, "restrict directory", err)
	}
	w.strays.RLock()
	defer w.strays.RUnlock()
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return categorize(rel, "create", err)
	}
	committed := false
	defer func() {
		if !committed {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return categorize(rel, "write", err)
	}
	if err := tmp.Sync(); err != nil {
		return categorize(rel, "sync", err)
	}
	if err := tmp.Close(); err != nil {
		return categorize(rel, "close", err)
	}
	if err := os.Chmod(tmp.Name(), 0o600); err != nil {
		return categorize(rel, "chmod", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return categorize(rel, "rename", err)
	}
	// The directory is not synced: that would make the rename itself
	// durable, and it was half of a status write's cost (two fsyncs a
	// file; a cold start with 10,000 resources spent 50 s writing). A
	// crash before the directory reaches the disk leaves the previous
	// complete file, or none: never a torn one, since the data was synced
	// before the rename. That previous status is stale only until the next
	// start, which reconciles every resource and writes its status again.
	committed = true
	return nil
}

// removeStrays removes the temporary files a crash may have left in dir,
// the first time this Writer writes there.
// firstWriteInto readies dir, once per process: it restricts the
// directories musterd owns on the way there and removes the strays of an
// earlier process.
func (w *Writer) firstWriteInto(dir string) error {
	w.strays.Lock()
	defer w.strays.Unlock()
	if w.cleaned[dir] {
		return nil
	}
	if err := w.restrict(dir); err != nil {
		return err
	}
	strays, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	for _, s := range strays {
		os.Remove(s)
	}
	w.cleaned[dir] = true
	return nil
}

// restrict takes the group's and others' permissions off dir and its
// parents up to, not including, the state dir (status/, status/<kinds>/,
// status/<kinds>/<namespace>/): MkdirAll leaves an existing directory's
// mode alone, and earlier versions of musterd created them 0755. It only
// takes permissions away; an owner's own restriction (0500) stays.
func (w *Writer) restrict(dir string) error {
	stateDir := filepath.Clean(w.opts.StateDir)
	for d := dir; d != stateDir && d != filepath.Dir(d); d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return err
		}
		if perm := info.Mode().Perm(); perm&0o077 != 0 {
			if err := os.Chmod(d, perm&^0o077); err != nil {
				return err
			}
		}
	}
	return nil
}

// categorize names the file and classifies err for the status-sync
// metrics.
func categorize(rel, op string, err error) error {
	category := "other"
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		category = "permission_denied"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		category = "no_space"
	}
	// The underlying error names the absolute path; the message names the
	// file relative to the state dir instead.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return statusync.WithCategory(category, fmt.Errorf("status file %s: %s: %w", rel, op, err))
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
