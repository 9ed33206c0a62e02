package workflow

import "github.com/musterd/musterd/pkg/events"

// SpellOutVerdicts makes r record every verdict spelled out, the form a
// compact one is held to.
func SpellOutVerdicts(r *Reconciler) { r.spellOut = true }

// IsCompact reports whether r's verdict of key is compact.
func IsCompact(r *Reconciler, key events.Key) bool {
	v, _ := r.observed.Get(key)
	return v.lists == nil
}
