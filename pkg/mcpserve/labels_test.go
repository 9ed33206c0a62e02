package mcpserve

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// TestFilterToolsFacetsOnTheLabelsToolsCarry: the labels a workflow's tool
// carries in _meta under muster's key (a map[string]string, as workflowrun
// sets it), every one of them required.
func TestFilterToolsFacetsOnTheLabelsToolsCarry(t *testing.T) {
	h := newHarness(t, nil)
	labelled := func(name string, labels map[string]string) *mcp.Tool {
		return &mcp.Tool{Name: name, Description: name, InputSchema: map[string]any{"type": "object"},
			Meta: mcp.Meta{v1alpha1.MetaKeyLabels: labels}}
	}
	h.backend.setTools(
		labelled("x_a_alpha", map[string]string{"category": "observability"}),
		labelled("x_a_beta", map[string]string{"category": "observability", "env": "prod"}),
		labelled("x_a_gamma", map[string]string{"category": "delivery"}),
		&mcp.Tool{Name: "x_a_plain", Description: "plain", InputSchema: map[string]any{"type": "object"}},
	)
	h.srv.Refresh()
	cs := h.connect(PathMCP, musterProtocol, nil)
	type page struct {
		Total int
		Tools []toolInfo
	}
	names := func(p page) []string {
		var out []string
		for _, tool := range p.Tools {
			out = append(out, tool.Name)
		}
		return out
	}
	p := decode[page](t, call(t, cs, "filter_tools", map[string]any{"labels": map[string]any{"category": "observability"}}))
	assert.Equal(t, 2, p.Total)
	assert.Equal(t, []string{"x_a_alpha", "x_a_beta"}, names(p))

	p = decode[page](t, call(t, cs, "filter_tools", map[string]any{"labels": map[string]any{"category": "observability", "env": "prod"}}))
	require.Equal(t, 1, p.Total, "every label must match")
	assert.Equal(t, "x_a_beta", p.Tools[0].Name)
	assert.Equal(t, map[string]string{"category": "observability", "env": "prod"}, p.Tools[0].Labels, "surfaced on the result")

	p = decode[page](t, call(t, cs, "filter_tools", map[string]any{"labels": map[string]any{"env": "staging"}}))
	assert.Zero(t, p.Total)
}
