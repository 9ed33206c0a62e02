package v1alpha1_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

func TestWorkflowFieldsMayBeSpelledInSnakeCase(t *testing.T) {
	snake := `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: w
spec:
  steps:
    - id: a
      tool: x_t
      allow_failure: true
      condition:
        from_step: b
        expect_not:
          json_path: {x: 1}
  on_failure:
    - {id: c, tool: x_t, allow_failure: true}
`
	camel := `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: w
spec:
  steps:
    - id: a
      tool: x_t
      allowFailure: true
      condition:
        fromStep: b
        expectNot:
          jsonPath: {x: 1}
  onFailure:
    - {id: c, tool: x_t, allowFailure: true}
`
	s, err := v1alpha1.DecodeFile("workflows/w.yaml", []byte(snake))
	require.NoError(t, err)
	require.NoError(t, s[0].Err)
	c, err := v1alpha1.DecodeFile("workflows/w.yaml", []byte(camel))
	require.NoError(t, err)
	require.NoError(t, c[0].Err)
	assert.Equal(t, c[0].Object, s[0].Object)
	assert.True(t, s[0].Object.(*v1alpha1.Workflow).Spec.Steps[0].AllowFailure)

	both, err := v1alpha1.DecodeFile("workflows/w.yaml", []byte(`apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: w
spec:
  steps:
    - id: a
      tool: x_t
      allowFailure: true
      allow_failure: false
`))
	require.NoError(t, err)
	assert.EqualError(t, both[0].Err, "workflows/w.yaml:10: spec.steps[0].allowFailure: set twice, as allowFailure and as allow_failure: give one")

	// MCPServer fields keep one spelling: another is a field musterd
	// ignores, with a warning.
	mcp, err := v1alpha1.DecodeFile("mcpservers/s.yaml", []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: s\nspec:\n  type: stdio\n  command: x\n  auto_start: true\n"))
	require.NoError(t, err)
	require.NoError(t, mcp[0].Err)
	assert.False(t, mcp[0].Object.(*v1alpha1.MCPServer).Spec.AutoStart)
	assert.Equal(t, []string{`mcpservers/s.yaml:8: spec.auto_start: unknown field, ignored (did you mean "autoStart"?)`}, mcp[0].Warnings.Strings())
}
