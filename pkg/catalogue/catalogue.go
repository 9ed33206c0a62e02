package catalogue

import (
	"slices"
	"strings"
	"sync"

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

// Catalogue maps the exposed names of running servers' tools to the servers
// that offer them. Make one with New.
type Catalogue struct {
	prefix string

	mu       sync.RWMutex
	servers  map[events.Key][]string // server → its exposed names, sorted
	owners   map[string][]events.Key // exposed name → servers offering it, sorted
	starting map[events.Key]string   // server starting → the prefix of the names it will expose
}

// New returns an empty catalogue.
func New(opts Options) *Catalogue {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	return &Catalogue{prefix: opts.Prefix, servers: map[events.Key][]string{}, owners: map[string][]events.Key{},
		starting: map[events.Key]string{}}
}

// Prefix returns the global prefix of exposed names.
func (c *Catalogue) Prefix() string { return c.prefix }

// Exposed returns the exposed names of server's tools, sorted and without
// repeats: {global prefix}_{toolPrefix, or server's name if empty}_{tool}.
// It only names them; the catalogue is not changed.
func (c *Catalogue) Exposed(server events.Key, toolPrefix string, tools []string) []string {
	if toolPrefix == "" {
		toolPrefix = server.Name
	}
	names := make([]string, 0, len(tools))
	for _, tool := range tools {
		names = append(names, c.prefix+"_"+toolPrefix+"_"+tool)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// NamePrefix returns what every exposed name of server's tools begins with:
// {global prefix}_{toolPrefix, or server's name if empty}_.
func (c *Catalogue) NamePrefix(server events.Key, toolPrefix string) string {
	if toolPrefix == "" {
		toolPrefix = server.Name
	}
	return c.prefix + "_" + toolPrefix + "_"
}

// SetStarting records whether server is starting, under toolPrefix (its
// name if empty): its tools are not known yet, but their exposed names
// will begin with NamePrefix. It returns that prefix, or the one recorded
// before, if the answer of StartingFor changed for names beginning with
// it, and "" otherwise.
func (c *Catalogue) SetStarting(server events.Key, toolPrefix string, starting bool) (changed string) {
	server = server.Canonical()
	prefix := c.NamePrefix(server, toolPrefix)
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
		if strings.HasPrefix(tool, prefix) && (!ok || compareKeys(key, server) < 0) {
			server, ok = key, true
		}
	}
	return server, ok
}

// Set records that server offers tools under toolPrefix (its name if empty),
// replacing what it offered before, and returns the exposed names whose
// answer changed, sorted.
func (c *Catalogue) Set(server events.Key, toolPrefix string, tools []string) (changed []string) {
	server = server.Canonical()
	names := c.Exposed(server, toolPrefix, tools)
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.servers[server]
	if len(names) == 0 {
		delete(c.servers, server)
	} else {
		c.servers[server] = names
	}
	for _, name := range old {
		if _, kept := slices.BinarySearch(names, name); !kept && c.withdraw(name, server) {
			changed = append(changed, name)
		}
	}
	for _, name := range names {
		if _, had := slices.BinarySearch(old, name); !had && c.offer(name, server) {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	return changed
}

// Remove forgets server's tools and returns the exposed names whose answer
// changed, sorted.
func (c *Catalogue) Remove(server events.Key) (changed []string) {
	return c.Set(server, "", nil)
}

// Has reports whether some running server offers the exposed name tool.
func (c *Catalogue) Has(tool string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.owners[tool]) > 0
}

// Lookup returns the server that offers the exposed name tool: of several,
// the one whose key sorts first.
func (c *Catalogue) Lookup(tool string) (server events.Key, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	owners := c.owners[tool]
	if len(owners) == 0 {
		return events.Key{}, false
	}
	return owners[0], true
}

// Tools returns every exposed name offered, sorted.
func (c *Catalogue) Tools() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	tools := make([]string, 0, len(c.owners))
	for name := range c.owners {
		tools = append(tools, name)
	}
	slices.Sort(tools)
	return tools
}

// offer adds server to name's owners and reports whether Lookup's answer
// for name changed.
func (c *Catalogue) offer(name string, server events.Key) bool {
	owners := c.owners[name]
	i, _ := slices.BinarySearchFunc(owners, server, compareKeys)
	c.owners[name] = slices.Insert(owners, i, server)
	return i == 0
}

// withdraw removes server from name's owners and reports whether Lookup's
// answer for name changed.
func (c *Catalogue) withdraw(name string, server events.Key) bool {
	owners := c.owners[name]
	i, found := slices.BinarySearchFunc(owners, server, compareKeys)
	if !found {
		return false
	}
	owners = slices.Delete(owners, i, i+1)
	if len(owners) == 0 {
		delete(c.owners, name)
	} else {
		c.owners[name] = owners
	}
	return i == 0
}

func compareKeys(a, b events.Key) int { return strings.Compare(a.String(), b.String()) }
