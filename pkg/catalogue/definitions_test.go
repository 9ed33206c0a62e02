package catalogue_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

func nsServer(ns, name string) events.Key { return events.NewKey("MCPServer", ns, name) }

func tool(name, description string) *mcp.Tool {
	return &mcp.Tool{
		Name:        name,
		Title:       "Title of " + name,
		Description: description,
		InputSchema: map[string]any{
			"type":       "object",
			"properties": map[string]any{"namespace": map[string]any{"type": "string"}},
			"required":   []any{"namespace"},
		},
		OutputSchema: map[string]any{"type": "object"},
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
	}
}

// schema returns def's input schema as JSON, decoded generically.
func schema(t *testing.T, def *mcp.Tool) map[string]any {
	t.Helper()
	data, err := json.Marshal(def.InputSchema)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	return m
}

func TestTheServerPrefixIsNotRepeatedAsMusterDoes(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	git := server("git")
	assert.Equal(t, "x_git_status", c.ExposedName(git, catalogue.Naming{}, "status"))
	assert.Equal(t, "x_git_status", c.ExposedName(git, catalogue.Naming{}, "git_status"), "already starts with git_")
	assert.Equal(t, "x_git_gitlog", c.ExposedName(git, catalogue.Naming{}, "gitlog"), "only the prefix and _ count")
	assert.Equal(t, "x_gh_pr", c.ExposedName(git, catalogue.Naming{ToolPrefix: "gh"}, "gh_pr"))
	assert.Equal(t, "x_k8s_get", c.ExposedName(git, catalogue.Naming{ToolPrefix: "gh", Family: "k8s", InstanceArg: "cluster"}, "get"),
		"a family names its members' tools")
	assert.Equal(t, []string{"x_git_log", "x_git_status"}, c.ExposedNames(git, catalogue.Naming{}, []string{"git_status", "log", "status"}),
		"sorted, without repeats")
}

func TestDefinitionsPassThroughUnderTheExposedName(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	k8s := server("k8s")
	listed := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)
	own := tool("get", "gets a resource")
	assert.Equal(t, []string{"x_kube_get", "x_kube_list"}, c.Update(k8s, catalogue.Naming{ToolPrefix: "kube"},
		[]*mcp.Tool{own, tool("list", "lists")}, listed))

	defs := c.Definitions()
	require.Len(t, defs, 2)
	assert.Equal(t, "x_kube_get", defs[0].Name)
	assert.Equal(t, "x_kube_list", defs[1].Name)
	assert.Equal(t, own.Description, defs[0].Description)
	assert.Equal(t, own.Title, defs[0].Title)
	assert.Equal(t, own.InputSchema, defs[0].InputSchema)
	assert.Equal(t, own.OutputSchema, defs[0].OutputSchema)
	assert.Equal(t, own.Annotations, defs[0].Annotations)
	assert.Equal(t, "get", own.Name, "the server's own definition is not changed")

	got, ok := c.Tool("x_kube_get")
	require.True(t, ok)
	assert.Equal(t, k8s, got.Server)
	assert.Equal(t, "get", got.ServerTool)
	assert.Empty(t, got.Family)

	target, err := c.Resolve("x_kube_get", map[string]any{"namespace": "default"})
	require.NoError(t, err)
	assert.Equal(t, catalogue.Target{Server: k8s, Tool: "get", Arguments: map[string]any{"namespace": "default"}}, target)

	assert.Equal(t, []catalogue.Server{{Key: k8s, Naming: catalogue.Naming{ToolPrefix: "kube"}, Tools: 2, Offered: 2, ListedAt: listed}}, c.Servers())
}

func TestAChangedDefinitionIsAChangeAndTheSameListingIsNone(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	k8s := server("k8s")
	c.Update(k8s, catalogue.Naming{}, []*mcp.Tool{tool("get", "v1"), tool("list", "v1")}, time.Time{})

	later := time.Date(2026, 11, 24, 13, 5, 0, 0, time.UTC)
	assert.Empty(t, c.Update(k8s, catalogue.Naming{}, []*mcp.Tool{tool("get", "v1"), tool("list", "v1")}, later),
		"the same definitions again: nothing changed")
	assert.Equal(t, later, c.Servers()[0].ListedAt, "but the listing time moved")

	assert.Equal(t, []string{"x_k8s_list"}, c.Update(k8s, catalogue.Naming{}, []*mcp.Tool{tool("get", "v1"), tool("list", "v2")}, later),
		"only the tool whose description changed")
	def, _ := c.Tool("x_k8s_list")
	assert.Equal(t, "v2", def.Definition.Description)
}

func TestAServerWithNoToolsIsStillListedAsRunning(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	empty := server("empty")
	assert.Empty(t, c.Update(empty, catalogue.Naming{}, nil, time.Unix(1, 0)))
	require.Len(t, c.Servers(), 1, "for its catalogue age")
	assert.Empty(t, c.Remove(empty))
	assert.Empty(t, c.Servers())
}

func TestAFamilySharesOneToolThatPicksItsInstanceByArgument(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	naming := catalogue.Naming{Family: "kubernetes", InstanceArg: "cluster"}
	a, b := server("mc-a"), server("mc-b")

	assert.Equal(t, []string{"x_kubernetes_get"}, c.Update(b, naming, []*mcp.Tool{tool("get", "gets")}, time.Time{}))
	assert.Equal(t, []string{"x_kubernetes_get", "x_kubernetes_logs"}, c.Update(a, naming, []*mcp.Tool{tool("get", "gets"), tool("logs", "logs")}, time.Time{}),
		"get gains an instance; logs is new")
	assert.Equal(t, []string{"x_kubernetes_get", "x_kubernetes_logs"}, c.Tools(), "one tool per name, not per member")

	got, ok := c.Tool("x_kubernetes_get")
	require.True(t, ok)
	assert.Equal(t, []string{"mc-a", "mc-b"}, got.Instances)
	assert.Equal(t, "cluster", got.InstanceArg)
	s := schema(t, got.Definition)
	assert.Equal(t, []any{"namespace", "cluster"}, s["required"], "the instance argument is required, beside the tool's own")
	props := s["properties"].(map[string]any)
	assert.Equal(t, map[string]any{"type": "string"}, props["namespace"], "the tool's own arguments stay")
	assert.Equal(t, []any{"mc-a", "mc-b"}, props["cluster"].(map[string]any)["enum"])
	assert.Equal(t, "Target instance to execute this tool on. Available: mc-a, mc-b", props["cluster"].(map[string]any)["description"], "muster's text")
	assert.Equal(t, "gets (available on servers: mc-a, mc-b)", got.Definition.Description, "the members named, as muster does")

	logs, _ := c.Tool("x_kubernetes_logs")
	assert.Equal(t, []string{"mc-a"}, logs.Instances, "only the members that offer it")

	args := map[string]any{"cluster": "mc-b", "namespace": "default"}
	target, err := c.Resolve("x_kubernetes_get", args)
	require.NoError(t, err)
	assert.Equal(t, catalogue.Target{Server: b, Tool: "get", Arguments: map[string]any{"namespace": "default"}}, target,
		"routed to the named member, the argument removed")
	assert.Equal(t, "mc-b", args["cluster"], "the caller's arguments are not changed")

	_, err = c.Resolve("x_kubernetes_get", map[string]any{"namespace": "default"})
	require.Error(t, err)
	assert.Equal(t, `tool x_kubernetes_get is provided by a family on servers mc-a, mc-b; the "cluster" parameter is required`, err.Error(), "muster's text")
	assert.Contains(t, err.Error(), "mc-a, mc-b")

	_, err = c.Resolve("x_kubernetes_logs", map[string]any{"cluster": "mc-b"})
	require.Error(t, err)
	assert.Equal(t, `tool x_kubernetes_logs is not available on server "mc-b" (available: mc-a)`, err.Error(), "muster's text")

	_, err = c.Resolve("x_kubernetes_get", map[string]any{"cluster": 7})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `the "cluster" parameter is required: a string naming the instance to call`)

	_, err = c.Resolve("x_kubernetes_gone", nil)
	require.ErrorIs(t, err, catalogue.ErrUnknownTool)
	assert.Contains(t, err.Error(), "x_kubernetes_gone")

	assert.Equal(t, []string{"x_kubernetes_get"}, c.Remove(b), "a member gone changes the instances of what it offered")
	got, _ = c.Tool("x_kubernetes_get")
	assert.Equal(t, []string{"mc-a"}, got.Instances)
	assert.Equal(t, []any{"mc-a"}, schema(t, got.Definition)["properties"].(map[string]any)["cluster"].(map[string]any)["enum"])
}

func TestSubscribersSeeEveryChangeInOrderAndMayReadTheCatalogue(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	var (
		mu        sync.Mutex
		seen      []catalogue.Change
		seenTools [][]string
	)
	cancel := c.Subscribe(func(change catalogue.Change) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, change)
		seenTools = append(seenTools, c.Tools()) // the change is in already
	})
	echo, empty := server("echo"), server("empty")
	at := time.Unix(100, 0)
	c.Update(echo, catalogue.Naming{}, []*mcp.Tool{tool("a", "1")}, at)
	c.Update(echo, catalogue.Naming{}, []*mcp.Tool{tool("a", "1")}, at) // no change: no call
	c.Update(echo, catalogue.Naming{}, []*mcp.Tool{tool("a", "2")}, at)
	c.Update(echo, catalogue.Naming{}, []*mcp.Tool{tool("a", "2")}, at.Add(time.Second)) // listed again
	c.Update(empty, catalogue.Naming{}, nil, at)                                         // runs, without tools
	c.Remove(echo)
	cancel()
	c.Update(echo, catalogue.Naming{}, []*mcp.Tool{tool("b", "1")}, at)

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []catalogue.Change{
		{Server: echo, Running: true, Tools: []string{"x_echo_a"}},
		{Server: echo, Running: true, Tools: []string{"x_echo_a"}},
		{Server: echo, Running: true, Tools: nil},
		{Server: empty, Running: true, Tools: nil},
		{Server: echo, Running: false, Tools: []string{"x_echo_a"}},
	}, seen)
	assert.Equal(t, [][]string{{"x_echo_a"}, {"x_echo_a"}, {"x_echo_a"}, {"x_echo_a"}, {}}, seenTools)
}

func TestNamespacesKeepServersApart(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	a, b := nsServer("a", "echo"), nsServer("b", "echo")
	c.Update(b, catalogue.Naming{}, []*mcp.Tool{tool("t", "b's")}, time.Time{})
	assert.Equal(t, []string{"x_echo_t"}, c.Update(a, catalogue.Naming{}, []*mcp.Tool{tool("t", "a's")}, time.Time{}),
		"two servers named alike in two namespaces expose one name: a conflict")
	_, ok := c.Tool("x_echo_t")
	assert.False(t, ok, "neither is offered it")
	assert.Len(t, c.Conflicts(a), 1)
	assert.Len(t, c.Conflicts(b), 1)
	assert.Equal(t, []string{"x_echo_t"}, c.Remove(a))
	got, _ := c.Tool("x_echo_t")
	assert.Equal(t, "b's", got.Definition.Description, "the conflict over, b's tool is offered")
	assert.Empty(t, c.Conflicts(b))
}

// Definitions is made once per change of the exposed tools: while nothing
// changes it is the very same slice (so a reader tells "nothing changed"
// at the cost of a comparison), and a change, of a name or of a
// definition, makes a new one.
func TestDefinitionsAreTheSameSliceUntilTheToolsChange(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	k := nsServer("default", "git")
	c.Update(k, catalogue.Naming{}, []*mcp.Tool{tool("log", "Show the log")}, time.Time{})
	first := c.Definitions()
	require.Len(t, first, 1)
	assert.Same(t, &first[0], &c.Definitions()[0], "nothing changed: the same slice")

	c.Update(k, catalogue.Naming{}, []*mcp.Tool{tool("log", "Show the log")}, time.Time{})
	assert.Same(t, &first[0], &c.Definitions()[0], "the same tools listed again: no change")

	c.Update(k, catalogue.Naming{}, []*mcp.Tool{tool("log", "Show the history")}, time.Time{})
	second := c.Definitions()
	assert.NotSame(t, &first[0], &second[0], "a definition changed")
	assert.Equal(t, "Show the history", second[0].Description)

	c.Update(k, catalogue.Naming{}, []*mcp.Tool{tool("log", "Show the history"), tool("diff", "Show a diff")}, time.Time{})
	third := c.Definitions()
	require.Len(t, third, 2)
	assert.Equal(t, []string{"x_git_diff", "x_git_log"}, []string{third[0].Name, third[1].Name})
	assert.Equal(t, 1, cap(first), "a caller's append copies, never writes into the shared array")

	c.Remove(k)
	assert.Empty(t, c.Definitions())
}
