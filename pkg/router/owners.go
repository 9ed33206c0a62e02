package router

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/identity"
)

// A caller sees the catalogue as its owner does (identity.From(ctx)'s
// Owner; the catalogue's own view without one): the running servers'
// tools and those of the servers its owner connects to on its own
// (catalogue.UpdateFor), nobody else's. Its exposed set is the core
// tools, its view's servers' tools and the other sources' tools, by the
// same rules as the catalogue's own set; an owner whose view has no server
// of its own shares that set. A change of one owner's view alone is told
// to OnOwnerChange's watchers, naming the owner, never to OnChange's.

// viewOf returns the catalogue's view of ctx's caller.
func (r *Router) viewOf(ctx context.Context) catalogue.View {
	id, _ := identity.From(ctx)
	return r.cat.For(id.Owner())
}

// ToolsFor returns the exposed set as ctx's caller sees it (Tools, with
// the catalogue's tools in the view of identity.From(ctx)'s Owner): the
// same as Tools for a caller without one, or whose owner connects to no
// server of its own. A tool of another owner's server is never in it.
// The definitions are shared: never change one.
func (r *Router) ToolsFor(ctx context.Context) []*mcp.Tool {
	view := r.viewOf(ctx)
	if !view.Personal() {
		return r.Tools()
	}
	return r.ownedSet(view).tools
}

// Personal reports whether ctx's caller sees other tools than Tools: its
// owner connects to a server of its own.
func (r *Router) Personal(ctx context.Context) bool { return r.viewOf(ctx).Personal() }

// ownedSet returns the exposed set of view, an owner's with servers of its
// own, computed again if an offer changed since.
func (r *Router) ownedSet(view catalogue.View) *exposed {
	r.exposedMu.Lock()
	defer r.exposedMu.Unlock()
	owner := view.Owner()
	old := &exposed{routes: map[string]toolRoute{}}
	if prev, ok := r.owned.Load(owner); ok {
		old = prev.(*exposed)
	}
	next := r.compute(old, view.Definitions())
	if next != old {
		r.owned.Store(owner, next)
		if !view.Personal() {
			// Its servers went meanwhile: ownerViewChanged may have
			// dropped the set before it was stored.
			r.owned.Delete(owner)
		}
	}
	return next
}

// exposedOf returns the exposed set a call in view routes by: the one last
// computed for it (computed now, for an owner's first call), so that a
// call never recomputes a set that exists.
func (r *Router) exposedOf(view catalogue.View) *exposed {
	if view.Owner() == "" || !view.Personal() {
		return r.exposed.Load()
	}
	if set, ok := r.owned.Load(view.Owner()); ok {
		return set.(*exposed)
	}
	return r.ownedSet(view)
}

// ownerViewChanged handles a change of one owner's view alone: the set
// computed for it goes when the owner has no server of its own left, and
// its watchers are told of a change of its tools. It runs under the
// catalogue's write lock (and the supervisor's): it never blocks.
func (r *Router) ownerViewChanged(c catalogue.Change) {
	if !r.cat.For(c.Owner).Personal() {
		r.owned.Delete(c.Owner)
	}
	if len(c.Tools) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pendingOwners == nil {
		r.pendingOwners = map[string]bool{}
	}
	r.pendingOwners[c.Owner] = true
	if r.delivering == nil {
		r.delivering = make(chan struct{})
		go r.deliver(r.delivering)
	}
}

// OnOwnerChange registers fn to be called with an owner (identity's
// Owner) whose view alone changed: a tool of a server it connects to on
// its own appeared, went or has another definition, so that only that
// owner's sessions are told (ToolsFor answers the change). Calls come as
// OnChange's do, from the router's goroutine, never under a lock of
// anyone's, one at a time; changes of one owner that come while fn runs
// are coalesced into one more call. A change of what every caller sees
// goes to OnChange's watchers alone. The returned func ends the
// registration.
func (r *Router) OnOwnerChange(fn func(owner string)) (cancel func()) {
	return r.ownerWatchers.Add(fn)
}
