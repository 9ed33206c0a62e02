package workflowrun_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/workflowrun"
)

// echoCaller answers every call with its arguments as JSON: the fuzz
// target's one fake, standing for the router so that millions of runs
// need no server.
type echoCaller struct{}

func (echoCaller) CallTool(_ context.Context, _ string, args map[string]any, _ func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	data, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(data)}}}, nil
}

// raw is v as a v1alpha1.JSON.
func raw(v any) v1alpha1.JSON {
	data, _ := json.Marshal(v)
	return v1alpha1.JSON{Raw: data}
}

// FuzzTemplatesAndArguments runs a workflow whose step arguments,
// condition, forEach items and output are one fuzzed template, called with
// fuzzed arguments. Whatever they are, the run ends, with a result that is
// JSON, and a failure names the workflow.
//
// Templates are the workflow author's, trusted as code is: sprig functions
// that allocate what they are told to (repeat, until, seq) are left out
// here, so the target looks at parsing, typing and argument handling, not
// at sprig's resource use.
func FuzzTemplatesAndArguments(f *testing.F) {
	for _, seed := range [][2]string{
		{"{{ .input.count }}", `{"count": 3}`},
		{"{{ .input.list }}", `{"list": [1, "a", {"b": null}]}`},
		{"{{ len .input.list }}", `{"list": []}`},
		{"n={{ .vars.item }} {{ .vars.item_index }}", `{"list": ["x"]}`},
		{"{{ .results.s1.v }}", `{"count": 1.5}`},
		{"{{ .results.nope }}", `{}`},
		{"{{ index .input.list 5 }}", `{"list": [1]}`},
		{"{{", `{"count": "three"}`},
		{"{{ .input.name | upper | quote }}", `{"name": "ada", "_debug": true}`},
		{"{{ toJson .input }}", `{"_timeout": "1s"}`},
		{"true", `{"_timeout": -1}`},
		{"{{ if .input.count }}yes{{ end }}", `null`},
		{"{{ repeat 100 .input.name }}", `{"name": "ab"}`},
		{"{{ range until 3 }}{{ seq 2 }}{{ end }}", `{}`},
		{"{{ $s := \"x\" }}{{ range 30 }}{{ $s = print $s $s }}{{ end }}", `{}`},
	} {
		f.Add(seed[0], seed[1])
	}
	ix := resources.New()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "f")
	e, err := workflowrun.New(workflowrun.Options{Index: ix, MaxExecutions: 10, Timeout: 5 * time.Second,
		Status: func(events.Key) (v1alpha1.WorkflowStatus, bool) { return v1alpha1.WorkflowStatus{Valid: true}, true }})
	if err != nil {
		f.Fatal(err)
	}
	e.SetCaller(echoCaller{})
	f.Fuzz(func(t *testing.T, tmpl, argsJSON string) {
		var args map[string]any
		_ = json.Unmarshal([]byte(argsJSON), &args)
		wf := &v1alpha1.Workflow{ObjectMeta: metaNamed("f"), Spec: v1alpha1.WorkflowSpec{
			Args: map[string]v1alpha1.ArgDefinition{
				"count": {Type: v1alpha1.ArgTypeInteger},
				"list":  {Type: v1alpha1.ArgTypeArray, Default: ptr(raw([]any{"d"}))},
			},
			Steps: []v1alpha1.WorkflowStep{
				{ID: "s1", Tool: "x_echo", Args: map[string]v1alpha1.JSON{"v": raw(tmpl), "fixed": raw(1)}},
				{ID: "s2", Tool: "x_echo", Args: map[string]v1alpha1.JSON{"v": raw(tmpl)},
					Condition: &v1alpha1.WorkflowCondition{Template: tmpl}},
				{ID: "loop", ForEach: &v1alpha1.WorkflowForEach{Items: "{{ .input.list }}", Steps: []v1alpha1.WorkflowSubStep{
					{ID: "body", Tool: "x_echo", Args: map[string]v1alpha1.JSON{"v": raw(tmpl)}}}}},
				{ID: "items", ForEach: &v1alpha1.WorkflowForEach{Items: tmpl, Steps: []v1alpha1.WorkflowSubStep{
					{ID: "b2", Tool: "x_echo"}}}},
			},
			Output: map[string]v1alpha1.JSON{"o": raw(tmpl)},
		}}
		ix.SetFile("workflows/f.yaml", []resources.Doc{{Key: key, Object: wf, Hash: "h"}}, nil, key)
		res, err := e.CallTool(context.Background(), "workflow_f", args, nil)
		if err != nil {
			t.Fatalf("a workflow call is never a protocol error: %v", err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		var doc any
		if err := json.Unmarshal([]byte(text), &doc); err != nil {
			t.Fatalf("the result is not JSON: %v\n%s", err, text)
		}
		if res.IsError {
			m, ok := doc.(map[string]any)
			if !ok || !strings.HasPrefix(m["error"].(string), "workflow f") {
				t.Fatalf("a failure does not name the workflow: %s", text)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

func metaNamed(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "default"}
}
