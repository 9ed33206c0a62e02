package workflowrun_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// echoed declares src, runs workflow_w once over echoCaller and returns the
// result's text and whether it is an error.
func echoed(t *testing.T, src string) (string, bool) {
	t.Helper()
	docs, err := v1alpha1.DecodeFile("workflows/w.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	ix := resources.New()
	k := docs[0].Key()
	ix.SetFile("workflows/w.yaml", []resources.Doc{{Key: k, Object: docs[0].Object, Hash: docs[0].Hash}}, nil, k)
	e, err := workflowrun.New(workflowrun.Options{Index: ix,
		Status: func(events.Key) (v1alpha1.WorkflowStatus, bool) { return v1alpha1.WorkflowStatus{Valid: true}, true }})
	require.NoError(t, err)
	e.SetCaller(echoCaller{})
	res, err := e.CallTool(context.Background(), "workflow_w", nil, nil)
	require.NoError(t, err)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// A template cannot read the daemon's environment into a tool's arguments
// (and so its result and the execution record).
func TestATemplateCannotReadTheDaemonsEnvironment(t *testing.T) {
	t.Setenv("MUSTERD_TEST_SECRET", "sk-from-the-environment")
	for _, tmpl := range []string{`{{ env \"MUSTERD_TEST_SECRET\" }}`, `{{ expandenv \"$MUSTERD_TEST_SECRET\" }}`} {
		text, isErr := echoed(t, wf("w", "  steps:\n    - id: s\n      tool: x_t\n      args: {v: \""+tmpl+"\"}\n"))
		assert.True(t, isErr, text)
		assert.NotContains(t, text, "sk-from-the-environment")
		assert.Contains(t, text, "not defined")
	}
}

// A template that would build more than the bounds allow fails the run
// with an error naming the workflow, the step and the field, at once.
func TestATemplatePastItsBoundsFailsNamingWorkflowStepAndField(t *testing.T) {
	for tmpl, want := range map[string]string{
		`{{ repeat 1000000000 \"x\" }}`:                                 "result over 1048576 bytes",
		`{{ range until 10000 }}{{ range until 10 }}{{ end }}{{ end }}`: "more than 10000 range iterations",
		`{{ range until 2000 }}{{ repeat 1000 \"x\" }}{{ end }}`:        "output over 1048576 bytes",
		`{{ genPrivateKey \"rsa\" }}`:                                   "genPrivateKey\\\" not defined",
	} {
		text, isErr := echoed(t, wf("w", "  steps:\n    - id: s\n      tool: x_t\n      args: {big: \""+tmpl+"\"}\n"))
		require.True(t, isErr, tmpl)
		assert.Contains(t, text, "workflow w", tmpl)
		assert.Contains(t, text, "step s", tmpl)
		assert.Contains(t, text, "args.big", tmpl)
		assert.Contains(t, text, want, tmpl)
		assert.Less(t, len(text), 10_000, tmpl)
	}
}
