package catalogue

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/events"
)

// A name two servers expose is a conflict, never a shadowing: neither
// offers it, and both say why (Conflicts), until one of them no longer
// exposes it. The members of one family sharing a family tool are no
// conflict: that is what a family is. The same holds within one server
// whose policy gives two of its tools one name (exposure.clashes).

// conflicting reports whether name, exposed by owners, is in conflict:
// two owners that are not members of one family sharing it; of finds
// their offers. c.mu is held.
func (c *Catalogue) conflicting(of offers, name string, owners []events.Key) bool {
	if len(owners) < 2 {
		return false
	}
	family := ""
	for i, k := range owners {
		s := of(k)
		if s == nil || !s.grouped[name] {
			return true
		}
		if i == 0 {
			family = s.naming.Family
		} else if s.naming.Family != family {
			return true
		}
	}
	return false
}

// changedConflicts returns the servers whose conflicts a change of the
// names affected altered, sorted: the owners, before (conflicts before)
// and after, of each name whose conflict began, ended or changed owners.
// c.mu is held.
func (c *Catalogue) changedConflicts(affected map[string]bool, before map[string][]events.Key) []events.Key {
	var keys []events.Key
	add := func(ks []events.Key) {
		for _, k := range ks {
			if i, found := slices.BinarySearchFunc(keys, k, events.CompareKeys); !found {
				keys = slices.Insert(keys, i, k)
			}
		}
	}
	for name := range affected {
		var now []events.Key
		if x := c.names[name]; x != nil && x.conflict {
			now = x.owners
		}
		if old := before[name]; !slices.Equal(old, now) {
			add(old)
			add(now)
		}
	}
	return keys
}

// conflictsOf lists s's conflicts, sorted, as named finds the exposed
// names. c.mu is held.
func conflictsOf(named func(string) *exposed, key events.Key, s *offer) []string {
	out := slices.Clone(s.clashes)
	for _, name := range slices.Sorted(maps.Keys(s.tools)) {
		x := named(name)
		if x == nil || !x.conflict {
			continue
		}
		var others []string
		for _, k := range x.owners {
			if k != key {
				others = append(others, k.Kind+" "+k.Namespace+"/"+k.Name)
			}
		}
		out = append(out, fmt.Sprintf("tool %s is also exposed by %s: offered by none of them until one exposes it otherwise (an exposure policy's prefix or rename, or a toolPrefix)",
			name, strings.Join(others, ", ")))
	}
	return out
}

// Conflicts returns what of server's tools is held back by a conflict,
// one sentence each, sorted: a name another server exposes too, or one its
// policy gives two of its tools. Empty when it runs without one, or does
// not run.
func (c *Catalogue) Conflicts(server events.Key) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.servers[server.Canonical()]
	if s == nil {
		return nil
	}
	return conflictsOf(c.name, server.Canonical(), s)
}

// Why says why no server offers the exposed name tool, when it is an
// exposure policy's doing or a conflict's: "MCPServer default/a's exposure
// policy (metadata.annotations[musterd.io/exposure]) leaves it out:
// tools.exclude[0] \"*\"". ok is false when neither is the cause.
func (c *Catalogue) Why(tool string) (why string, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.why(c.names[tool], c.servers, tool)
}

// why is Why of tool, exposed as x (nil: by none), among servers. c.mu is
// held.
func (c *Catalogue) why(x *exposed, servers map[events.Key]*offer, tool string) (string, bool) {
	if x != nil {
		if !x.conflict {
			return "", false
		}
		var owners []string
		for _, k := range x.owners {
			owners = append(owners, k.Kind+" "+k.Namespace+"/"+k.Name)
		}
		return "held back: exposed by " + strings.Join(owners, " and ") + " at once, a conflict", true
	}
	keys := slices.SortedFunc(maps.Keys(servers), events.CompareKeys)
	for _, k := range keys {
		if w, hidden := servers[k].hidden[tool]; hidden {
			return fmt.Sprintf("%s %s/%s's exposure policy (metadata.annotations[%s]) %s", k.Kind, k.Namespace, k.Name, ExposureAnnotation, w), true
		}
	}
	return "", false
}

// ServerTools returns the tools of the running server as its policy lets
// it be seen alone: its own definitions and names, those the policy's
// filter keeps, in its order. The slice is made once per change of them:
// the same slice again means no change. ok is false when the server does
// not run (in the catalogue).
func (c *Catalogue) ServerTools(server events.Key) (tools []*mcp.Tool, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.servers[server.Canonical()]
	if s == nil {
		return nil, false
	}
	return s.visible, true
}

// Offer returns the exposed names the running server is offered under
// now, sorted: its policy's, without those held back by a conflict; and
// how many tools the server itself offers. ok is false when it does not
// run.
func (c *Catalogue) Offer(server events.Key) (exposed []string, offered int, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s := c.servers[server.Canonical()]
	if s == nil {
		return nil, 0, false
	}
	for name := range s.tools {
		if c.offered(name) != nil {
			exposed = append(exposed, name)
		}
	}
	slices.Sort(exposed)
	return exposed, len(s.own), true
}
