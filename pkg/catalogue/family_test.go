package catalogue_test

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
)

func withProperty(t *mcp.Tool, name string) *mcp.Tool {
	t.InputSchema = map[string]any{
		"type":       "object",
		"properties": map[string]any{name: map[string]any{"type": "string"}},
	}
	return t
}

func TestMembersDeclaringDifferentInstanceArgumentsFallBackEntirely(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	a, b := server("k8s-a"), server("k8s-b")
	c.Update(a, catalogue.Naming{Family: "kubernetes", InstanceArg: "management_cluster"}, []*mcp.Tool{tool("list_pods", "List pods")}, time.Time{})
	assert.Equal(t, []string{"x_kubernetes_list_pods"}, c.Tools(), "alone, a member groups")

	changed := c.Update(b, catalogue.Naming{Family: "kubernetes", InstanceArg: "cluster"}, []*mcp.Tool{tool("list_nodes", "List nodes")}, time.Time{})
	assert.Equal(t, []string{"x_k8s-a_list_pods", "x_k8s-b_list_nodes", "x_kubernetes_list_pods"}, changed,
		"a member with another instance argument renames the other member's tools too, though none overlap")
	assert.Equal(t, []string{"x_k8s-a_list_pods", "x_k8s-b_list_nodes"}, c.Tools())
	got, ok := c.Tool("x_k8s-a_list_pods")
	require.True(t, ok)
	assert.Empty(t, got.Family, "a fallen-back tool is the server's own")
	assert.Equal(t, "List pods", got.Definition.Description)
	assert.NotContains(t, schema(t, got.Definition)["properties"], "management_cluster")
	target, err := c.Resolve("x_k8s-a_list_pods", map[string]any{"namespace": "x"})
	require.NoError(t, err)
	assert.Equal(t, catalogue.Target{Server: a, Tool: "list_pods", Arguments: map[string]any{"namespace": "x"}}, target)

	assert.Equal(t, []string{"x_k8s-a_list_pods", "x_k8s-b_list_nodes", "x_kubernetes_list_pods"}, c.Remove(b),
		"the dissenting member gone, the family groups again")
	assert.Equal(t, []string{"x_kubernetes_list_pods"}, c.Tools())
}

func TestADivergingDescriptionFallsBackThatToolAlone(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	naming := catalogue.Naming{Family: "kubernetes", InstanceArg: "management_cluster"}
	a, b, d := server("k8s-a"), server("k8s-b"), server("k8s-c")
	c.Update(a, naming, []*mcp.Tool{tool("list_pods", "List pods"), tool("delete_pod", "Delete pod (idempotent)")}, time.Time{})
	c.Update(b, naming, []*mcp.Tool{tool("list_pods", "List pods"), tool("delete_pod", "Delete pod (idempotent)")}, time.Time{})
	assert.Equal(t, []string{"x_kubernetes_delete_pod", "x_kubernetes_list_pods"}, c.Tools())

	changed := c.Update(d, naming, []*mcp.Tool{tool("list_pods", "List pods"), tool("delete_pod", "Delete pod (NOT idempotent)")}, time.Time{})
	assert.Equal(t, []string{"x_k8s-a_delete_pod", "x_k8s-b_delete_pod", "x_k8s-c_delete_pod", "x_kubernetes_delete_pod", "x_kubernetes_list_pods"}, changed)
	assert.Equal(t, []string{"x_k8s-a_delete_pod", "x_k8s-b_delete_pod", "x_k8s-c_delete_pod", "x_kubernetes_list_pods"}, c.Tools(),
		"the diverging tool is each member's own; the other stays the family's")
	grouped, _ := c.Tool("x_kubernetes_list_pods")
	assert.Equal(t, []string{"k8s-a", "k8s-b", "k8s-c"}, grouped.Instances)
	own, _ := c.Tool("x_k8s-c_delete_pod")
	assert.Equal(t, "Delete pod (NOT idempotent)", own.Definition.Description)

	_, err := c.Resolve("x_kubernetes_delete_pod", map[string]any{"management_cluster": "k8s-a"})
	require.ErrorIs(t, err, catalogue.ErrUnknownTool)
}

func TestAnInstanceArgumentTheToolTakesItselfFallsBackThatTool(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	naming := catalogue.Naming{Family: "kubernetes", InstanceArg: "cluster"}
	single := server("k8s-single")
	c.Update(single, naming, []*mcp.Tool{withProperty(tool("list_pods", "List pods"), "cluster"), tool("get_node", "Get node")}, time.Time{})
	assert.Equal(t, []string{"x_k8s-single_list_pods", "x_kubernetes_get_node"}, c.Tools(),
		"the instance argument would hide the tool's own: that tool is the server's")

	b := server("k8s-other")
	c.Update(b, naming, []*mcp.Tool{tool("list_pods", "List pods")}, time.Time{})
	assert.Equal(t, []string{"x_k8s-other_list_pods", "x_k8s-single_list_pods", "x_kubernetes_get_node"}, c.Tools(),
		"one contributor taking it is enough")
}

func TestAStoppedMemberIsNotAvailableWhileOthersOfferTheTool(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	naming := catalogue.Naming{Family: "kubernetes", InstanceArg: "management_cluster"}
	a, b, d := server("k8s-a"), server("k8s-b"), server("k8s-c")
	c.Update(a, naming, []*mcp.Tool{tool("list_pods", "List pods")}, time.Time{})
	c.Update(b, naming, []*mcp.Tool{tool("list_pods", "List pods")}, time.Time{})
	c.Update(d, naming, []*mcp.Tool{tool("list_pods", "List pods")}, time.Time{})

	assert.Equal(t, []string{"x_kubernetes_list_pods"}, c.Remove(b))
	_, err := c.Resolve("x_kubernetes_list_pods", map[string]any{"management_cluster": "k8s-b"})
	require.Error(t, err)
	assert.Equal(t, `tool x_kubernetes_list_pods is not available on server "k8s-b" (available: k8s-a, k8s-c)`, err.Error())
	got, _ := c.Tool("x_kubernetes_list_pods")
	assert.Equal(t, "List pods (available on servers: k8s-a, k8s-c)", got.Definition.Description)
	_, gone := c.Gone("x_kubernetes_list_pods")
	assert.False(t, gone, "still offered")

	c.Remove(a)
	c.Remove(d)
	_, err = c.Resolve("x_kubernetes_list_pods", map[string]any{"management_cluster": "k8s-a"})
	require.ErrorIs(t, err, catalogue.ErrUnknownTool, "the last member gone, the family's tool is gone")
	_, gone = c.Gone("x_kubernetes_list_pods")
	assert.False(t, gone, "a family tool is not remembered as a server's")
}

func TestTheToolsOfAStoppedServerAreRememberedUntilItRunsAgain(t *testing.T) {
	c := catalogue.New(catalogue.Options{})
	echo := server("echo")
	c.Update(echo, catalogue.Naming{ToolPrefix: "ec"}, []*mcp.Tool{tool("say", "says")}, time.Time{})
	_, gone := c.Gone("x_ec_say")
	assert.False(t, gone, "running")

	c.Remove(echo)
	got, gone := c.Gone("x_ec_say")
	require.True(t, gone)
	assert.Equal(t, catalogue.GoneTool{Server: echo, Tool: "say"}, got)

	other := server("other")
	c.Update(other, catalogue.Naming{ToolPrefix: "ec"}, []*mcp.Tool{tool("say", "says")}, time.Time{})
	_, gone = c.Gone("x_ec_say")
	assert.False(t, gone, "another server offers the name now")
	c.Remove(other)

	c.Update(echo, catalogue.Naming{ToolPrefix: "ec"}, []*mcp.Tool{tool("shout", "shouts")}, time.Time{})
	_, gone = c.Gone("x_ec_say")
	require.True(t, gone, "echo runs again without it, but other offered it last")
	c.Remove(other) // not running: changes nothing
	got, gone = c.Gone("x_ec_say")
	require.True(t, gone)
	assert.Equal(t, catalogue.GoneTool{Server: other, Tool: "say"}, got, "the last to offer it")

	for i := range catalogue.MaxGoneServers {
		k := server("s" + string(rune('a'+i%26)) + string(rune('a'+i/26)))
		c.Update(k, catalogue.Naming{}, []*mcp.Tool{tool("t", "")}, time.Time{})
		c.Remove(k)
	}
	_, gone = c.Gone("x_ec_say")
	assert.False(t, gone, "forgotten after MaxGoneServers others went")
}
