package catalogue_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

func server(name string) events.Key { return events.NewKey("MCPServer", "", name) }

func TestExposedNamesFollowMustersRule(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	assert.Equal(t, "x", c.Prefix())
	assert.Equal(t, []string{"x_ec_echo"}, c.Exposed(server("echo"), "ec", []string{"echo"}))
	assert.Equal(t, []string{"x_git_log", "x_git_status"}, c.Exposed(server("git"), "", []string{"status", "log", "status"}),
		"no toolPrefix: the server's name; sorted, without repeats")

	custom := catalogue.New(catalogue.Options{Prefix: "m"})
	assert.Equal(t, []string{"m_ec_echo"}, custom.Exposed(server("echo"), "ec", []string{"echo"}))
	assert.Empty(t, custom.Tools(), "naming changes nothing")
}

func TestSetAndRemoveReportExactlyWhatChanged(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	echo := server("echo")

	assert.Equal(t, []string{"x_echo_echo", "x_echo_reverse"}, c.Set(echo, "", []string{"reverse", "echo"}))
	assert.Empty(t, c.Set(echo, "", []string{"echo", "reverse"}), "the same tools again: nothing changed")
	assert.Equal(t, []string{"x_echo_late", "x_echo_reverse"}, c.Set(echo, "", []string{"echo", "late"}),
		"one tool added, one gone")
	assert.Equal(t, []string{"x_ec_echo", "x_ec_late", "x_echo_echo", "x_echo_late"}, c.Set(echo, "ec", []string{"echo", "late"}),
		"a new toolPrefix renames every tool")
	assert.Equal(t, []string{"x_ec_echo", "x_ec_late"}, c.Tools())

	got, ok := c.Lookup("x_ec_echo")
	assert.True(t, ok)
	assert.Equal(t, echo, got)
	assert.True(t, c.Has("x_ec_late"))
	assert.False(t, c.Has("x_echo_echo"))
	_, ok = c.Lookup("x_echo_echo")
	assert.False(t, ok)

	assert.Equal(t, []string{"x_ec_echo", "x_ec_late"}, c.Remove(echo))
	assert.Empty(t, c.Remove(echo), "removing twice changes nothing")
	assert.Empty(t, c.Tools())
	assert.False(t, c.Has("x_ec_echo"))
}

// A name two servers expose is a conflict: neither is offered it, each
// says why, whatever the order they came in, until one no longer
// exposes it.
func TestANameTwoServersExposeIsAConflictOnBothUntilOneIsGone(t *testing.T) {
	a, b := server("a"), server("b")
	for _, order := range [][]events.Key{{a, b}, {b, a}} {
		c := catalogue.New(catalogue.Options{})
		var conflicted [][]events.Key
		c.Subscribe(func(ch catalogue.Change) {
			if len(ch.Conflicts) > 0 {
				conflicted = append(conflicted, ch.Conflicts)
			}
		})
		assert.Equal(t, []string{"x_shared_t"}, c.Set(order[0], "shared", []string{"t"}))
		assert.Equal(t, []string{"x_shared_t"}, c.Set(order[1], "shared", []string{"t"}), "the name is held back")
		assert.False(t, c.Has("x_shared_t"), "order %v", order)
		_, ok := c.Lookup("x_shared_t")
		assert.False(t, ok)
		assert.Empty(t, c.Tools())
		assert.Empty(t, c.Definitions())
		_, err := c.Resolve("x_shared_t", nil)
		assert.ErrorIs(t, err, catalogue.ErrUnknownTool)
		for _, k := range []events.Key{a, b} {
			require.Len(t, c.Conflicts(k), 1)
			assert.Contains(t, c.Conflicts(k)[0], "tool x_shared_t is also exposed by MCPServer default/")
		}
		why, ok := c.Why("x_shared_t")
		assert.True(t, ok)
		assert.Contains(t, why, "held back")
		assert.Equal(t, [][]events.Key{{a, b}}, conflicted, "both servers' conflicts changed")

		assert.Equal(t, []string{"x_shared_t"}, c.Remove(a), "the conflict is over: b's tool is offered")
		got, ok := c.Lookup("x_shared_t")
		assert.True(t, ok)
		assert.Equal(t, b, got)
		assert.Empty(t, c.Conflicts(b))
		assert.Equal(t, [][]events.Key{{a, b}, {a, b}}, conflicted)
		assert.Equal(t, []string{"x_shared_t"}, c.Remove(b))
		assert.False(t, c.Has("x_shared_t"))
	}
}

func TestKeysAreCanonical(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	c.Set(events.Key{Kind: "MCPServer", Name: "echo"}, "", []string{"echo"})
	got, _ := c.Lookup("x_echo_echo")
	assert.Equal(t, server("echo"), got)
	assert.Equal(t, []string{"x_echo_echo"}, c.Remove(server("echo")), "\"\" and \"default\" name one namespace")
}

func TestConcurrentUse(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			s := server(fmt.Sprint("s", i))
			for range 200 {
				c.Set(s, "", []string{"a", "b"})
				c.Has("x_s0_a")
				c.Tools()
				c.Remove(s)
			}
			c.Set(s, "", []string{"a"})
		})
	}
	wg.Wait()
	require.Len(t, c.Tools(), 8)
	for i := range 8 {
		got, ok := c.Lookup(fmt.Sprintf("x_s%d_a", i))
		assert.True(t, ok)
		assert.Equal(t, server(fmt.Sprint("s", i)), got)
	}
}

func TestStartingServersAreFoundByTheirNamePrefix(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	assert.Equal(t, "x_git_", c.SetStarting(server("git"), catalogue.Naming{}, true), "began")
	assert.Empty(t, c.SetStarting(server("git"), catalogue.Naming{}, true), "no change")
	assert.Equal(t, "x_kube_", c.SetStarting(server("k8s"), catalogue.Naming{ToolPrefix: "kube"}, true))
	got, ok := c.StartingFor("x_git_status")
	assert.True(t, ok)
	assert.Equal(t, server("git"), got)
	got, ok = c.StartingFor("x_kube_get")
	assert.True(t, ok)
	assert.Equal(t, server("k8s"), got)
	assert.Equal(t, "x_tools_", c.SetStarting(server("one"), catalogue.Naming{ToolPrefix: "ignored", Family: "tools"}, true), "a family's name")
	_, ok = c.StartingFor("x_gitlab_status")
	assert.False(t, ok, "a prefix ends at its underscore")
	assert.Equal(t, "x_git_", c.SetStarting(server("git"), catalogue.Naming{}, false), "ended")
	assert.Empty(t, c.SetStarting(server("git"), catalogue.Naming{}, false))
	_, ok = c.StartingFor("x_git_status")
	assert.False(t, ok)
}
