package catalogue_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

const (
	alice = "user:alice"
	bob   = "user:bob"
)

func tools(names ...string) []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(names))
	for _, n := range names {
		out = append(out, tool(n, "does "+n))
	}
	return out
}

func defNames(defs []*mcp.Tool) []string {
	out := []string{}
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// changes records what subscribers get.
type changes struct {
	mu  sync.Mutex
	got []catalogue.Change
}

func (r *changes) add(c catalogue.Change) { r.mu.Lock(); r.got = append(r.got, c); r.mu.Unlock() }

func (r *changes) take() []catalogue.Change {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

func TestEachOwnerSeesTheCatalogueAndItsOwnServersOnly(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	at := time.Unix(1000, 0)
	c.Update(server("echo"), catalogue.Naming{}, tools("echo"), at)

	assert.Equal(t, []string{"x_vault_read", "x_vault_write"},
		c.UpdateFor(alice, server("vault"), catalogue.Naming{}, tools("write", "read"), at))
	assert.Equal(t, []string{"x_jira_search"}, c.UpdateFor(bob, server("jira"), catalogue.Naming{}, tools("search"), at))
	assert.Empty(t, c.UpdateFor(bob, server("jira"), catalogue.Naming{}, tools("search"), at), "the same again: nothing changed")

	assert.Equal(t, []string{"x_echo_echo"}, c.Tools(), "the catalogue's own view has nobody's servers")
	assert.Equal(t, []string{"x_echo_echo"}, c.For("").Tools())
	assert.Equal(t, []string{"x_echo_echo"}, c.For("user:carol").Tools(), "an owner without servers sees the catalogue")
	assert.Equal(t, []string{"x_echo_echo", "x_vault_read", "x_vault_write"}, c.For(alice).Tools())
	assert.Equal(t, []string{"x_echo_echo", "x_jira_search"}, c.For(bob).Tools())
	assert.Equal(t, []string{"x_echo_echo", "x_vault_read", "x_vault_write"}, defNames(c.For(alice).Definitions()))
	assert.Equal(t, []string{"x_echo_echo", "x_jira_search"}, defNames(c.For(bob).Definitions()))
	assert.Equal(t, []string{alice, bob}, c.Owners())
	assert.Equal(t, []events.Key{server("vault")}, c.OwnerServers(alice))
	assert.True(t, c.For(alice).Personal())
	assert.False(t, c.For("user:carol").Personal())

	// Alice's tool is hers: found, routed and described in her view only.
	assert.True(t, c.For(alice).Has("x_vault_read"))
	got, ok := c.For(alice).Lookup("x_vault_read")
	assert.True(t, ok)
	assert.Equal(t, server("vault"), got)
	def, ok := c.For(alice).Tool("x_vault_read")
	require.True(t, ok)
	assert.Equal(t, "x_vault_read", def.Definition.Name)
	assert.Equal(t, "read", def.ServerTool)
	target, err := c.For(alice).Resolve("x_vault_read", map[string]any{"k": "v"})
	require.NoError(t, err)
	assert.Equal(t, catalogue.Target{Server: server("vault"), Tool: "read", Arguments: map[string]any{"k": "v"}}, target)
	own, ok := c.For(alice).ServerTools(server("vault"))
	assert.True(t, ok)
	assert.Len(t, own, 2)

	for _, v := range []catalogue.View{c.For(bob), c.For(""), c.For("user:carol")} {
		assert.False(t, v.Has("x_vault_read"), v.Owner())
		_, ok := v.Lookup("x_vault_read")
		assert.False(t, ok, v.Owner())
		_, ok = v.Tool("x_vault_read")
		assert.False(t, ok, v.Owner())
		_, err := v.Resolve("x_vault_read", nil)
		assert.True(t, errors.Is(err, catalogue.ErrUnknownTool), "%s: %v", v.Owner(), err)
		_, ok = v.ServerTools(server("vault"))
		assert.False(t, ok, v.Owner())
		_, ok = v.Gone("x_vault_read")
		assert.False(t, ok, v.Owner())
	}
	assert.False(t, c.Has("x_vault_read"))
	_, ok = c.Gone("x_vault_read")
	assert.False(t, ok, "an owner's server is not the catalogue's: never remembered as gone there")
}

// The view's definitions are the catalogue's and the owner's, merged by
// name, and the same slice until either changes.
func TestAnOwnersDefinitionsMergeByNameAndStayTheSameSlice(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	c.Update(server("a"), catalogue.Naming{}, tools("one"), time.Time{})
	c.Update(server("c"), catalogue.Naming{}, tools("three"), time.Time{})
	c.UpdateFor(alice, server("b"), catalogue.Naming{}, tools("two"), time.Time{})
	c.UpdateFor(alice, server("d"), catalogue.Naming{}, tools("four"), time.Time{})

	first := c.For(alice).Definitions()
	assert.Equal(t, []string{"x_a_one", "x_b_two", "x_c_three", "x_d_four"}, defNames(first))
	again := c.For(alice).Definitions()
	assert.Same(t, &first[0], &again[0], "nothing changed: the same slice")

	c.Update(server("e"), catalogue.Naming{}, tools("five"), time.Time{})
	assert.Equal(t, []string{"x_a_one", "x_b_two", "x_c_three", "x_d_four", "x_e_five"}, defNames(c.For(alice).Definitions()),
		"a change of the catalogue shows in the owner's view at once")
	c.RemoveFor(alice, server("b"))
	assert.Equal(t, []string{"x_a_one", "x_c_three", "x_d_four", "x_e_five"}, defNames(c.For(alice).Definitions()))
}

// A name an owner's server exposes that another server exposes too is a
// conflict in that owner's view only: held back there, said in Why and
// Conflicts, and the catalogue and other owners keep it.
func TestAnOwnersServerConflictingWithTheCataloguesIsHeldBackForThatOwnerOnly(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	var seen changes
	c.Subscribe(seen.add)
	a, b := server("a"), server("b")
	c.Update(a, catalogue.Naming{ToolPrefix: "p"}, tools("t", "only_a"), time.Time{})
	seen.take()

	assert.Equal(t, []string{"x_p_t", "x_p_u"}, c.UpdateFor(alice, b, catalogue.Naming{ToolPrefix: "p"}, tools("t", "u"), time.Time{}),
		"x_p_t changed in alice's view: a's until now, held back now")
	assert.Equal(t, []catalogue.Change{{Owner: alice, Server: b, Running: true, Tools: []string{"x_p_t", "x_p_u"}, Conflicts: []events.Key{a, b}}},
		seen.take())

	assert.Equal(t, []string{"x_p_only_a", "x_p_u"}, c.For(alice).Tools())
	assert.False(t, c.For(alice).Has("x_p_t"))
	_, err := c.For(alice).Resolve("x_p_t", nil)
	assert.True(t, errors.Is(err, catalogue.ErrUnknownTool), "held back, never shadowed")
	why, ok := c.For(alice).Why("x_p_t")
	assert.True(t, ok)
	assert.Equal(t, "held back: exposed by MCPServer default/a and MCPServer default/b at once, a conflict", why)
	assert.Len(t, c.For(alice).Conflicts(b), 1)
	assert.Contains(t, c.For(alice).Conflicts(b)[0], "tool x_p_t is also exposed by MCPServer default/a")
	assert.Len(t, c.For(alice).Conflicts(a), 1)

	for _, v := range []catalogue.View{c.For(""), c.For(bob)} {
		assert.Equal(t, []string{"x_p_only_a", "x_p_t"}, v.Tools(), v.Owner())
		got, ok := v.Lookup("x_p_t")
		assert.True(t, ok)
		assert.Equal(t, a, got)
		_, held := v.Why("x_p_t")
		assert.False(t, held)
		assert.Empty(t, v.Conflicts(a))
	}
	assert.Empty(t, c.Conflicts(a))

	assert.Equal(t, []string{"x_p_t", "x_p_u"}, c.RemoveFor(alice, b), "a's again in alice's view")
	assert.Equal(t, []catalogue.Change{{Owner: alice, Server: b, Tools: []string{"x_p_t", "x_p_u"}, Conflicts: []events.Key{a, b}}},
		seen.take())
	assert.Equal(t, []string{"x_p_only_a", "x_p_t"}, c.For(alice).Tools())
	assert.Empty(t, c.Owners(), "an owner with no servers left is forgotten")
}

// A server of the catalogue comes to conflict with an owner's: the
// catalogue offers it, the owner's view holds the name back.
func TestACatalogueServerStartingLaterConflictsInTheOwnersView(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	c.UpdateFor(alice, server("mine"), catalogue.Naming{ToolPrefix: "p"}, tools("t"), time.Time{})
	assert.Equal(t, []string{"x_p_t"}, c.For(alice).Tools())

	assert.Equal(t, []string{"x_p_t"}, c.Update(server("theirs"), catalogue.Naming{ToolPrefix: "p"}, tools("t"), time.Time{}))
	assert.Equal(t, []string{"x_p_t"}, c.Tools())
	assert.Empty(t, c.For(alice).Tools())
	why, _ := c.For(alice).Why("x_p_t")
	assert.Contains(t, why, "a conflict")

	c.Remove(server("theirs"))
	assert.Equal(t, []string{"x_p_t"}, c.For(alice).Tools())
	target, err := c.For(alice).Resolve("x_p_t", nil)
	require.NoError(t, err)
	assert.Equal(t, server("mine"), target.Server)
}

// A server the owner connects to that also runs in the catalogue is the
// owner's, for that owner.
func TestAnOwnersConnectionToARunningServerIsItsOwn(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	gh := server("github")
	c.Update(gh, catalogue.Naming{}, tools("public"), time.Time{})
	assert.Equal(t, []string{"x_github_private", "x_github_public"},
		c.UpdateFor(alice, gh, catalogue.Naming{}, []*mcp.Tool{tool("public", "as alice"), tool("private", "alice's")}, time.Time{}))

	assert.Equal(t, []string{"x_github_private", "x_github_public"}, c.For(alice).Tools())
	d, ok := c.For(alice).Tool("x_github_public")
	require.True(t, ok)
	assert.Equal(t, "as alice", d.Definition.Description, "her connection's definition, not the catalogue's")
	assert.Empty(t, c.For(alice).Conflicts(gh), "one server: no conflict with itself")
	own, _ := c.For(alice).ServerTools(gh)
	assert.Len(t, own, 2)

	assert.Equal(t, []string{"x_github_public"}, c.For(bob).Tools())
	d, _ = c.For(bob).Tool("x_github_public")
	assert.Equal(t, "does public", d.Definition.Description)

	// The catalogue's instance goes: alice keeps hers.
	c.Remove(gh)
	assert.Equal(t, []string{"x_github_private", "x_github_public"}, c.For(alice).Tools())
	assert.Empty(t, c.For(bob).Tools())
}

// An owner's server joins its family with the catalogue's members, and
// never with another owner's.
func TestAnOwnersFamilyMemberJoinsTheCataloguesMembersInItsViewOnly(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	k8s := catalogue.Naming{Family: "k8s", InstanceArg: "cluster"}
	c.Update(server("prod"), k8s, tools("get"), time.Time{})
	c.UpdateFor(alice, server("dev"), k8s, tools("get"), time.Time{})
	c.UpdateFor(bob, server("lab"), k8s, tools("get"), time.Time{})

	instances := func(v catalogue.View) []string {
		got, ok := v.Tool("x_k8s_get")
		require.True(t, ok, v.Owner())
		return got.Instances
	}
	assert.Equal(t, []string{"prod"}, instances(c.For("")))
	assert.Equal(t, []string{"dev", "prod"}, instances(c.For(alice)))
	assert.Equal(t, []string{"lab", "prod"}, instances(c.For(bob)))
	d, _ := c.For(alice).Tool("x_k8s_get")
	assert.Contains(t, d.Definition.Description, "(available on servers: dev, prod)")

	target, err := c.For(alice).Resolve("x_k8s_get", map[string]any{"cluster": "dev", "name": "x"})
	require.NoError(t, err)
	assert.Equal(t, catalogue.Target{Server: server("dev"), Tool: "get", Arguments: map[string]any{"name": "x"}}, target)
	target, err = c.For(alice).Resolve("x_k8s_get", map[string]any{"cluster": "prod"})
	require.NoError(t, err)
	assert.Equal(t, server("prod"), target.Server)
	_, err = c.For(alice).Resolve("x_k8s_get", map[string]any{"cluster": "lab"})
	assert.EqualError(t, err, `tool x_k8s_get is not available on server "lab" (available: dev, prod)`, "bob's member is not hers")
	_, err = c.Resolve("x_k8s_get", map[string]any{"cluster": "dev"})
	assert.EqualError(t, err, `tool x_k8s_get is not available on server "dev" (available: prod)`)

	// The catalogue's member goes: each owner keeps its own.
	c.Remove(server("prod"))
	assert.Equal(t, []string{"dev"}, instances(c.For(alice)))
	assert.Empty(t, c.Tools())
}

func TestForgetOwnerForgetsEveryServerOfTheOwner(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	var seen changes
	c.Subscribe(seen.add)
	c.Update(server("echo"), catalogue.Naming{}, tools("echo"), time.Time{})
	c.UpdateFor(alice, server("a"), catalogue.Naming{}, tools("t"), time.Time{})
	c.UpdateFor(alice, server("b"), catalogue.Naming{}, tools("t"), time.Time{})
	c.UpdateFor(bob, server("a"), catalogue.Naming{}, tools("t"), time.Time{})
	seen.take()

	assert.Equal(t, []string{"x_a_t", "x_b_t"}, c.ForgetOwner(alice))
	assert.Equal(t, []catalogue.Change{
		{Owner: alice, Server: server("a"), Tools: []string{"x_a_t"}},
		{Owner: alice, Server: server("b"), Tools: []string{"x_b_t"}},
	}, seen.take(), "one change per server, each naming the owner")
	assert.Equal(t, []string{"x_echo_echo"}, c.For(alice).Tools())
	assert.Equal(t, []string{"x_a_t", "x_echo_echo"}, c.For(bob).Tools(), "bob's own stay")
	assert.Equal(t, []string{bob}, c.Owners())
	assert.Empty(t, c.ForgetOwner(alice), "twice: nothing")
	assert.Empty(t, c.ForgetOwner(""), "the catalogue is nobody's to forget")
	assert.Equal(t, []string{"x_echo_echo"}, c.Tools())
}

// Every change says whose view it is: "" for the catalogue's, else the
// owner's; an owner's change leaves the catalogue's answers as they were.
func TestChangesCarryTheirOwner(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	var seen changes
	c.Subscribe(seen.add)
	c.Update(server("echo"), catalogue.Naming{}, tools("echo"), time.Time{})
	assert.Equal(t, []catalogue.Change{{Server: server("echo"), Running: true, Tools: []string{"x_echo_echo"}}}, seen.take())

	c.UpdateFor(alice, server("vault"), catalogue.Naming{}, tools("read"), time.Unix(5, 0))
	assert.Equal(t, []catalogue.Change{{Owner: alice, Server: server("vault"), Running: true, Tools: []string{"x_vault_read"}}}, seen.take())
	c.UpdateFor(alice, server("vault"), catalogue.Naming{}, tools("read"), time.Unix(6, 0))
	assert.Equal(t, []catalogue.Change{{Owner: alice, Server: server("vault"), Running: true}}, seen.take(),
		"listed again: a change of the server alone")

	// A policy of a server only alice connects to changes her view alone.
	p := mustExposure(t, "prefix: v")
	c.SetExposure(server("vault"), p)
	assert.Equal(t, []catalogue.Change{
		{Server: server("vault"), Exposure: true},
		{Owner: alice, Server: server("vault"), Running: true, Tools: []string{"v_read", "x_vault_read"}},
	}, seen.take())
	assert.Equal(t, []string{"v_read", "x_echo_echo"}, c.For(alice).Tools())
	why, ok := c.For(alice).Why("x_vault_read")
	assert.True(t, ok)
	assert.Contains(t, why, "exposes it as v_read")
	target, err := c.For(alice).Resolve("v_read", nil)
	require.NoError(t, err)
	assert.Equal(t, "read", target.Tool)
	assert.Equal(t, []string{"x_echo_echo"}, c.Tools())
}

func TestOwnerEmptyIsTheCatalogue(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	assert.Equal(t, []string{"x_a_t"}, c.UpdateFor("", server("a"), catalogue.Naming{}, tools("t"), time.Time{}))
	assert.Equal(t, []string{"x_a_t"}, c.Tools())
	assert.Empty(t, c.Owners())
	assert.Equal(t, []string{"x_a_t"}, c.RemoveFor("", server("a")))
	assert.Empty(t, c.Tools())
}

func TestOwnersConcurrentUse(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	var wg sync.WaitGroup
	for i := range 4 {
		owner := fmt.Sprintf("user:%d", i)
		wg.Go(func() {
			for j := range 50 {
				c.UpdateFor(owner, server(fmt.Sprintf("s%d", j%3)), catalogue.Naming{}, tools(fmt.Sprintf("t%d", j)), time.Time{})
				c.Update(server("g"), catalogue.Naming{}, tools(fmt.Sprintf("g%d", j)), time.Time{})
				v := c.For(owner)
				_ = v.Tools()
				_ = v.Definitions()
				_, _ = v.Resolve("x_s0_t0", nil)
			}
			c.ForgetOwner(owner)
		})
	}
	wg.Wait()
	assert.Empty(t, c.Owners())
}

// The catalogue's own answers and changes are the same whether or not
// owners have servers of their own, whatever those are: the same steps on
// a catalogue without owners and on one with them give the same.
func TestOwnersLeaveTheCataloguesOwnAnswersAsTheyAre(t *testing.T) {
	plain, owned := catalogue.New(catalogue.Options{}), catalogue.New(catalogue.Options{})
	var plainSeen, ownedSeen changes
	plain.Subscribe(plainSeen.add)
	owned.Subscribe(func(c catalogue.Change) {
		if c.Owner == "" {
			ownedSeen.add(c)
		}
	})
	k8s := catalogue.Naming{Family: "k8s", InstanceArg: "cluster"}
	owned.UpdateFor(alice, server("a"), catalogue.Naming{ToolPrefix: "p"}, tools("t", "own"), time.Time{})
	// Alice's member describes get otherwise: in her view, get falls
	// back to each member's own name.
	owned.UpdateFor(alice, server("dev"), k8s, []*mcp.Tool{tool("get", "gets, as dev"), tool("logs", "does logs")}, time.Time{})
	owned.UpdateFor(bob, server("prod"), k8s, tools("get"), time.Time{})
	owned.UpdateFor(bob, server("b"), catalogue.Naming{}, tools("t"), time.Time{})

	steps := []func(c *catalogue.Catalogue) []string{
		func(c *catalogue.Catalogue) []string {
			return c.Update(server("a"), catalogue.Naming{ToolPrefix: "p"}, tools("t"), time.Time{})
		},
		func(c *catalogue.Catalogue) []string {
			return c.Update(server("b"), catalogue.Naming{ToolPrefix: "p"}, tools("t", "u"), time.Time{})
		},
		func(c *catalogue.Catalogue) []string { return c.Update(server("prod"), k8s, tools("get"), time.Time{}) },
		func(c *catalogue.Catalogue) []string {
			return c.Update(server("stage"), k8s, tools("get", "logs"), time.Time{})
		},
		func(c *catalogue.Catalogue) []string {
			return c.SetExposure(server("b"), mustExposure(t, "prefix: bee"))
		},
		func(c *catalogue.Catalogue) []string {
			return c.SetExposure(server("dev"), mustExposure(t, "prefix: d"))
		},
		func(c *catalogue.Catalogue) []string { return c.Remove(server("prod")) },
		func(c *catalogue.Catalogue) []string { return c.Remove(server("a")) },
	}
	for i, step := range steps {
		assert.Equal(t, step(plain), step(owned), "step %d", i)
		for _, owner := range []string{alice, bob} {
			_ = owned.For(owner).Tools() // each view made again at every step
		}
		assert.Equal(t, plainSeen.take(), ownedSeen.take(), "step %d", i)
		assert.Equal(t, plain.Tools(), owned.Tools(), "step %d", i)
		assert.Equal(t, defNames(plain.Definitions()), defNames(owned.Definitions()), "step %d", i)
		for _, name := range plain.Tools() {
			p, _ := plain.Tool(name)
			o, _ := owned.Tool(name)
			assert.Equal(t, p, o, "step %d: %s", i, name)
		}
		for _, k := range []events.Key{server("a"), server("b"), server("dev"), server("prod"), server("stage")} {
			assert.Equal(t, plain.Conflicts(k), owned.Conflicts(k), "step %d: %s", i, k)
		}
		_, gonePlain := plain.Gone("x_p_t")
		_, goneOwned := owned.Gone("x_p_t")
		assert.Equal(t, gonePlain, goneOwned, "step %d", i)
	}
	assert.Equal(t, plain.Servers(), owned.Servers())
}
