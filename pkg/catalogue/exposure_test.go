package catalogue_test

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

func mustExposure(t *testing.T, value string) *catalogue.Exposure {
	t.Helper()
	p, err := catalogue.ParseExposure(value)
	require.NoError(t, err)
	return p
}

func TestParseExposureReadsEveryPart(t *testing.T) {
	p := mustExposure(t, `
prefix: ""
tools:
  include: [get-sum, "echo*"]
  exclude: ["*-long*"]
  overrides:
    get-sum:
      name: add
      description: Adds two numbers.
      annotations: {destructiveHint: true, readOnlyHint: false, title: Add}
prompts: {exclude: [complex-prompt]}
resources: {include: ["test://static/resource/[12]"]}
`)
	require.NotNil(t, p.Prefix)
	assert.Equal(t, "", *p.Prefix, "an empty prefix: none")
	assert.True(t, p.KeepsTool("get-sum"))
	assert.True(t, p.KeepsTool("echo"))
	assert.True(t, p.KeepsTool("echo-twice"))
	assert.False(t, p.KeepsTool("echo-long-thing"), "excluded")
	assert.False(t, p.KeepsTool("add"), "not included")
	assert.Equal(t, "add", p.Overrides["get-sum"].Name)
	assert.Equal(t, "Adds two numbers.", *p.Overrides["get-sum"].Description)
	assert.True(t, *p.Overrides["get-sum"].Annotations.DestructiveHint)
	assert.False(t, p.KeepsPrompt("complex-prompt"))
	assert.True(t, p.KeepsPrompt("simple-prompt"))
	assert.True(t, p.KeepsResource("test://static/resource/1"), "* and classes cross nothing but match whole URIs")
	assert.False(t, p.KeepsResource("test://static/resource/3"))

	none, err := catalogue.ParseExposure("  \n")
	assert.NoError(t, err)
	assert.Nil(t, none, "an empty annotation is no policy")
	assert.True(t, none.KeepsTool("anything"))

	muster := mustExposure(t, "tools: {exclude: [a]}")
	assert.Nil(t, muster.Prefix, "no prefix field: muster's rule")
}

// Each bad policy is an error naming the field that is wrong.
func TestParseExposureNamesTheFieldOfEachError(t *testing.T) {
	for value, want := range map[string]string{
		`tools: {include: ["[a"]}`:                                        `tools.include[0]: pattern "[a": unterminated character class at offset 0`,
		`tools: {include: [ok, "x]"]}`:                                    `tools.include[1]: pattern "x]": unmatched ']'`,
		`prompts: {exclude: [""]}`:                                        `prompts.exclude[0]: empty pattern`,
		`tools: {overrides: {a: {name: "has space"}}}`:                    `tools.overrides.a.name: "has space" is not a valid MCP tool name`,
		`tools: {overrides: {a: {name: b}, c: {name: b}}}`:                `tools.overrides.c.name: "b" is also the new name of tool a`,
		`tools: {overrides: {a: {annotations: {destructive: true}}}}`:     `tools.overrides.a.annotations.destructive: unknown field`,
		`tools: {overrides: {a: {annotations: {readOnlyHint: yes-ish}}}}`: `tools.overrides.a.annotations.readOnlyHint: must be true or false`,
		`tools: {inclde: [a]}`:                                            `tools.inclde: unknown field (known: include, exclude, overrides)`,
		`tools: {include: a}`:                                             `tools.include: must be a list`,
		`prefix: "a b"`:                                                   `prefix: "a b" is not a valid MCP tool name`,
		`- a`:                                                             `must be a mapping`,
		`tools: [`:                                                        `not YAML`,
		`prefixes: x`:                                                     `prefixes: unknown field`,
	} {
		_, err := catalogue.ParseExposure(value)
		require.Error(t, err, value)
		assert.Contains(t, err.Error(), want, value)
		var pe *catalogue.ExposureError
		assert.ErrorAs(t, err, &pe, value)
	}
}

func TestCheckRefusesARenameOntoAnotherToolsName(t *testing.T) {
	p := mustExposure(t, `tools: {overrides: {echo: {name: reverse}}}`)
	err := p.Check([]string{"echo", "reverse"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `tools.overrides.echo.name: "reverse" is the name of the server's tool reverse`)
	assert.NoError(t, p.Check([]string{"echo", "other"}))
	hidden := mustExposure(t, `tools: {exclude: [reverse], overrides: {echo: {name: reverse}}}`)
	assert.NoError(t, hidden.Check([]string{"echo", "reverse"}), "the tool renamed onto is not exposed")
	assert.NoError(t, (*catalogue.Exposure)(nil).Check([]string{"a"}))
}

func TestValidToolName(t *testing.T) {
	assert.NoError(t, catalogue.ValidToolName("get-sum.v2_x"))
	assert.Error(t, catalogue.ValidToolName(""))
	assert.Error(t, catalogue.ValidToolName("a/b"))
	assert.Error(t, catalogue.ValidToolName(string(make([]byte, 129))))
}

func everythingTools() []*mcp.Tool {
	return []*mcp.Tool{
		{Name: "echo", Description: "Echoes"},
		{Name: "get-sum", Description: "Sums", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "long-op", Description: "Long"},
	}
}

// A policy names, describes and filters a running server's tools at once,
// without its being listed again, and the per-server view keeps the
// server's own names.
func TestSetExposureFiltersRenamesAndDescribes(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	ev := server("everything")
	var changes []catalogue.Change
	c.Subscribe(func(ch catalogue.Change) { changes = append(changes, ch) })
	c.Update(ev, catalogue.Naming{}, everythingTools(), time.Time{})
	assert.Equal(t, []string{"x_everything_echo", "x_everything_get-sum", "x_everything_long-op"}, c.Tools())

	changed := c.SetExposure(ev, mustExposure(t, `
tools:
  include: [echo, get-sum]
  overrides:
    get-sum: {name: add, description: Adds two numbers., annotations: {destructiveHint: true}}
`))
	assert.Equal(t, []string{"x_everything_add", "x_everything_get-sum", "x_everything_long-op"}, changed)
	assert.Equal(t, []string{"x_everything_add", "x_everything_echo"}, c.Tools())
	require.NotEmpty(t, changes)
	assert.True(t, changes[len(changes)-1].Exposure)

	add, ok := c.Tool("x_everything_add")
	require.True(t, ok)
	assert.Equal(t, "get-sum", add.ServerTool, "a call of the new name reaches the server's own")
	assert.Equal(t, "x_everything_add", add.Definition.Name)
	assert.Equal(t, "Adds two numbers.", add.Definition.Description)
	require.NotNil(t, add.Definition.Annotations.DestructiveHint)
	assert.True(t, *add.Definition.Annotations.DestructiveHint)
	assert.True(t, add.Definition.Annotations.ReadOnlyHint, "annotations not overridden are the server's")
	target, err := c.Resolve("x_everything_add", map[string]any{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, "get-sum", target.Tool)
	_, err = c.Resolve("x_everything_get-sum", nil)
	assert.ErrorIs(t, err, catalogue.ErrUnknownTool, "the old name is gone")

	own, ok := c.ServerTools(ev)
	require.True(t, ok)
	var names []string
	for _, t := range own {
		names = append(names, t.Name)
	}
	assert.Equal(t, []string{"echo", "get-sum"}, names, "the server's view: filtered, never renamed")
	assert.Equal(t, "Sums", own[1].Description, "and its own definitions")

	exposed, offered, ok := c.Offer(ev)
	assert.True(t, ok)
	assert.Equal(t, 3, offered)
	assert.Equal(t, []string{"x_everything_add", "x_everything_echo"}, exposed)

	why, ok := c.Why("x_everything_long-op")
	assert.True(t, ok)
	assert.Equal(t, `MCPServer default/everything's exposure policy (metadata.annotations[musterd.io/exposure]) leaves it out: tools.include (no pattern matches)`, why)
	why, ok = c.Why("x_everything_get-sum")
	assert.True(t, ok)
	assert.Contains(t, why, "exposes it as x_everything_add")
	_, ok = c.Why("x_everything_echo")
	assert.False(t, ok, "offered: nothing to explain")

	n := len(changes)
	assert.Empty(t, c.SetExposure(ev, mustExposure(t, `
tools:
  include: [echo, get-sum]
  overrides:
    get-sum: {name: add, description: Adds two numbers., annotations: {destructiveHint: true}}
`)), "the same policy again, as every reconcile sets it")
	assert.Len(t, changes, n, "and no subscriber hears of it")

	assert.Equal(t, []string{"x_everything_add", "x_everything_get-sum", "x_everything_long-op"}, c.SetExposure(ev, nil),
		"the policy lifted: everything is back under muster's names")
	assert.Equal(t, []string{"x_everything_echo", "x_everything_get-sum", "x_everything_long-op"}, c.Tools())
}

func TestThePrefixOfAPolicy(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	ev := server("everything")
	c.SetExposure(ev, mustExposure(t, `prefix: ""`))
	assert.Empty(t, c.Tools(), "a policy of a server not running changes no tool")
	c.Update(ev, catalogue.Naming{ToolPrefix: "ev"}, everythingTools(), time.Time{})
	assert.Equal(t, []string{"echo", "get-sum", "long-op"}, c.Tools(), "bare names: the policy set before the start applies")
	assert.Equal(t, "", c.NamePrefix(ev, catalogue.Naming{ToolPrefix: "ev"}))
	c.SetExposure(ev, mustExposure(t, `prefix: my`))
	assert.Equal(t, []string{"my_echo", "my_get-sum", "my_long-op"}, c.Tools())
	assert.Equal(t, "my_", c.NamePrefix(ev, catalogue.Naming{ToolPrefix: "ev"}))
	assert.Equal(t, []string{"my_echo"}, c.ExposedNames(ev, catalogue.Naming{}, []string{"echo"}))
	c.SetExposure(ev, nil)
	assert.Equal(t, []string{"x_ev_echo", "x_ev_get-sum", "x_ev_long-op"}, c.Tools(), "muster's rule again")
}

func TestNoGlobalPrefix(t *testing.T) {
	c := catalogue.New(catalogue.Options{Prefix: "x", NoPrefix: true})
	assert.Equal(t, "", c.Prefix())
	c.Update(server("git"), catalogue.Naming{}, []*mcp.Tool{{Name: "status"}, {Name: "git_log"}}, time.Time{})
	assert.Equal(t, []string{"git_log", "git_status"}, c.Tools(), "no x_, muster's rule otherwise")
	assert.Equal(t, "git_", c.NamePrefix(server("git"), catalogue.Naming{}))
}

// Bare names make a conflict of two servers offering one tool name: both
// are held back, until one is renamed apart.
func TestBareNamesOfTwoServersConflictUntilRenamedApart(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	ev, fake := server("everything"), server("fake")
	c.Update(ev, catalogue.Naming{}, everythingTools(), time.Time{})
	c.Update(fake, catalogue.Naming{}, []*mcp.Tool{{Name: "echo"}, {Name: "reverse"}}, time.Time{})
	var conflicted []events.Key
	c.Subscribe(func(ch catalogue.Change) { conflicted = append(conflicted, ch.Conflicts...) })
	c.SetExposure(ev, mustExposure(t, `prefix: ""`))
	c.SetExposure(fake, mustExposure(t, `prefix: ""`))
	assert.Equal(t, []string{"get-sum", "long-op", "reverse"}, c.Tools(), "echo is held back on both")
	assert.Equal(t, []events.Key{ev, fake}, conflicted)
	assert.Len(t, c.Conflicts(ev), 1)
	assert.Contains(t, c.Conflicts(fake)[0], "tool echo is also exposed by MCPServer default/everything")
	exposed, offered, _ := c.Offer(fake)
	assert.Equal(t, []string{"reverse"}, exposed)
	assert.Equal(t, 2, offered)

	conflicted = nil
	c.SetExposure(fake, mustExposure(t, `{prefix: "", tools: {overrides: {echo: {name: fake-echo}}}}`))
	assert.Equal(t, []string{"echo", "fake-echo", "get-sum", "long-op", "reverse"}, c.Tools())
	assert.Empty(t, c.Conflicts(ev))
	assert.Empty(t, c.Conflicts(fake))
	assert.Equal(t, []events.Key{ev, fake}, conflicted, "both are told the conflict is over")
}

// A policy that gives two of one server's tools one name offers neither,
// and says so.
func TestAPolicyNamingTwoToolsAlikeOffersNeither(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	ev := server("everything")
	c.SetExposure(ev, mustExposure(t, `tools: {overrides: {echo: {name: get-sum}}}`))
	c.Update(ev, catalogue.Naming{}, everythingTools(), time.Time{})
	assert.Equal(t, []string{"x_everything_long-op"}, c.Tools())
	assert.Equal(t, []string{"tools echo, get-sum are all exposed as x_everything_get-sum: none of them is offered; rename them apart"}, c.Conflicts(ev))
}

// A family's members keep muster's shared names: their policy filters.
func TestAFamilyMembersPolicyFiltersItsTools(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	a, b := server("a"), server("b")
	fam := catalogue.Naming{Family: "k8s", InstanceArg: "cluster"}
	c.SetExposure(a, mustExposure(t, `{prefix: "", tools: {exclude: [delete]}}`))
	c.Update(a, fam, []*mcp.Tool{{Name: "get"}, {Name: "delete"}}, time.Time{})
	c.Update(b, fam, []*mcp.Tool{{Name: "get"}, {Name: "delete"}}, time.Time{})
	assert.Equal(t, []string{"x_k8s_delete", "x_k8s_get"}, c.Tools())
	del, _ := c.Tool("x_k8s_delete")
	assert.Equal(t, []string{"b"}, del.Instances, "a's filter leaves it out of the family's delete")
	get, _ := c.Tool("x_k8s_get")
	assert.Equal(t, []string{"a", "b"}, get.Instances)
	assert.Empty(t, c.Conflicts(a), "a family's shared names are no conflict")
}
