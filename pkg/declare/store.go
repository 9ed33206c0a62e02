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
	Create(ctx context.Context, key events.Key, spec map[string]any) (Definition, error)
	// Update sets the spec fields in patch (each replacing the field
	// whole) on key's definition. version, when not empty, is the version
	// the caller read: the update fails with a ConflictError unless it is
	// still the stored one. Without it, the version the update itself
	// reads is the one it must find when it writes.
	Update(ctx context.Context, key events.Key, patch map[string]any, version string) (Definition, error)
	// Delete removes key's definition, under the same rule for version.
	Delete(ctx context.Context, key events.Key, version string) error
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
