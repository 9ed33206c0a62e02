package catalogue

import (
	"bytes"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
)

// An owner (identity.Identity's Owner: a user, or a session) may connect
// to servers on its own: a protected server, whose tools are the user's to
// see. Those servers are the owner's, beside the catalogue's running
// servers, and the owner's view (For) is both: the catalogue's servers
// and the owner's, named by the same rules (prefix, toolPrefix, the
// server's exposure policy, whoever connects), and nobody else's view has
// them.
//
// The view is computed as an overlay on the catalogue, so that an owner
// costs what its own servers offer, not what every server does: it
// exposes anew only the owner's servers and the running members of their
// families (a server the owner connects to joins its family with the
// owner's other members and the catalogue's, never another owner's), and
// answers for the names they expose and the names they expose in the
// catalogue; any other name is the catalogue's answer. A server the owner
// connects to that also runs in the catalogue is the owner's, for that
// owner. A name the owner's server exposes that another server exposes
// too is a conflict in the owner's view, as in the catalogue's.
//
// The overlay is made again when it is read after any change of the
// catalogue (gen), and at once by a change of the owner's servers.

// ownerSet is what one owner connects to on its own.
type ownerSet struct {
	// servers are the owner's, as UpdateFor recorded them (naming, own
	// tools, listing time): their exposure is the view's.
	servers map[events.Key]*offer
	// view is the owner's view as last made; nil before it is read.
	view *overlay
}

// overlay is one owner's view of the catalogue. Immutable once made.
type overlay struct {
	gen uint64 // the catalogue's gen it was made at
	// offers are the servers the view exposes anew: the owner's, and the
	// running members of their families, with their exposure in the view.
	offers map[events.Key]*offer
	// affected are the names the view answers itself, offered or not;
	// names are those of them someone exposes, as the view sees them.
	affected map[string]bool
	names    map[string]*exposed

	defsOnce sync.Once
	defs     []*mcp.Tool
}

// scope is the catalogue as one owner sees it: ov nil for the catalogue's
// own view. c.mu is held while it is used.
type scope struct {
	c  *Catalogue
	ov *overlay
}

// offer finds a running server's offer in the view.
func (s scope) offer(k events.Key) *offer {
	if s.ov != nil {
		if o := s.ov.offers[k]; o != nil {
			return o
		}
	}
	return s.c.servers[k]
}

// name finds an exposed name in the view.
func (s scope) name(tool string) *exposed {
	if s.ov != nil && s.ov.affected[tool] {
		return s.ov.names[tool]
	}
	return s.c.names[tool]
}

// offered is the exposed name tool, if the view offers it: known and not
// in conflict.
func (s scope) offered(tool string) *exposed {
	if x := s.name(tool); x != nil && !x.conflict {
		return x
	}
	return nil
}

// UpdateFor records that owner connects on its own to server, which offers
// tools under naming, as listed at listedAt, replacing what it offered the
// owner before: Update for owner's view alone (For). It returns the
// exposed names whose answer changed in that view, sorted; subscribers get
// them with Change.Owner set to owner. The catalogue's own view, and every
// other owner's, do not change. Owner "" is the catalogue: Update.
func (c *Catalogue) UpdateFor(owner string, server events.Key, naming Naming, tools []*mcp.Tool, listedAt time.Time) (changed []string) {
	if owner == "" {
		return c.Update(server, naming, tools, listedAt)
	}
	return c.applyFor(owner, server.Canonical(), ownOffer(naming, tools, listedAt))
}

// RemoveFor forgets that owner connects on its own to server, and returns
// the exposed names whose answer changed in owner's view, as UpdateFor
// does. Owner "" is the catalogue: Remove.
func (c *Catalogue) RemoveFor(owner string, server events.Key) (changed []string) {
	if owner == "" {
		return c.Remove(server)
	}
	return c.applyFor(owner, server.Canonical(), nil)
}

// ForgetOwner forgets every server owner connects to on its own (its
// session ended, or it logged out of all), as RemoveFor of each, in the
// order of their keys, and returns the names whose answer changed in its
// view, sorted. Owner "" is no owner: nothing is forgotten.
func (c *Catalogue) ForgetOwner(owner string) (changed []string) {
	if owner == "" {
		return nil
	}
	for _, k := range c.OwnerServers(owner) {
		changed = append(changed, c.applyFor(owner, k, nil)...)
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// OwnerServers returns the servers owner connects to on its own, sorted.
func (c *Catalogue) OwnerServers(owner string) []events.Key {
	c.mu.RLock()
	defer c.mu.RUnlock()
	set := c.owners[owner]
	if set == nil {
		return nil
	}
	return slices.SortedFunc(maps.Keys(set.servers), events.CompareKeys)
}

// Owners returns the owners that connect to a server on their own, sorted.
func (c *Catalogue) Owners() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.owners))
}

// ownOffer is a server's offer of tools, the first of each name.
func ownOffer(naming Naming, tools []*mcp.Tool, listedAt time.Time) *offer {
	next := &offer{naming: naming, own: make([]*mcp.Tool, 0, len(tools)), listedAt: listedAt}
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t == nil || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		next.own = append(next.own, t)
	}
	return next
}

// applyFor replaces what owner's server key offers it by next (nil: it no
// longer connects), and tells the subscribers what changed in the owner's
// view.
func (c *Catalogue) applyFor(owner string, key events.Key, next *offer) []string {
	c.write.Lock()
	defer c.write.Unlock()

	c.mu.Lock()
	before := c.overlayLocked(owner)
	set := c.owners[owner]
	var prev *offer
	if set != nil {
		prev = set.servers[key]
	}
	switch {
	case next == nil && prev == nil:
		c.mu.Unlock()
		return nil
	case next == nil:
		delete(set.servers, key)
		if len(set.servers) == 0 {
			delete(c.owners, owner)
		}
	default:
		if set == nil {
			set = &ownerSet{servers: map[events.Key]*offer{}}
			c.owners[owner] = set
		}
		set.servers[key] = next
	}
	if set != nil {
		set.view = nil
	}
	after := c.overlayLocked(owner)
	current := func(name string) []byte {
		if x := c.names[name]; x != nil {
			return x.print
		}
		return nil
	}
	changed, conflicted := c.diffViews(before, after, current)
	c.mu.Unlock()

	serverChanged := (prev == nil) != (next == nil) ||
		prev != nil && next != nil && (prev.naming != next.naming || !prev.listedAt.Equal(next.listedAt))
	if len(changed) > 0 || serverChanged || len(conflicted) > 0 {
		c.tell([]Change{{Owner: owner, Server: key, Running: next != nil, Tools: slices.Clone(changed),
			Conflicts: conflicted}})
	}
	return changed
}

// tell calls the subscribers with each change, in order. c.write is held,
// c.mu is not.
func (c *Catalogue) tell(changes []Change) {
	if len(changes) == 0 {
		return
	}
	subs := c.subs.All()
	for _, ch := range changes {
		for _, fn := range subs {
			fn(Change{Owner: ch.Owner, Server: ch.Server, Running: ch.Running, Tools: slices.Clone(ch.Tools),
				Exposure: ch.Exposure, Conflicts: slices.Clone(ch.Conflicts)})
		}
	}
}

// viewBefore is an owner's view before a change of the catalogue.
type viewBefore struct {
	owner string
	ov    *overlay
}

// viewsWith returns the views, made current, of the owners whose view
// exposes key's server anew (theirs, or a member of their family), by
// owner: those a change of key's server or its policy may alter though the
// catalogue's answers do not change. c.mu is held for writing.
func (c *Catalogue) viewsWith(key events.Key) []viewBefore {
	var out []viewBefore
	for _, owner := range slices.Sorted(maps.Keys(c.owners)) {
		// Only those views are made again now: any other is made when
		// next read. A view made before key's server joined the
		// owner's family misses it; the catalogue's change of the
		// family's names tells every view.
		set := c.owners[owner]
		if set.servers[key] == nil && (set.view == nil || set.view.offers[key] == nil) {
			continue
		}
		if ov := c.overlayLocked(owner); ov.offers[key] != nil {
			out = append(out, viewBefore{owner, ov})
		}
	}
	return out
}

// ownerChanges returns the changes of the views of views, now that the
// catalogue changed key's server: globalBefore is the print of a name in
// the catalogue before the change. c.mu is held for writing.
func (c *Catalogue) ownerChanges(key events.Key, views []viewBefore, globalBefore func(string) []byte) []Change {
	var out []Change
	for _, v := range views {
		after := c.overlayLocked(v.owner)
		changed, conflicted := c.diffViews(v.ov, after, globalBefore)
		if len(changed) > 0 || len(conflicted) > 0 {
			_, running := c.servers[key]
			if after != nil && after.offers[key] != nil {
				running = true
			}
			out = append(out, Change{Owner: v.owner, Server: key, Running: running, Tools: changed, Conflicts: conflicted})
		}
	}
	return out
}

// diffViews returns the names whose answer differs between the views
// before and after of one owner, sorted, and the servers whose conflicts
// did. A name neither view answers itself is the catalogue's in both;
// one only after answers is compared with globalBefore's print of it.
// c.mu is held.
func (c *Catalogue) diffViews(before, after *overlay, globalBefore func(string) []byte) (changed []string, conflicted []events.Key) {
	names := map[string]bool{}
	for _, ov := range []*overlay{before, after} {
		if ov != nil {
			for name := range ov.affected {
				names[name] = true
			}
		}
	}
	addKeys := func(ks []events.Key) {
		for _, k := range ks {
			if i, found := slices.BinarySearchFunc(conflicted, k, events.CompareKeys); !found {
				conflicted = slices.Insert(conflicted, i, k)
			}
		}
	}
	for name := range names {
		var printBefore, printAfter []byte
		var conflictBefore, conflictAfter []events.Key
		if before != nil && before.affected[name] {
			if x := before.names[name]; x != nil {
				printBefore = x.print
				if x.conflict {
					conflictBefore = x.owners
				}
			}
		} else {
			printBefore = globalBefore(name)
			if x := c.names[name]; x != nil && x.conflict && bytes.Equal(x.print, printBefore) {
				conflictBefore = x.owners // the catalogue's, unchanged
			}
		}
		if x := (scope{c, after}).name(name); x != nil {
			printAfter = x.print
			if x.conflict {
				conflictAfter = x.owners
			}
		}
		if bytes.Equal(printBefore, printAfter) {
			continue
		}
		changed = append(changed, name)
		if !slices.Equal(conflictBefore, conflictAfter) {
			addKeys(conflictBefore)
			addKeys(conflictAfter)
		}
	}
	// A policy naming two of a server's tools alike is a conflict of the
	// server alone.
	for _, ov := range []*overlay{before, after} {
		if ov == nil {
			continue
		}
		for k := range ov.offers {
			var was, is []string
			if before != nil && before.offers[k] != nil {
				was = before.offers[k].clashes
			}
			if after != nil && after.offers[k] != nil {
				is = after.offers[k].clashes
			}
			if !slices.Equal(was, is) {
				addKeys([]events.Key{k})
			}
		}
	}
	slices.Sort(changed)
	return changed, conflicted
}

// overlayLocked returns owner's view, made again if the catalogue or the
// owner's servers changed since it was made; nil when owner connects to
// nothing of its own. c.mu is held for writing.
func (c *Catalogue) overlayLocked(owner string) *overlay {
	set := c.owners[owner]
	if set == nil {
		return nil
	}
	if set.view == nil || set.view.gen != c.gen {
		set.view = c.makeOverlay(set)
	}
	return set.view
}

// read runs fn with owner's view current (nil: the catalogue's own) and
// c.mu held: for reading when the view is current, else for writing, to
// make it again.
func (c *Catalogue) read(owner string, fn func(scope)) {
	c.mu.RLock()
	set := c.owners[owner]
	if set == nil || set.view != nil && set.view.gen == c.gen {
		defer c.mu.RUnlock()
		var ov *overlay
		if set != nil {
			ov = set.view
		}
		fn(scope{c, ov})
		return
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(scope{c, c.overlayLocked(owner)})
}

// makeOverlay makes set's view of the catalogue. c.mu is held.
func (c *Catalogue) makeOverlay(set *ownerSet) *overlay {
	ov := &overlay{gen: c.gen, offers: map[events.Key]*offer{}, affected: map[string]bool{}, names: map[string]*exposed{}}
	of := scope{c, ov}.offer
	var families []string
	addFamily := func(f string) {
		if f != "" && !slices.Contains(families, f) {
			families = append(families, f)
		}
	}
	var groups [][]events.Key
	for _, k := range slices.SortedFunc(maps.Keys(set.servers), events.CompareKeys) {
		o := set.servers[k]
		ov.offers[k] = &offer{naming: o.naming, own: o.own, listedAt: o.listedAt}
		addFamily(o.naming.Family)
		if g := c.servers[k]; g != nil {
			// The catalogue's instance leaves its family in this view.
			addFamily(g.naming.Family)
		}
		if o.naming.Family == "" {
			groups = append(groups, []events.Key{k})
		}
	}
	for _, f := range families {
		for k, g := range c.servers {
			if g.naming.Family == f && set.servers[k] == nil {
				ov.offers[k] = &offer{naming: g.naming, own: g.own, listedAt: g.listedAt}
			}
		}
		var members []events.Key
		for k, o := range ov.offers {
			if o.naming.Family == f {
				members = append(members, k)
			}
		}
		if len(members) > 0 {
			slices.SortFunc(members, events.CompareKeys)
			groups = append(groups, members)
		}
	}
	for _, group := range groups {
		for k, e := range c.expose(of, group) {
			ov.offers[k].exposure = e
		}
	}
	// The names the view answers: those its servers expose in it, and
	// those they expose in the catalogue (which may be gone or held by
	// another there).
	exposers := map[string][]events.Key{}
	for k, o := range ov.offers {
		for name := range o.tools {
			ov.affected[name] = true
			exposers[name] = append(exposers[name], k)
		}
		if g := c.servers[k]; g != nil {
			for name := range g.tools {
				ov.affected[name] = true
			}
		}
	}
	for name := range ov.affected {
		owners := exposers[name]
		if x := c.names[name]; x != nil {
			for _, k := range x.owners {
				if ov.offers[k] == nil {
					owners = append(owners, k)
				}
			}
		}
		if len(owners) == 0 {
			continue
		}
		slices.SortFunc(owners, events.CompareKeys)
		x := &exposed{owners: owners}
		c.refresh(of, name, x)
		ov.names[name] = x
	}
	return ov
}

// View is one owner's view of the catalogue: the running servers' tools
// and those of the servers the owner connects to on its own (UpdateFor),
// nobody else's. The view of owner "" is the catalogue's own. A View is a
// handle: it reads the catalogue as it is at each call.
type View struct {
	c     *Catalogue
	owner string
}

// For returns owner's view of the catalogue (identity.Identity's Owner;
// "" for the catalogue's own view).
func (c *Catalogue) For(owner string) View { return View{c: c, owner: owner} }

// Owner returns whose view v is.
func (v View) Owner() string { return v.owner }

// Personal reports whether the owner connects to a server of its own now,
// so that its view may differ from the catalogue's.
func (v View) Personal() bool {
	if v.owner == "" {
		return false
	}
	v.c.mu.RLock()
	defer v.c.mu.RUnlock()
	return v.c.owners[v.owner] != nil
}

// Has is Catalogue.Has in the view.
func (v View) Has(tool string) (ok bool) {
	if v.owner == "" {
		return v.c.Has(tool)
	}
	v.c.read(v.owner, func(s scope) { ok = s.offered(tool) != nil })
	return ok
}

// Lookup is Catalogue.Lookup in the view.
func (v View) Lookup(tool string) (server events.Key, ok bool) {
	if v.owner == "" {
		return v.c.Lookup(tool)
	}
	v.c.read(v.owner, func(s scope) {
		if x := s.offered(tool); x != nil {
			server, ok = x.owners[0], true
		}
	})
	return server, ok
}

// Tool is Catalogue.Tool in the view.
func (v View) Tool(name string) (t Tool, ok bool) {
	if v.owner == "" {
		return v.c.Tool(name)
	}
	v.c.read(v.owner, func(s scope) {
		if x := s.offered(name); x != nil {
			t, ok = x.tool, true
			t.Instances = slices.Clone(t.Instances)
		}
	})
	return t, ok
}

// Tools is Catalogue.Tools in the view.
func (v View) Tools() []string {
	if v.owner == "" {
		return v.c.Tools()
	}
	var names []string
	v.c.read(v.owner, func(s scope) {
		names = make([]string, 0, len(s.c.names))
		for name, x := range s.c.names {
			if !x.conflict && (s.ov == nil || !s.ov.affected[name]) {
				names = append(names, name)
			}
		}
		if s.ov != nil {
			for name, x := range s.ov.names {
				if !x.conflict {
					names = append(names, name)
				}
			}
		}
	})
	slices.Sort(names)
	return names
}

// Definitions is Catalogue.Definitions in the view: the same slice while
// neither the catalogue nor the owner's servers change; never change it.
func (v View) Definitions() (defs []*mcp.Tool) {
	if v.owner == "" {
		return v.c.Definitions()
	}
	global := v.c.Definitions() // made first: the view merges them
	defs = global
	v.c.read(v.owner, func(s scope) {
		if s.ov != nil {
			s.ov.defsOnce.Do(func() { s.ov.defs = s.ov.definitions(s.c, global) })
			defs = s.ov.defs
		}
	})
	return defs[:len(defs):len(defs)]
}

// sortedDefinitions is Definitions, made anew. c.mu is held.
func (c *Catalogue) sortedDefinitions() []*mcp.Tool {
	defs := make([]*mcp.Tool, 0, len(c.names))
	for _, name := range slices.Sorted(maps.Keys(c.names)) {
		if x := c.names[name]; !x.conflict {
			defs = append(defs, x.tool.Definition)
		}
	}
	return defs
}

// definitions merges the catalogue's definitions, those the view does not
// answer for, with the view's own, by name. global is what the
// catalogue's Definitions answered, which is made again if the catalogue
// changed since. c.mu is held.
func (ov *overlay) definitions(c *Catalogue, global []*mcp.Tool) []*mcp.Tool {
	if c.defs == nil || len(global) != len(c.defs) || len(global) > 0 && &global[0] != &c.defs[0] {
		global = c.sortedDefinitions()
	}
	own := make([]*mcp.Tool, 0, len(ov.names))
	for _, name := range slices.Sorted(maps.Keys(ov.names)) {
		if x := ov.names[name]; !x.conflict {
			own = append(own, x.tool.Definition)
		}
	}
	out := make([]*mcp.Tool, 0, len(global)+len(own))
	i := 0
	for _, d := range global {
		if ov.affected[d.Name] {
			continue
		}
		for i < len(own) && own[i].Name < d.Name {
			out = append(out, own[i])
			i++
		}
		out = append(out, d)
	}
	return append(out, own[i:]...)
}

// Resolve is Catalogue.Resolve in the view: a tool of another owner's
// server is unknown (ErrUnknownTool), as any name the view does not have.
func (v View) Resolve(name string, args map[string]any) (t Target, err error) {
	if v.owner == "" {
		return v.c.Resolve(name, args)
	}
	v.c.read(v.owner, func(s scope) { t, err = resolve(s.offer, s.offered(name), name, args) })
	return t, err
}

// ServerTools is Catalogue.ServerTools in the view: of a server the owner
// connects to, its own tools as the owner sees them.
func (v View) ServerTools(server events.Key) (tools []*mcp.Tool, ok bool) {
	if v.owner == "" {
		return v.c.ServerTools(server)
	}
	v.c.read(v.owner, func(s scope) {
		if o := s.offer(server.Canonical()); o != nil {
			tools, ok = o.visible, true
		}
	})
	return tools, ok
}

// Conflicts is Catalogue.Conflicts in the view.
func (v View) Conflicts(server events.Key) (out []string) {
	if v.owner == "" {
		return v.c.Conflicts(server)
	}
	v.c.read(v.owner, func(s scope) {
		if o := s.offer(server.Canonical()); o != nil {
			out = conflictsOf(s.name, server.Canonical(), o)
		}
	})
	return out
}

// Why is Catalogue.Why in the view: a name the owner's server and another
// expose is held back in the owner's view, and says so.
func (v View) Why(tool string) (why string, ok bool) {
	if v.owner == "" {
		return v.c.Why(tool)
	}
	v.c.read(v.owner, func(s scope) {
		servers := s.c.servers
		if s.ov != nil {
			servers = maps.Clone(s.c.servers)
			maps.Copy(servers, s.ov.offers)
		}
		why, ok = s.c.why(s.name(tool), servers, tool)
	})
	return why, ok
}

// Gone is Catalogue.Gone in the view: a name the view has is not gone.
func (v View) Gone(tool string) (GoneTool, bool) {
	if v.owner == "" {
		return v.c.Gone(tool)
	}
	if v.Has(tool) {
		return GoneTool{}, false
	}
	var t GoneTool
	var ok bool
	v.c.read(v.owner, func(s scope) {
		if s.name(tool) == nil {
			t, ok = s.c.gone.names[tool]
		}
	})
	return t, ok
}
