package router_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/identity"
	"github.com/musterd/musterd/pkg/router"
)

func as(ctx context.Context, user string) context.Context {
	return identity.With(ctx, identity.Identity{Subject: user})
}

// ownerOf is the owner of user's calls (as), whatever the form of owners.
func ownerOf(user string) string { return identity.Identity{Subject: user}.Owner() }

func namesOf(tools []*mcp.Tool) []string {
	out := []string{}
	for _, t := range tools {
		out = append(out, t.Name)
	}
	return out
}

// Each caller lists and calls the catalogue's tools and those of its
// owner's own connections; another owner's tool is unknown to it, with
// the error of any unknown tool.
func TestEachCallerListsAndCallsInItsOwnersView(t *testing.T) {
	f := &fakeServers{result: &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}}
	r, cat, _ := newUnit(t, f, nil)
	cat.Update(key("echo"), catalogue.Naming{}, defs("echo"), time.Time{})
	cat.UpdateFor(ownerOf("alice"), key("vault"), catalogue.Naming{}, defs("read"), time.Time{})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")

	// A call before any listing finds alice's tool all the same.
	res, err := r.CallTool(alice, "x_vault_read", map[string]any{"k": "v"}, nil)
	require.NoError(t, err)
	assert.Same(t, f.result, res)
	assert.Equal(t, []string{`vault read {"k":"v"}`}, f.calls)

	assert.Equal(t, []string{"x_echo_echo", "x_vault_read"}, namesOf(r.ToolsFor(alice)))
	assert.Equal(t, []string{"x_echo_echo"}, namesOf(r.ToolsFor(bob)))
	assert.Equal(t, []string{"x_echo_echo"}, namesOf(r.ToolsFor(t.Context())), "no identity: the catalogue's own view")
	assert.Equal(t, []string{"x_echo_echo"}, namesOf(r.Tools()))
	assert.True(t, r.Personal(alice))
	assert.False(t, r.Personal(bob))
	global := r.Tools()
	assert.Same(t, &global[0], &r.ToolsFor(bob)[0], "an owner without servers of its own shares the catalogue's set")

	_, unknownErr := r.CallTool(bob, "x_nothing", nil, nil)
	for _, ctx := range []context.Context{bob, t.Context()} {
		_, err := r.CallTool(ctx, "x_vault_read", nil, nil)
		require.Error(t, err)
		assert.True(t, errors.Is(err, router.ErrUnknownTool), "%v", err)
		assert.Equal(t, unknownErr.Error(), `unknown tool "x_nothing": tool not found: no core tool, running server or workflow offers it`)
		assert.Equal(t, `unknown tool "x_vault_read": tool not found: no core tool, running server or workflow offers it`, err.Error(),
			"the same error as any unknown tool: nothing tells alice's tool exists")
	}
	assert.False(t, r.Claims("x_vault_read"))
	assert.Len(t, f.calls, 1, "bob's calls reach no server")

	res, err = r.CallTool(bob, "x_echo_echo", nil, nil)
	require.NoError(t, err)
	assert.Same(t, f.result, res, "the catalogue's tools are everyone's")

	// Alice's tools change: her listing follows.
	cat.UpdateFor(ownerOf("alice"), key("vault"), catalogue.Naming{}, defs("read", "write"), time.Time{})
	assert.Equal(t, []string{"x_echo_echo", "x_vault_read", "x_vault_write"}, namesOf(r.ToolsFor(alice)))
	_, err = r.CallTool(alice, "x_vault_write", nil, nil)
	require.NoError(t, err)

	// Her connections end: her view is the catalogue's again.
	cat.ForgetOwner(ownerOf("alice"))
	assert.False(t, r.Personal(alice))
	assert.Equal(t, []string{"x_echo_echo"}, namesOf(r.ToolsFor(alice)))
	_, err = r.CallTool(alice, "x_vault_read", nil, nil)
	assert.True(t, errors.Is(err, router.ErrUnknownTool), "%v", err)
}

// A name alice's connection exposes that a running server exposes too is
// held back for her alone: unknown to her, the running server's for
// everyone else.
func TestANameInConflictForOneOwnerIsUnknownToItOnly(t *testing.T) {
	f := &fakeServers{result: &mcp.CallToolResult{}}
	r, cat, _ := newUnit(t, f, nil)
	cat.Update(key("a"), catalogue.Naming{ToolPrefix: "p"}, defs("t"), time.Time{})
	cat.UpdateFor(ownerOf("alice"), key("b"), catalogue.Naming{ToolPrefix: "p"}, defs("t", "u"), time.Time{})
	alice, bob := as(t.Context(), "alice"), as(t.Context(), "bob")

	assert.Equal(t, []string{"x_p_u"}, namesOf(r.ToolsFor(alice)))
	assert.Equal(t, []string{"x_p_t"}, namesOf(r.ToolsFor(bob)))
	_, err := r.CallTool(alice, "x_p_t", nil, nil)
	assert.True(t, errors.Is(err, router.ErrUnknownTool), "%v", err)
	_, err = r.CallTool(bob, "x_p_t", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a t {}"}, f.calls)
}

// A change of one owner's view is told to OnOwnerChange's watchers with
// that owner, never to OnChange's; a change of the catalogue goes to
// OnChange's alone.
func TestOwnerChangesAreToldForThatOwnerAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, cat, _ := newUnit(t, &fakeServers{}, nil)
		var (
			mu     sync.Mutex
			global int
			owners []string
			seen   [][]string
		)
		r.OnChange(func() { mu.Lock(); global++; mu.Unlock() })
		cancel := r.OnOwnerChange(func(owner string) {
			user := map[string]string{ownerOf("alice"): "alice", ownerOf("bob"): "bob"}[owner]
			tools := namesOf(r.ToolsFor(as(context.Background(), user)))
			mu.Lock()
			owners = append(owners, owner)
			seen = append(seen, tools)
			mu.Unlock()
		})
		state := func() (int, []string, [][]string) {
			mu.Lock()
			defer mu.Unlock()
			return global, slices.Clone(owners), slices.Clone(seen)
		}

		cat.UpdateFor(ownerOf("alice"), key("vault"), catalogue.Naming{}, defs("read"), time.Time{})
		synctest.Wait()
		g, o, s := state()
		assert.Equal(t, 0, g, "nobody else is told")
		assert.Equal(t, []string{ownerOf("alice")}, o)
		assert.Equal(t, [][]string{{"x_vault_read"}}, s, "told with the change in ToolsFor")

		cat.UpdateFor(ownerOf("alice"), key("vault"), catalogue.Naming{}, defs("read"), time.Unix(9, 0))
		synctest.Wait()
		_, o, _ = state()
		assert.Len(t, o, 1, "listed again, the same tools: nothing to tell")

		cat.Update(key("echo"), catalogue.Naming{}, defs("echo"), time.Time{})
		synctest.Wait()
		g, o, _ = state()
		assert.Equal(t, 1, g, "the catalogue's change goes to OnChange")
		assert.Len(t, o, 1, "and not to the owners' watchers")

		cat.UpdateFor(ownerOf("bob"), key("jira"), catalogue.Naming{}, defs("search"), time.Time{})
		cat.ForgetOwner(ownerOf("alice"))
		synctest.Wait()
		g, o, s = state()
		assert.Equal(t, 1, g)
		require.Len(t, o, 3, "one call each: alice's and bob's views changed")
		assert.ElementsMatch(t, []string{ownerOf("alice"), ownerOf("bob")}, o[1:])
		assert.Contains(t, s, []string{"x_echo_echo", "x_jira_search"})
		assert.Contains(t, s, []string{"x_echo_echo"}, "alice's view after her servers went")

		cancel()
		cat.UpdateFor(ownerOf("alice"), key("vault"), catalogue.Naming{}, defs("read"), time.Time{})
		synctest.Wait()
		_, o, _ = state()
		assert.Len(t, o, 3, "no calls after cancel")
	})
}
