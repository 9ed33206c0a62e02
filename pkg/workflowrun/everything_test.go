package workflowrun_test

import (
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// A third-party server's results feed a workflow: a structured result read
// by jsonPath and by template, a sum computed from the input, an echo of
// both.
func TestAWorkflowOverServerEverything(t *testing.T) {
	h := newHarness(t, workflowrun.Options{})
	h.serve("everything", exec.Command(npmtest.ServerEverything(t), "stdio"))
	h.declare(wf("weather", `  args:
    city: {type: string, default: Chicago}
  steps:
    - id: weather
      tool: x_everything_get-structured-content
      args: {location: "{{ .input.city }}"}
    - id: sum
      tool: x_everything_get-sum
      args: {a: "{{ .results.weather.temperature }}", b: "{{ .results.weather.humidity }}"}
      condition:
        fromStep: weather
        expect:
          jsonPath: {conditions: "Light rain / drizzle"}
    - id: say
      tool: x_everything_echo
      args: {message: "{{ .results.weather.conditions }}; {{ .results.sum }}"}
  output:
    said: "{{ .results.say }}"
    temperature: "{{ .results.weather.temperature }}"
`))
	doc, isError := h.run("weather", nil)
	require.False(t, isError, "%v", doc)
	assert.NotEmpty(t, doc["execution_id"], "the output carries its execution, as muster's does")
	delete(doc, "execution_id")
	assert.Equal(t, map[string]any{
		"said":        "Echo: Light rain / drizzle; The sum of 36 and 82 is 118.",
		"temperature": 36.0,
	}, doc)

	// Another city: the condition does not hold, the sum is skipped, and
	// the echo, whose template names the sum, fails naming it.
	doc, isError = h.run("weather", map[string]any{"city": "Los Angeles"})
	require.True(t, isError)
	assert.Equal(t, `workflow weather, step say, field args.message: failed to render arguments: template: line 1:46: at <.results.sum>: map has no entry for key "sum"`, doc["error"])
	assert.Equal(t, "skipped", stepsOf(t, doc)["sum"]["status"])
}
