package declare

import (
	"context"
	"maps"

	"github.com/musterd/musterd/pkg/events"
)

// Modes of a Store.
const (
	ModeFilesystem = "filesystem"
	ModeKubernetes = "kubernetes"
)

// Store reads and changes declared definitions. Files and Kube are the
// two.
type Store interface {
	// Mode is ModeFilesystem or ModeKubernetes.
	Mode() string
	// Get reads key's definition, or fails with a NotFoundError.
	Get(ctx context.Context, key events.Key) (Definition, error)
	// Create declares key with spec; an ExistsError if key is declared.
	// meta, at most one, is the new definition's metadata beside its name.
	Create(ctx context.Context, key events.Key, spec map[string]any, meta ...Meta) (Definition, error)
	// Update sets the spec fields in patch (each replacing the field
	// whole) on key's definition. version, when not empty, is the version
	// the caller read: the update fails with a ConflictError unless it is
	// still the stored one. Without it, the version the update itself
	// reads is the one it must find when it writes.
	Update(ctx context.Context, key events.Key, patch map[string]any, version string) (Definition, error)
	// Delete removes key's definition, under the same rule for version.
	Delete(ctx context.Context, key events.Key, version string) error
}

// Meta is what a definition's metadata holds beside its name and
// namespace.
type Meta struct {
	// Annotations are metadata.annotations. Default: none.
	Annotations map[string]string
}

// metaExtra is meta as the rest of a document beside spec (Validate's
// extra); nil for none.
func metaExtra(meta []Meta) map[string]any {
	var annotations map[string]any
	for _, m := range meta {
		for k, v := range m.Annotations {
			if annotations == nil {
				annotations = map[string]any{}
			}
			annotations[k] = v
		}
	}
	if annotations == nil {
		return nil
	}
	return map[string]any{"metadata": map[string]any{"annotations": annotations}}
}

// merge returns spec with patch's fields set, each replacing the field.
func merge(spec, patch map[string]any) map[string]any {
	out := maps.Clone(spec)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, patch)
	return out
}
