package catalogue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/internal/registry"
	"github.com/musterd/musterd/pkg/events"
)

// DefaultPrefix is the global prefix of exposed tool names when
// Options.Prefix is empty: muster's.
const DefaultPrefix = "x"

// Options configure a Catalogue. The zero value of each field is its
// default.
type Options struct {
	// Prefix is the global prefix of every exposed tool name. Default
	// DefaultPrefix ("x").
	Prefix string
	// NoPrefix, when set, drops the global prefix: names are
	// {toolPrefix or server name}_{tool}, with no "x_". Prefix is then
	// ignored. Default false.
	NoPrefix bool
}

// Naming says how a server's tools are exposed: the spec's toolPrefix and
// family.
type Naming struct {
	// ToolPrefix replaces the server's name in its tools' names; "" for
	// the server's name.
	ToolPrefix string
	// Family, if set, makes the server one instance of a family: its tools
	// are exposed under the family's name, shared with the other members,
	// and take the argument InstanceArg that picks the member by its name.
	Family      string
	InstanceArg string
}

// prefix is the middle part of an exposed name: the family, the
// toolPrefix, or the server's name.
func (n Naming) prefix(server events.Key) string {
	switch {
	case n.Family != "":
		return n.Family
	case n.ToolPrefix != "":
		return n.ToolPrefix
	default:
		return server.Name
	}
}

// Tool is one exposed tool, as the catalogue answers it.
type Tool struct {
	// Name is the exposed name.
	Name string
	// Server offers it: of several, the one whose key sorts first.
	Server events.Key
	// ServerTool is the server's own name of the tool.
	ServerTool string
	// Family and InstanceArg are the family's, for a family tool; then
	// Instances are the names of the members that offer it, sorted.
	Family      string
	InstanceArg string
	Instances   []string
	// Definition is the tool as clients see it: the server's own
	// definition with Name set to the exposed name and, for a family
	// tool, InstanceArg added to its input schema as a required string
	// argument. Shared: never change it.
	Definition *mcp.Tool
}

// Catalogue maps the exposed names of running servers' tools to the servers
// that offer them, with their definitions. Make one with New.
type Catalogue struct {
	prefix string

	// write serialises writers, from the change to its subscribers'
	// calls, so that subscribers see changes in order; readers only take
	// mu.
	write sync.Mutex

	mu       sync.RWMutex
	servers  map[events.Key]*offer
	names    map[string]*exposed
	subs     registry.Funcs[func(Change)]
	starting map[events.Key]string // server starting → the prefix of the names it will expose
	// defs is Definitions' answer, made once per change of the exposed
	// tools; nil until asked for after a change.
	defs []*mcp.Tool
	gone goneTools // tools of servers that stopped running (gone.go)
	// policies are the servers' exposure policies (exposure.go), running
	// or not, so that a server starts under its policy.
	policies map[events.Key]*Exposure

	// owners are the servers each owner connects to on its own, and its
	// view of the catalogue (owners.go).
	owners map[string]*ownerSet
	// gen counts the changes of the global catalogue: an owner's view
	// made at another is made again before it is read.
	gen uint64
}

// offers finds a running server's offer (nil: none), in the catalogue or
// in an owner's view of it (owners.go). c.mu is held.
type offers func(events.Key) *offer

// offer finds a server's offer in the catalogue (the global one). c.mu is
// held.
func (c *Catalogue) offer(key events.Key) *offer { return c.servers[key] }

// name finds an exposed name in the catalogue (the global one). c.mu is
// held.
func (c *Catalogue) name(tool string) *exposed { return c.names[tool] }

// offer is what one running server offers.
type offer struct {
	naming   Naming
	own      []*mcp.Tool // the server's tools, the first of each name
	listedAt time.Time
	exposure // under which names: computed by expose
}

// exposed is one exposed name.
type exposed struct {
	owners []events.Key // sorted
	tool   Tool
	print  []byte // the view a change is judged by: owner and definition
	// conflict: servers that are not one family's members expose the
	// name; none of them is offered it, each is told (Conflicts).
	conflict bool
}

// New returns an empty catalogue.
func New(opts Options) *Catalogue {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	if opts.NoPrefix {
		opts.Prefix = ""
	}
	return &Catalogue{
		prefix:  opts.Prefix,
		servers: map[events.Key]*offer{},
		names:   map[string]*exposed{},

		starting: map[events.Key]string{},
		policies: map[events.Key]*Exposure{},
		owners:   map[string]*ownerSet{},
	}
}

// Prefix returns the global prefix of exposed names; "" for none.
func (c *Catalogue) Prefix() string { return c.prefix }

// global prepends the global prefix to name.
func (c *Catalogue) global(name string) string {
	if c.prefix == "" {
		return name
	}
	return c.prefix + "_" + name
}

// ExposedName returns the name tool of server is exposed by under naming:
// {global prefix}_{family, toolPrefix or server's name}_{tool}, the middle
// part left out when tool already starts with it and "_" (muster's rule).
func (c *Catalogue) ExposedName(server events.Key, naming Naming, tool string) string {
	prefix := naming.prefix(server)
	if !strings.HasPrefix(tool, prefix+"_") {
		tool = prefix + "_" + tool
	}
	return c.global(tool)
}

// ExposedNames returns the exposed names of server's tools under naming
// and server's exposure policy (SetExposure), sorted and without repeats:
// the tools the policy keeps, under its names. It only names them; the
// catalogue is not changed.
func (c *Catalogue) ExposedNames(server events.Key, naming Naming, tools []string) []string {
	c.mu.RLock()
	p := c.policies[server.Canonical()]
	c.mu.RUnlock()
	names := make([]string, 0, len(tools))
	for _, tool := range tools {
		if naming.Family != "" {
			if p.KeepsTool(tool) {
				names = append(names, c.ExposedName(server, naming, tool))
			}
			continue
		}
		if p.KeepsTool(tool) {
			names = append(names, c.toolName(server, naming, p, tool))
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// NameUnder is the exposed name of server's prompt or resource name
// under naming and p: p's prefix, or muster's rule when p sets none.
func (c *Catalogue) NameUnder(server events.Key, naming Naming, p *Exposure, name string) string {
	switch {
	case p == nil || p.Prefix == nil || naming.Family != "":
		return c.ExposedName(server, naming, name)
	case *p.Prefix == "":
		return name
	}
	return *p.Prefix + "_" + name
}

// toolName is the exposed name of server's tool under naming and p (a
// server alone, not a family's tool): the override's name or its own,
// under p's prefix or muster's rule.
func (c *Catalogue) toolName(server events.Key, naming Naming, p *Exposure, tool string) string {
	return c.NameUnder(server, naming, p, p.ownName(tool))
}

// NamePrefix returns what every exposed name of server's tools begins with:
// {global prefix}_{family, toolPrefix or server name}_, or the prefix of
// its exposure policy.
func (c *Catalogue) NamePrefix(server events.Key, naming Naming) string {
	c.mu.RLock()
	p := c.policies[server.Canonical()]
	c.mu.RUnlock()
	if naming.Family == "" && p != nil && p.Prefix != nil {
		if *p.Prefix == "" {
			return ""
		}
		return *p.Prefix + "_"
	}
	return c.global(naming.prefix(server) + "_")
}

// SetStarting records whether server is starting, with naming: its tools
// are not known yet, but their exposed names will begin with NamePrefix.
// It returns that prefix, or the one recorded before, if the answer of
// StartingFor changed for names beginning with it, and "" otherwise.
func (c *Catalogue) SetStarting(server events.Key, naming Naming, starting bool) (changed string) {
	server = server.Canonical()
	prefix := c.NamePrefix(server, naming)
	c.mu.Lock()
	defer c.mu.Unlock()
	old, was := c.starting[server]
	switch {
	case starting && (!was || old != prefix):
		c.starting[server] = prefix
		return prefix
	case !starting && was:
		delete(c.starting, server)
		return old
	}
	return ""
}

// StartingFor returns a server that is starting and whose tools' exposed
// names begin as tool does, so that it may come to offer tool: of several,
// the one whose key sorts first.
func (c *Catalogue) StartingFor(tool string) (server events.Key, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for key, prefix := range c.starting {
		if strings.HasPrefix(tool, prefix) && (!ok || events.CompareKeys(key, server) < 0) {
			server, ok = key, true
		}
	}
	return server, ok
}

// Exposed is ExposedNames with only a toolPrefix.
func (c *Catalogue) Exposed(server events.Key, toolPrefix string, tools []string) []string {
	return c.ExposedNames(server, Naming{ToolPrefix: toolPrefix}, tools)
}

// Set is Update with tools known by name only (an empty definition each),
// toolPrefix as the naming and no listing time.
func (c *Catalogue) Set(server events.Key, toolPrefix string, tools []string) (changed []string) {
	defs := make([]*mcp.Tool, 0, len(tools))
	for _, name := range tools {
		defs = append(defs, &mcp.Tool{Name: name})
	}
	return c.Update(server, Naming{ToolPrefix: toolPrefix}, defs, time.Time{})
}

// Update records that server runs and offers tools (its own definitions)
// under naming, as listed at listedAt, replacing what it offered before.
// It returns the exposed names whose answer changed, sorted: a name that
// appeared or disappeared, or whose owner or definition (a family's
// instances included) is now another. Subscribers get the same names, if
// there are any, before Update returns. Of two tools with one exposed
// name, the first in tools counts.
func (c *Catalogue) Update(server events.Key, naming Naming, tools []*mcp.Tool, listedAt time.Time) (changed []string) {
	server = server.Canonical()
	next := &offer{naming: naming, own: make([]*mcp.Tool, 0, len(tools)), listedAt: listedAt}
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t == nil || seen[t.Name] {
			continue
		}
		seen[t.Name] = true
		next.own = append(next.own, t)
	}
	return c.apply(server, func(*offer) *offer { return next }, nil)
}

// Remove forgets server and its tools, and returns the exposed names whose
// answer changed, sorted, as Update does. Its exposure policy stays.
func (c *Catalogue) Remove(server events.Key) (changed []string) {
	return c.apply(server.Canonical(), func(*offer) *offer { return nil }, nil)
}

// SetExposure sets server's exposure policy (nil: everything under
// muster's names), running or not, and returns the exposed names whose
// answer changed, as Update does; subscribers get them, with
// Change.Exposure set, even when no tool's answer changed (its prompts or
// resources may have). The policy in force again (read from the same
// text) is no change at all: nothing is reported. The policy applies to the server's tools from now
// on, without its being listed again, and to its next starts; Remove
// keeps it, a nil policy clears it.
func (c *Catalogue) SetExposure(server events.Key, p *Exposure) (changed []string) {
	server = server.Canonical()
	c.mu.RLock()
	same := c.policies[server].same(p)
	c.mu.RUnlock()
	if same {
		return nil // every reconcile sets it: the same again is no change
	}
	return c.apply(server, func(prev *offer) *offer {
		if p == nil {
			delete(c.policies, server)
		} else {
			c.policies[server] = p
		}
		if prev == nil {
			return nil
		}
		return &offer{naming: prev.naming, own: prev.own, listedAt: prev.listedAt}
	}, &server)
}

// Exposure returns server's exposure policy; nil if it has none.
func (c *Catalogue) Exposure(server events.Key) *Exposure {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.policies[server.Canonical()]
}

// apply replaces key's offer by what next makes of the one in force (nil:
// not running), under c.mu; policy is key, for a change of its policy.
func (c *Catalogue) apply(key events.Key, next func(prev *offer) *offer, policy *events.Key) []string {
	c.write.Lock()
	defer c.write.Unlock()

	c.mu.Lock()
	views := c.viewsWith(key) // owners.go: the owners' views this change may alter
	c.gen++
	prev := c.servers[key]
	if policy != nil && prev == nil {
		next(nil) // records the policy: nothing runs to apply it to
		owned := c.ownerChanges(key, views, func(name string) []byte {
			if x := c.names[name]; x != nil {
				return x.print // the catalogue's answers did not change
			}
			return nil
		})
		c.mu.Unlock()
		for _, fn := range c.subs.All() {
			fn(Change{Server: key, Exposure: true})
		}
		c.tell(owned)
		return nil
	}
	nextOffer := next(prev)
	// The names of a family's members depend on one another (family.go):
	// every running member of a family the server left or joined is named
	// again, and the names of each are compared with its names before.
	var families []string
	for _, o := range []*offer{prev, nextOffer} {
		if o != nil && o.naming.Family != "" && !slices.Contains(families, o.naming.Family) {
			families = append(families, o.naming.Family)
		}
	}
	before := map[events.Key]map[string]*mcp.Tool{key: nil}
	if prev != nil {
		before[key] = prev.tools
	}
	for _, f := range families {
		for _, k := range c.familyMembers(f) {
			if k != key {
				before[k] = c.servers[k].tools
			}
		}
	}
	affected := map[string]bool{}
	for _, old := range before {
		for name := range old {
			affected[name] = true
		}
	}
	if nextOffer == nil {
		delete(c.servers, key)
	} else {
		c.servers[key] = nextOffer
	}
	var groups [][]events.Key
	if nextOffer != nil && nextOffer.naming.Family == "" {
		groups = append(groups, []events.Key{key})
	}
	for _, f := range families {
		groups = append(groups, c.familyMembers(f))
	}
	for _, group := range groups {
		for k, e := range c.expose(c.offer, group) {
			c.servers[k].exposure = e
			for name := range e.tools {
				affected[name] = true
			}
		}
	}
	prints := make(map[string][]byte, len(affected))
	conflictsBefore := map[string][]events.Key{}
	for name := range affected {
		if x := c.names[name]; x != nil {
			prints[name] = x.print
			if x.conflict {
				conflictsBefore[name] = slices.Clone(x.owners)
			}
		}
	}
	for k, old := range before {
		var now map[string]*mcp.Tool
		if s := c.servers[k]; s != nil {
			now = s.tools
		}
		c.moveOwners(k, old, now)
	}
	if nextOffer == nil && prev != nil {
		c.rememberGone(key, prev)
	} else if nextOffer != nil {
		c.gone.forget(key)
	}
	var changed []string
	for name := range affected {
		x := c.names[name]
		if x != nil && len(x.owners) == 0 {
			delete(c.names, name)
			x = nil
		}
		if x != nil {
			c.refresh(c.offer, name, x)
		}
		var after []byte
		if x != nil {
			after = x.print
		}
		if !bytes.Equal(prints[name], after) {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	if len(changed) > 0 {
		c.defs = nil // Definitions makes them again
	}
	conflicted := c.changedConflicts(affected, conflictsBefore)
	if prev != nil && nextOffer != nil && !slices.Equal(prev.clashes, nextOffer.clashes) ||
		prev == nil && nextOffer != nil && len(nextOffer.clashes) > 0 {
		if i, found := slices.BinarySearchFunc(conflicted, key, events.CompareKeys); !found {
			conflicted = slices.Insert(conflicted, i, key)
		}
	}
	owned := c.ownerChanges(key, views, func(name string) []byte {
		if affected[name] {
			return prints[name]
		}
		if x := c.names[name]; x != nil {
			return x.print
		}
		return nil
	})
	c.mu.Unlock()
	defer c.tell(owned)
	subs := c.subs.All()

	serverChanged := (prev == nil) != (nextOffer == nil) ||
		prev != nil && nextOffer != nil && (prev.naming != nextOffer.naming || !prev.listedAt.Equal(nextOffer.listedAt))
	if len(changed) > 0 || serverChanged || policy != nil || len(conflicted) > 0 {
		for _, fn := range subs {
			fn(Change{Server: key, Running: nextOffer != nil, Tools: slices.Clone(changed), Exposure: policy != nil,
				Conflicts: slices.Clone(conflicted)})
		}
	}
	return changed
}

// moveOwners records that server offers the names of now, no longer those
// of old only. c.mu is held.
func (c *Catalogue) moveOwners(server events.Key, old, now map[string]*mcp.Tool) {
	for name := range old {
		if now[name] != nil {
			continue
		}
		if x := c.names[name]; x != nil {
			if i, found := slices.BinarySearchFunc(x.owners, server, events.CompareKeys); found {
				x.owners = slices.Delete(x.owners, i, i+1)
			}
		}
	}
	for name := range now {
		if old[name] != nil {
			continue
		}
		x := c.names[name]
		if x == nil {
			x = &exposed{}
			c.names[name] = x
		}
		if i, found := slices.BinarySearchFunc(x.owners, server, events.CompareKeys); !found {
			x.owners = slices.Insert(x.owners, i, server)
		}
	}
}

// rememberGone records the tools that server, which stopped running,
// offered under its own names (gone.go). c.mu is held.
func (c *Catalogue) rememberGone(server events.Key, prev *offer) {
	tools := make(map[string]GoneTool, len(prev.tools))
	for name, t := range prev.tools {
		if !prev.grouped[name] {
			tools[name] = GoneTool{Server: server, Tool: t.Name}
		}
	}
	c.gone.remember(server, tools)
}

// refresh recomputes the view of name from its owners, whose offers of
// finds; c.mu is held.
func (c *Catalogue) refresh(of offers, name string, x *exposed) {
	x.conflict = c.conflicting(of, name, x.owners)
	if x.conflict {
		// Offered by none of them: a client sees the name go, and each
		// owner's status says why (Conflicts).
		x.tool = Tool{Name: name}
		view := []byte("conflict")
		for _, k := range x.owners {
			view = append(append(view, 0), k.String()...)
		}
		x.print = view
		return
	}
	owner := x.owners[0]
	s := of(owner)
	own := s.tools[name]
	def := *own // shallow: the nested values are shared, never changed
	def.Name = name
	t := Tool{Name: name, Server: owner, ServerTool: own.Name}
	if s.grouped[name] {
		t.Family, t.InstanceArg = s.naming.Family, s.naming.InstanceArg
		for _, k := range x.owners {
			if m := of(k); m != nil && m.grouped[name] && m.naming.Family == t.Family {
				t.Instances = append(t.Instances, k.Name)
			}
		}
		slices.Sort(t.Instances)
		t.Instances = slices.Compact(t.Instances)
		def.Description = annotateInstances(own.Description, t.Instances)
		def.InputSchema = withInstanceArg(own.InputSchema, t.InstanceArg, t.Instances)
	}
	t.Definition = &def
	x.tool = t
	view, err := json.Marshal(struct {
		Owner      string
		Definition *mcp.Tool
	}{owner.String(), &def})
	if err != nil {
		view = []byte(owner.String() + "\x00" + name + "\x00unencodable")
	}
	x.print = view
}

// Has reports whether some running server offers the exposed name tool.
func (c *Catalogue) Has(tool string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.offered(tool) != nil
}

// offered is the exposed name tool, if it is offered: known and not in
// conflict. c.mu is held.
func (c *Catalogue) offered(tool string) *exposed {
	if x := c.names[tool]; x != nil && !x.conflict {
		return x
	}
	return nil
}

// Lookup returns the server that offers the exposed name tool: of several,
// the one whose key sorts first.
func (c *Catalogue) Lookup(tool string) (server events.Key, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x := c.offered(tool)
	if x == nil {
		return events.Key{}, false
	}
	return x.owners[0], true
}

// Tool returns the exposed tool name, with its definition.
func (c *Catalogue) Tool(name string) (Tool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x := c.offered(name)
	if x == nil {
		return Tool{}, false
	}
	t := x.tool
	t.Instances = slices.Clone(t.Instances)
	return t, true
}

// Tools returns every exposed name offered, sorted.
func (c *Catalogue) Tools() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	names := make([]string, 0, len(c.names))
	for name, x := range c.names {
		if !x.conflict {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Definitions returns the definition of every exposed tool, Name set to the
// exposed name, sorted by name. The slice is made once per change of the
// exposed tools and returned as it is until the next: a caller may tell
// "nothing changed" by comparing it, and must never change it or the
// definitions in it.
func (c *Catalogue) Definitions() []*mcp.Tool {
	c.mu.RLock()
	defs := c.defs
	c.mu.RUnlock()
	if defs != nil {
		return defs[:len(defs):len(defs)]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.defs == nil {
		c.defs = make([]*mcp.Tool, 0, len(c.names))
		for _, name := range slices.Sorted(maps.Keys(c.names)) {
			if x := c.names[name]; !x.conflict {
				c.defs = append(c.defs, x.tool.Definition)
			}
		}
	}
	return c.defs[:len(c.defs):len(c.defs)]
}

// Server is what the catalogue knows of one running server.
type Server struct {
	Key    events.Key
	Naming Naming
	Tools  int // how many exposed names it offers (conflicts left out)
	// Offered is how many tools the server itself offers.
	Offered  int
	ListedAt time.Time // when its tools were last listed
}

// Servers returns the running servers, sorted by key.
func (c *Catalogue) Servers() []Server {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Server, 0, len(c.servers))
	for key, s := range c.servers {
		n := 0
		for name := range s.tools {
			if c.offered(name) != nil {
				n++
			}
		}
		out = append(out, Server{Key: key, Naming: s.naming, Tools: n, Offered: len(s.own), ListedAt: s.listedAt})
	}
	slices.SortFunc(out, func(a, b Server) int { return events.CompareKeys(a.Key, b.Key) })
	return out
}

// Change is one change of the catalogue, as subscribers get it: of one
// server's offer.
type Change struct {
	// Server is the server whose offer changed.
	Server events.Key
	// Running says whether it runs (Update) or went (Remove).
	Running bool
	// Tools are the exposed names whose answer changed, sorted, as Update
	// and Remove return them; empty for a change of the server alone (it
	// started or went without tools, listed its tools again, or was
	// renamed by its naming without a tool to rename).
	Tools []string
	// Exposure says the server's exposure policy was set (SetExposure):
	// its prompts and resources may be exposed otherwise.
	Exposure bool
	// Conflicts are the servers whose conflicts (Conflicts) changed,
	// sorted: each must tell its own.
	Conflicts []events.Key
	// Owner is whose view changed: "" for the catalogue itself, which
	// every view shows (a change of it may alter any owner's view as
	// well), else one owner's (UpdateFor, RemoveFor, ForgetOwner, or a
	// change of a server the owner connects to on its own), whose view
	// alone changed: Tools and Conflicts are then as For(Owner) answers.
	Owner string
}

// Subscribe registers fn to be called after every change: of the exposed
// set or a definition (Change.Tools), and of the running servers or their
// listing times. Calls come one at a time, in the order of the changes,
// synchronously from the writer (Update, Set, Remove) once the catalogue
// has the change, with no lock of the catalogue's held: fn may read the
// catalogue. The runtime bridge writes under the supervisor's lock, so fn
// must be quick and must not call into the supervisor: hand the work to a
// goroutine of its own. The returned func ends the subscription.
func (c *Catalogue) Subscribe(fn func(Change)) (cancel func()) { return c.subs.Add(fn) }

// ErrUnknownTool is the error of Resolve for a name no running server
// offers.
var ErrUnknownTool = errors.New("no running server offers this tool")

// Target is where a call of an exposed tool goes.
type Target struct {
	Server events.Key
	// Tool is the server's own name of the tool.
	Tool string
	// Arguments are the call's, without a family's instance argument.
	Arguments map[string]any
}

// Resolve returns where a call of the exposed tool name with args goes: the
// server that offers it (Lookup's) or, for a family tool, the member named
// by the instance argument, which is removed from the arguments (args
// itself is not changed). A name no running server offers fails with
// ErrUnknownTool. A family tool whose instance argument is missing or
// empty, or names no running member that offers it, fails with muster's
// error naming the argument or the instance, and the instances on offer;
// one whose instance argument is not a string says so.
func (c *Catalogue) Resolve(name string, args map[string]any) (Target, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return resolve(c.offer, c.offered(name), name, args)
}

// resolve is Resolve of x, the exposed name name (nil: not offered), whose
// owners' offers of finds. c.mu is held.
func resolve(of offers, x *exposed, name string, args map[string]any) (Target, error) {
	if x == nil {
		return Target{}, fmt.Errorf("tool %q: %w", name, ErrUnknownTool)
	}
	t := x.tool
	if t.Family == "" {
		return Target{Server: t.Server, Tool: t.ServerTool, Arguments: args}, nil
	}
	offered := strings.Join(t.Instances, ", ")
	raw, given := args[t.InstanceArg]
	instance, isString := raw.(string)
	switch {
	case given && !isString:
		return Target{}, fmt.Errorf("tool %s is provided by a family on servers %s; the %q parameter is required: a string naming the instance to call",
			name, offered, t.InstanceArg)
	case instance == "":
		return Target{}, fmt.Errorf("tool %s is provided by a family on servers %s; the %q parameter is required",
			name, offered, t.InstanceArg)
	}
	for _, k := range x.owners {
		if m := of(k); m != nil && m.grouped[name] && m.naming.Family == t.Family && k.Name == instance {
			rest := maps.Clone(args)
			delete(rest, t.InstanceArg)
			return Target{Server: k, Tool: m.tools[name].Name, Arguments: rest}, nil
		}
	}
	return Target{}, fmt.Errorf("tool %s is not available on server %q (available: %s)", name, instance, offered)
}
