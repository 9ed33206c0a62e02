package mcpserve

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/tooldef"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// claimingProvider lists its available workflows and claims its
// unavailable ones, as workflowrun.Engine does.
type claimingProvider struct {
	fakeProvider
	unavailable map[string]string // tool name → what is missing
}

func (p *claimingProvider) Claims(name string) bool { _, ok := p.unavailable[name]; return ok }

func (p *claimingProvider) CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	if missing, ok := p.unavailable[name]; ok {
		wf := strings.TrimPrefix(name, "workflow_")
		return tooldef.Error("workflow " + wf + " is not available (missing required tools: " + missing + ")"), nil
	}
	return p.fakeProvider.CallTool(ctx, name, args, progress)
}

func TestDirectAnswersAnUnavailableWorkflowWithoutListingIt(t *testing.T) {
	wf := &claimingProvider{
		fakeProvider: fakeProvider{tools: []*mcp.Tool{{Name: "workflow_greet", InputSchema: map[string]any{"type": "object"}}}},
		unavailable:  map[string]string{"workflow_deploy": "x_k8s_apply, x_k8s_get"},
	}
	h := newHarness(t, func(o *setup) { o.sources = []router.Source{wf} })
	cs := h.connect(PathDirect, "2025-06-18", nil)

	names := listNames(t, cs)
	assert.Contains(t, names, "workflow_greet")
	assert.NotContains(t, names, "workflow_deploy", "an unavailable workflow is no tool")

	// Its call says what is missing, as call_tool on /mcp does.
	res := call(t, cs, "workflow_deploy", map[string]any{"env": "prod"})
	assert.True(t, res.IsError)
	assert.Equal(t, "workflow deploy is not available (missing required tools: x_k8s_apply, x_k8s_get)", text(t, res))
	meta := h.connect(PathMCP, musterProtocol, nil)
	res = call(t, meta, "call_tool", map[string]any{"name": "workflow_deploy"})
	assert.Contains(t, text(t, res), "workflow deploy is not available (missing required tools: x_k8s_apply, x_k8s_get)", "the same words on both views")

	// A listed tool is still the go-sdk's to serve.
	assert.False(t, call(t, cs, "workflow_greet", nil).IsError)

	// A name nobody offers or claims: musterd's own error, naming it.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "x_gone_echo", Arguments: map[string]any{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `unknown tool "x_gone_echo": tool not found: no core tool, running server or workflow offers it`)
}
