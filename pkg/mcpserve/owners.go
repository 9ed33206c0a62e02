package mcpserve

import (
	"context"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A caller's tools are those of its owner's view (identity's Owner, which
// enter puts in every call's context): the exposed set, plus the tools of
// the servers its owner connects to on its own. The meta-tools list them
// through Backend.ToolsFor; a change of one owner's view alone is told to
// that owner's sessions only (ToolsChangedFor), on the stream the follows
// use, since the go-sdk's own list_changed goes to every session.

// toolsFor is the exposed set as ctx's caller sees it.
func (s *Server) toolsFor(ctx context.Context) []*mcp.Tool {
	return slices.Clone(s.opts.Backend.ToolsFor(ctx))
}

// ownerSessions are the sessions of each owner, as their calls named it.
type ownerSessions struct {
	mu      sync.Mutex
	owner   map[string]string          // session key → its owner
	byOwner map[string]map[string]bool // owner → its session keys
	// gone is told of an owner whose last session closed
	// (Options.OnOwnerGone); nil for none.
	gone func(owner string)
}

// note records that the session key, which closes with closed, is owner's.
func (o *ownerSessions) note(key, owner string, closed context.Context) {
	if owner == "" {
		return
	}
	o.mu.Lock()
	old, had := o.owner[key]
	if had && old == owner {
		o.mu.Unlock()
		return
	}
	if o.owner == nil {
		o.owner, o.byOwner = map[string]string{}, map[string]map[string]bool{}
	}
	if had {
		o.dropLocked(key, old)
	}
	o.owner[key] = owner
	if o.byOwner[owner] == nil {
		o.byOwner[owner] = map[string]bool{}
	}
	o.byOwner[owner][key] = true
	o.mu.Unlock()
	if !had {
		context.AfterFunc(closed, func() {
			o.mu.Lock()
			owner, ok := o.owner[key]
			last := false
			if ok {
				o.dropLocked(key, owner)
				last = o.byOwner[owner] == nil
			}
			o.mu.Unlock()
			if last && o.gone != nil {
				o.gone(owner)
			}
		})
	}
}

func (o *ownerSessions) dropLocked(key, owner string) {
	delete(o.owner, key)
	delete(o.byOwner[owner], key)
	if len(o.byOwner[owner]) == 0 {
		delete(o.byOwner, owner)
	}
}

// sessions returns owner's session keys, sorted.
func (o *ownerSessions) sessions(owner string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	keys := make([]string, 0, len(o.byOwner[owner]))
	for k := range o.byOwner[owner] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ToolsChangedFor sends notifications/tools/list_changed to the sessions
// of owner (identity's Owner, as their calls carried it) alone, on each
// one's open stream, and returns how many it reached: a session without an
// open stream, or that made no call yet, is not told. Wire it to the
// router's OnOwnerChange.
func (s *Server) ToolsChangedFor(owner string) int {
	// The owner's own views of servers follow its connections: their
	// sessions hear list_changed from their view, as on the server's.
	s.servers.refreshOwner(s, owner) // serverview.go
	n := 0
	for _, key := range s.owners.sessions(owner) {
		if s.notifier(key)("notifications/tools/list_changed", map[string]any{}) {
			n++
		}
	}
	return n
}
