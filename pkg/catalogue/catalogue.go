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
}

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
}

// New returns an empty catalogue.
func New(opts Options) *Catalogue {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	return &Catalogue{
		prefix:  opts.Prefix,
		servers: map[events.Key]*offer{},
		names:   map[string]*exposed{},

		starting: map[events.Key]string{},
	}
}

// Prefix returns the global prefix of exposed names.
func (c *Catalogue) Prefix() string { return c.prefix }

// ExposedName returns the name tool of server is exposed by under naming:
// {global prefix}_{family, toolPrefix or server's name}_{tool}, the middle
// part left out when tool already starts with it and "_" (muster's rule).
func (c *Catalogue) ExposedName(server events.Key, naming Naming, tool string) string {
	prefix := naming.prefix(server)
	if !strings.HasPrefix(tool, prefix+"_") {
		tool = prefix + "_" + tool
	}
	return c.prefix + "_" + tool
}

// ExposedNames returns the exposed names of server's tools under naming,
// sorted and without repeats. It only names them; the catalogue is not
// changed.
func (c *Catalogue) ExposedNames(server events.Key, naming Naming, tools []string) []string {
	names := make([]string, 0, len(tools))
	for _, tool := range tools {
		names = append(names, c.ExposedName(server, naming, tool))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// NamePrefix returns what every exposed name of server's tools begins with:
// {global prefix}_{family, toolPrefix or server name}_.
func (c *Catalogue) NamePrefix(server events.Key, naming Naming) string {
	return c.prefix + "_" + naming.prefix(server) + "_"
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
	return c.apply(server, next)
}

// Remove forgets server and its tools, and returns the exposed names whose
// answer changed, sorted, as Update does.
func (c *Catalogue) Remove(server events.Key) (changed []string) {
	return c.apply(server.Canonical(), nil)
}

func (c *Catalogue) apply(key events.Key, next *offer) []string {
	c.write.Lock()
	defer c.write.Unlock()

	c.mu.Lock()
	prev := c.servers[key]
	// The names of a family's members depend on one another (family.go):
	// every running member of a family the server left or joined is named
	// again, and the names of each are compared with its names before.
	var families []string
	for _, o := range []*offer{prev, next} {
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
	if next == nil {
		delete(c.servers, key)
	} else {
		c.servers[key] = next
	}
	var groups [][]events.Key
	if next != nil && next.naming.Family == "" {
		groups = append(groups, []events.Key{key})
	}
	for _, f := range families {
		groups = append(groups, c.familyMembers(f))
	}
	for _, group := range groups {
		for k, e := range c.expose(group) {
			c.servers[k].exposure = e
			for name := range e.tools {
				affected[name] = true
			}
		}
	}
	prints := make(map[string][]byte, len(affected))
	for name := range affected {
		if x := c.names[name]; x != nil {
			prints[name] = x.print
		}
	}
	for k, old := range before {
		var now map[string]*mcp.Tool
		if s := c.servers[k]; s != nil {
			now = s.tools
		}
		c.moveOwners(k, old, now)
	}
	if next == nil && prev != nil {
		c.rememberGone(key, prev)
	} else if next != nil {
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
			c.refresh(name, x)
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
	c.mu.Unlock()
	subs := c.subs.All()

	serverChanged := (prev == nil) != (next == nil) ||
		prev != nil && next != nil && (prev.naming != next.naming || !prev.listedAt.Equal(next.listedAt))
	if len(changed) > 0 || serverChanged {
		for _, fn := range subs {
			fn(Change{Server: key, Running: next != nil, Tools: slices.Clone(changed)})
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

// refresh recomputes the view of name from its owners; c.mu is held.
func (c *Catalogue) refresh(name string, x *exposed) {
	owner := x.owners[0]
	s := c.servers[owner]
	own := s.tools[name]
	def := *own // shallow: the nested values are shared, never changed
	def.Name = name
	t := Tool{Name: name, Server: owner, ServerTool: own.Name}
	if s.grouped[name] {
		t.Family, t.InstanceArg = s.naming.Family, s.naming.InstanceArg
		for _, k := range x.owners {
			if m := c.servers[k]; m != nil && m.grouped[name] && m.naming.Family == t.Family {
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
	return c.names[tool] != nil
}

// Lookup returns the server that offers the exposed name tool: of several,
// the one whose key sorts first.
func (c *Catalogue) Lookup(tool string) (server events.Key, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x := c.names[tool]
	if x == nil {
		return events.Key{}, false
	}
	return x.owners[0], true
}

// Tool returns the exposed tool name, with its definition.
func (c *Catalogue) Tool(name string) (Tool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	x := c.names[name]
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
	names := slices.AppendSeq(make([]string, 0, len(c.names)), maps.Keys(c.names))
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
			c.defs = append(c.defs, c.names[name].tool.Definition)
		}
	}
	return c.defs[:len(c.defs):len(c.defs)]
}

// Server is what the catalogue knows of one running server.
type Server struct {
	Key      events.Key
	Naming   Naming
	Tools    int       // how many exposed names it offers
	ListedAt time.Time // when its tools were last listed
}

// Servers returns the running servers, sorted by key.
func (c *Catalogue) Servers() []Server {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Server, 0, len(c.servers))
	for key, s := range c.servers {
		out = append(out, Server{Key: key, Naming: s.naming, Tools: len(s.tools), ListedAt: s.listedAt})
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
	x := c.names[name]
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
		if m := c.servers[k]; m != nil && m.grouped[name] && m.naming.Family == t.Family && k.Name == instance {
			rest := maps.Clone(args)
			delete(rest, t.InstanceArg)
			return Target{Server: k, Tool: m.tools[name].Name, Arguments: rest}, nil
		}
	}
	return Target{}, fmt.Errorf("tool %s is not available on server %q (available: %s)", name, instance, offered)
}
