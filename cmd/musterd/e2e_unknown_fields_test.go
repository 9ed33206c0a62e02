package main

// End-to-end tests of fields musterd does not know in definition files:
// muster's loader ignores them, and files written for muster (its test
// harness writes spec.input_schema and spec.required) must work here too.
// The real binary reads real files, starts a real mcp-fake, and serves the
// workflow to a real MCP client; the warnings are read back through the
// HTTP API, the status file, the CLI and the log.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// workflowObject is what the API returns for one Workflow.
type workflowObject struct {
	Metadata  types.ObjectMeta        `json:"metadata"`
	Status    v1alpha1.WorkflowStatus `json:"status"`
	Reconcile types.Reconcile         `json:"reconcile"`
}

func (e *fsEnv) workflowObject(t *testing.T, name string) (workflowObject, bool) {
	t.Helper()
	return getObject[workflowObject](t, e, "workflows", name)
}

// musterHarnessWorkflow is a workflow as muster's harness writes it, with
// spec.input_schema and spec.required, which muster's loader ignores;
// above is prepended to the file.
func musterHarnessWorkflow(above, tool string) string {
	return above + `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
spec:
  input_schema:
    type: object
  required:
  - message
  args:
    message: {type: string}
  steps:
  - id: say
    tool: ` + tool + `
    args: {text: "{{ .input.message }}"}
`
}

// warnLines counts the log's WARN lines about ignored fields of key.
func warnLines(d *runningDaemon, key string) int {
	n := 0
	for l := range strings.Lines(d.stderr.String()) {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "definition has fields musterd ignores") && strings.Contains(l, "key="+key) {
			n++
		}
	}
	return n
}

func TestE2EUnknownFieldsAreIgnoredWithWarningsAndTyposStillFail(t *testing.T) {
	e := startFS(t)
	marker := newMarker()
	tool := "x_echo_" + marker
	e.write(t, "mcpservers/echo.yaml", mcpServerYAML("echo", append(stdioSpec("-tools", marker), "replicas: 3")...))
	e.write(t, "workflows/greet.yaml", musterHarnessWorkflow("", tool))

	// The server runs as declared, and names the field it ignored.
	s := e.waitServer(t, "echo", "is Running", running(tool))
	assert.Equal(t, []string{"mcpservers/echo.yaml:10: spec.replicas: unknown field, ignored"}, s.Status.Warnings)

	// The workflow is valid and served; its status names both fields.
	var w workflowObject
	eventually(t, "workflow greet is Synced and valid", func() bool {
		var ok bool
		w, ok = e.workflowObject(t, "greet")
		return ok && w.Reconcile.State == "Synced" && w.Status.Valid && w.Reconcile.ObservedHash == w.Metadata.Hash
	})
	wantWarnings := []string{
		"workflows/greet.yaml:6: spec.input_schema: unknown field, ignored",
		"workflows/greet.yaml:8: spec.required: unknown field, ignored",
	}
	assert.Equal(t, wantWarnings, w.Status.Warnings)
	assert.Empty(t, w.Status.ValidationErrors)
	cs := e.directClient(t, nil)
	waitTool(t, cs, "workflow_greet", true)
	doc, isError := callJSON(t, cs, "workflow_greet", map[string]any{"message": "hello"})
	require.False(t, isError, "%v", doc)
	assert.Contains(t, fmt.Sprint(doc), "hello", "the step ran with the input")

	// The status file and the CLI show the warnings.
	eventually(t, "the status file shows the warnings", func() bool {
		f, ok := e.statusFile("greet")
		return ok && strings.Contains(f, "warnings:") && strings.Contains(f, wantWarnings[0]) && strings.Contains(f, wantWarnings[1])
	})
	out, code := e.cli(t, "describe", "wf/greet")
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "warnings:")
	assert.Contains(t, out, wantWarnings[0])

	// The log has one WARN line for the document, not one per reconcile.
	// (The log is read from musterd's stderr by a goroutine of its own,
	// which may be a moment behind the API.)
	eventually(t, "the log warns of greet", func() bool { return warnLines(e.runningDaemon, "Workflow/default/greet") > 0 })
	eventually(t, "the log warns of echo", func() bool { return warnLines(e.runningDaemon, "MCPServer/default/echo") > 0 })
	assert.Equal(t, 1, warnLines(e.runningDaemon, "Workflow/default/greet"), "%s", e.stderr)
	assert.Equal(t, 1, warnLines(e.runningDaemon, "MCPServer/default/echo"))
	before := e.reconciles(t, "Workflow")
	out, code = e.cli(t, "reconcile", "workflows/greet")
	require.Equal(t, 0, code, out)
	eventually(t, "the requested reconcile ran", func() bool { return e.reconciles(t, "Workflow") > before })
	assert.Equal(t, 1, warnLines(e.runningDaemon, "Workflow/default/greet"), "a reconcile logs no warning again")

	// A warning that moves is a change: the status follows, and the log
	// says it once more.
	e.write(t, "workflows/greet.yaml", musterHarnessWorkflow("# moved down a line\n", tool))
	eventually(t, "the warnings moved", func() bool {
		w, _ = e.workflowObject(t, "greet")
		return slices.Contains(w.Status.Warnings, "workflows/greet.yaml:7: spec.input_schema: unknown field, ignored")
	})
	eventually(t, "the log warns of greet again", func() bool { return warnLines(e.runningDaemon, "Workflow/default/greet") > 1 })
	assert.Equal(t, 2, warnLines(e.runningDaemon, "Workflow/default/greet"))

	// A misspelt field whose absence is a problem still fails, with the
	// did-you-mean naming file, line and field; nothing is served.
	e.write(t, "workflows/typo.yaml", strings.Replace(strings.Replace(musterHarnessWorkflow("", tool), "name: greet", "name: typo", 1),
		"    tool: ", "    tol: ", 1))
	eventually(t, "workflow typo fails with the did-you-mean", func() bool {
		w, ok := e.workflowObject(t, "typo")
		return ok && w.Reconcile.State == "Error" &&
			strings.Contains(w.Reconcile.LastError, `workflows/typo.yaml:14: spec.steps[0].tol: unknown field (did you mean "tool"?)`)
	})
	assert.False(t, hasTool(t, cs, "workflow_typo"))
}
