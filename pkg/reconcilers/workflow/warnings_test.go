package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// A workflow whose file has fields musterd ignores is judged without them,
// valid once its tools are offered, and its status names what was ignored;
// an edit without them clears the warnings.
func TestIgnoredFieldsAreWarningsInTheStatus(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "greet")
	const header = "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: greet\nspec:\n"
	h.declare(t, "workflows/greet.yaml", header+"  input_schema:\n    type: object\n  required: [message]\n  steps:\n  - id: a\n    tool: x_docker_build\n", key)
	h.cat.Set(docker, "", []string{"build"})

	res, st := h.reconcile(t, key)
	require.NoError(t, res.Err)
	assert.True(t, st.Valid)
	assert.Empty(t, st.ValidationErrors)
	assert.Equal(t, []string{
		"workflows/greet.yaml:6: spec.input_schema: unknown field, ignored",
		"workflows/greet.yaml:8: spec.required: unknown field, ignored",
	}, st.Warnings)

	h.declare(t, "workflows/greet.yaml", header+"  steps:\n  - id: a\n    tool: x_docker_build\n", key)
	_, st = h.reconcile(t, key)
	assert.True(t, st.Valid)
	assert.Nil(t, st.Warnings)
}
