package crd_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/internal/kubetest"
	musterv1alpha1 "github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// TestOnAPIServer starts one control plane, with the generated CRDs, for
// all of this package's tests on a real API server: starting one takes
// seconds, and each subtest works in namespaces of its own.
func TestOnAPIServer(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	t.Logf("control plane started in %s", cp.StartDuration.Round(time.Millisecond))
	t.Run("ReferenceExamplesApply", func(t *testing.T) { testReferenceExamplesApply(t, cp) })
	t.Run("BundledExamplesApply", func(t *testing.T) { testBundledExamplesApply(t, cp) })
	t.Run("InvalidResourcesAreRejected", func(t *testing.T) { testInvalidResourcesAreRejected(t, cp) })
	t.Run("StatusSubresource", func(t *testing.T) { testStatusSubresource(t, cp) })
	t.Run("KubectlShowsPrinterColumns", func(t *testing.T) { testKubectlShowsPrinterColumns(t, cp) })
}

// namespace creates a fresh namespace for t.
func namespace(t *testing.T, cp *kubetest.ControlPlane, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	require.NoError(t, cp.Client.Create(t.Context(), ns))
	return name
}

// documents splits a YAML file into its documents, as unstructured
// objects, skipping empty ones (comments only).
func documents(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objects []*unstructured.Unstructured
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return objects
		}
		require.NoError(t, err)
		if doc != nil {
			objects = append(objects, &unstructured.Unstructured{Object: doc})
		}
	}
}

// testReferenceExamplesApply creates every document of muster's examples
// (shared/reference beside the repository) unchanged on a real API server
// with the generated CRDs, as muster's users' clusters hold them, and reads
// each back with the Go types, defaults applied.
func testReferenceExamplesApply(t *testing.T, cp *kubetest.ControlPlane) {
	files, err := filepath.Glob(filepath.Join(referenceDir(t, ""), "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 5, "every reference example is here")
	assert.Equal(t, 10, applyExamples(t, cp, "example", files), "documents in the reference examples")
}

// testBundledExamplesApply does the same with musterd's own examples
// (examples/config), which every checkout has.
func testBundledExamplesApply(t *testing.T, cp *kubetest.ControlPlane) {
	files, err := filepath.Glob(filepath.Join(moduleRoot(t), "examples", "config", "*", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, files, 3, "examples/config: two servers and a workflow")
	assert.Equal(t, 3, applyExamples(t, cp, "bundled", files))
}

// applyExamples creates every document of files, one namespace per file,
// checks each reads back valid, and returns how many it created.
func applyExamples(t *testing.T, cp *kubetest.ControlPlane, prefix string, files []string) int {
	created := 0
	for i, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		// Files reuse names (git-tools, deploy-application): one namespace
		// per file keeps them apart.
		ns := namespace(t, cp, fmt.Sprintf("%s-%d", prefix, i))
		for _, obj := range documents(t, data) {
			obj.SetNamespace(ns)
			require.NoError(t, cp.Client.Create(t.Context(), obj, client.FieldValidation("Strict")),
				"%s: %s %s", file, obj.GetKind(), obj.GetName())
			created++

			key := client.ObjectKeyFromObject(obj)
			switch obj.GetKind() {
			case musterv1alpha1.KindMCPServer:
				var got musterv1alpha1.MCPServer
				require.NoError(t, cp.Client.Get(t.Context(), key, &got))
				assert.Empty(t, got.Validate(), "%s: %s is valid for musterd too", file, key)
				if got.Spec.Type == musterv1alpha1.MCPServerTypeStdio {
					assert.Equal(t, musterv1alpha1.DefaultMCPServerTimeout, got.Spec.Timeout, "%s: %s: the CRD defaults timeout", file, key)
				}
			case musterv1alpha1.KindWorkflow:
				var got musterv1alpha1.Workflow
				require.NoError(t, cp.Client.Get(t.Context(), key, &got))
				assert.Empty(t, got.Validate(), "%s: %s is valid for musterd too", file, key)
				assert.NotEmpty(t, got.Spec.Steps)
			default:
				t.Fatalf("%s: unexpected kind %q", file, obj.GetKind())
			}
		}
	}
	return created
}

// invalidCase is a document the API server must refuse, and the reason it
// must give: the field path and the broken rule, as users see them.
type invalidCase struct {
	name   string
	doc    string
	reason string
}

// mcpserver and workflow wrap a spec (YAML, indented by two) in a document.
func mcpserver(spec string) string {
	return "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: bad\nspec:\n" + spec
}

func workflow(spec string) string {
	return "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: bad\nspec:\n" + spec
}

// invalidCases breaks each important validation marker and CEL rule of the
// CRDs once.
var invalidCases = []invalidCase{
	// MCPServer: CEL rules on the object, whose path the API server
	// reports as <nil>.
	{"stdio without command", mcpserver("  type: stdio\n"),
		"<nil>: Invalid value: command is required when type is stdio"},
	{"remote without url", mcpserver("  type: sse\n"),
		"<nil>: Invalid value: url is required when type is streamable-http or sse"},
	{"args on a remote server", mcpserver("  type: streamable-http\n  url: https://example.com/mcp\n  args: [x]\n"),
		"<nil>: Invalid value: args field is only allowed when type is stdio"},
	{"headers on a stdio server", mcpserver("  type: stdio\n  command: x\n  headers: {A: b}\n"),
		"<nil>: Invalid value: headers field is only allowed when type is streamable-http or sse"},
	// MCPServer: CEL rules on auth.
	{"authorizationServer without oauth", mcpserver("  type: sse\n  url: https://example.com/mcp\n  auth:\n    type: none\n    authorizationServer: {issuer: https://issuer.example.com}\n"),
		"spec.auth: Invalid value: authorizationServer is only valid when type is oauth"},
	{"forwardToken with authorizationServer", mcpserver("  type: sse\n  url: https://example.com/mcp\n  auth:\n    type: oauth\n    forwardToken: true\n    authorizationServer: {issuer: https://issuer.example.com}\n"),
		"spec.auth: Invalid value: forwardToken bypasses per-backend OAuth; set one or the other, not both"},
	{"tokenExchange with authorizationServer", mcpserver("  type: sse\n  url: https://example.com/mcp\n  auth:\n    type: oauth\n    tokenExchange: {enabled: true}\n    authorizationServer: {issuer: https://issuer.example.com}\n"),
		"spec.auth: Invalid value: tokenExchange has its own issuer/endpoint config; set one or the other, not both"},
	// MCPServer: markers.
	{"missing type", mcpserver("  command: x\n"),
		"spec.type: Required value"},
	{"unknown type", mcpserver("  type: websocket\n  url: https://example.com/mcp\n"),
		"spec.type: Unsupported value: \"websocket\": supported values: \"stdio\", \"streamable-http\", \"sse\""},
	{"timeout below minimum", mcpserver("  type: stdio\n  command: x\n  timeout: 0\n"),
		"spec.timeout: Invalid value: 0: spec.timeout in body should be greater than or equal to 1"},
	{"timeout above maximum", mcpserver("  type: stdio\n  command: x\n  timeout: 301\n"),
		"spec.timeout: Invalid value: 301: spec.timeout in body should be less than or equal to 300"},
	{"url not http", mcpserver("  type: sse\n  url: ftp://example.com/mcp\n"),
		"spec.url: Invalid value: \"ftp://example.com/mcp\": spec.url in body should match '^https?://[^\\s/$.?#].[^\\s]*$'"},
	{"toolPrefix starting with a digit", mcpserver("  type: stdio\n  command: x\n  toolPrefix: 1x\n"),
		"spec.toolPrefix: Invalid value: \"1x\": spec.toolPrefix in body should match '^[a-zA-Z][a-zA-Z0-9_-]*$'"},
	{"description too long", mcpserver("  type: stdio\n  command: x\n  description: " + strings.Repeat("d", 501) + "\n"),
		"spec.description: Too long: may not be more than 500 bytes"},
	{"auth type unknown", mcpserver("  type: sse\n  url: https://example.com/mcp\n  auth: {type: basic}\n"),
		"spec.auth.type: Unsupported value: \"basic\": supported values: \"oauth\", \"none\""},
	{"issuer not https", mcpserver("  type: sse\n  url: https://example.com/mcp\n  auth:\n    type: oauth\n    authorizationServer: {issuer: http://issuer.example.com}\n"),
		"spec.auth.authorizationServer.issuer: Invalid value: \"http://issuer.example.com\": spec.auth.authorizationServer.issuer in body should match"},
	{"family without instanceArg", mcpserver("  type: stdio\n  command: x\n  family: {name: kubernetes}\n"),
		"spec.family.instanceArg: Required value"},
	{"secret ref without name", mcpserver("  type: sse\n  url: https://example.com/mcp\n  auth:\n    tokenExchange:\n      clientCredentialsSecretRef: {namespace: x}\n"),
		"spec.auth.tokenExchange.clientCredentialsSecretRef.name: Required value"},
	// Workflow: CEL rules.
	{"step with tool and forEach", workflow("  steps:\n  - id: a\n    tool: t\n    forEach: {items: '{{.input.xs}}', steps: [{id: b, tool: t}]}\n"),
		"spec.steps[0]: Invalid value: exactly one of tool, forEach, or parallel must be set"},
	{"step with neither", workflow("  steps:\n  - id: a\n"),
		"spec.steps[0]: Invalid value: exactly one of tool, forEach, or parallel must be set"},
	{"condition with template and tool", workflow("  steps:\n  - id: a\n    tool: t\n    condition: {template: 'true', tool: c, expect: {success: true}}\n"),
		"spec.steps[0].condition: Invalid value: exactly one of template, tool, or fromStep must be set"},
	{"tool condition without expectation", workflow("  steps:\n  - id: a\n    tool: t\n    condition: {tool: c}\n"),
		"spec.steps[0].condition: Invalid value: a tool or fromStep condition requires expect or expectNot"},
	{"sub-step condition without expectation", workflow("  steps:\n  - id: a\n    parallel:\n    - id: b\n      tool: t\n      condition: {fromStep: a}\n"),
		"spec.steps[0].parallel[0].condition: Invalid value: a tool or fromStep condition requires expect or expectNot"},
	// Workflow: markers.
	{"no steps", workflow("  description: nothing\n"),
		"spec.steps: Required value"},
	{"empty steps", workflow("  steps: []\n"),
		"spec.steps: Invalid value: 0: spec.steps in body should have at least 1 items"},
	{"step id with a space", workflow("  steps:\n  - id: a b\n    tool: t\n"),
		"spec.steps[0].id: Invalid value: \"a b\": spec.steps[0].id in body should match '^[a-zA-Z0-9_-]+$'"},
	{"step id too long", workflow("  steps:\n  - id: " + strings.Repeat("a", 64) + "\n    tool: t\n"),
		"spec.steps[0].id: Too long: may not be more than 63 bytes"},
	{"argument type unknown", workflow("  args:\n    when: {type: date}\n  steps:\n  - {id: a, tool: t}\n"),
		"spec.args.when.type: Unsupported value: \"date\": supported values: \"string\", \"integer\", \"boolean\", \"number\", \"object\", \"array\""},
	{"empty parallel group", workflow("  steps:\n  - id: a\n    parallel: []\n"),
		"spec.steps[0].parallel: Invalid value: 0: spec.steps[0].parallel in body should have at least 1 items"},
	{"forEach without items", workflow("  steps:\n  - id: a\n    forEach: {items: '', steps: [{id: b, tool: t}]}\n"),
		"spec.steps[0].forEach.items: Invalid value: \"\": spec.steps[0].forEach.items in body should be at least 1 chars long"},
	{"sub-step without tool", workflow("  steps:\n  - {id: a, tool: t}\n  onFailure:\n  - id: undo\n"),
		"spec.onFailure[0].tool: Required value"},
	{"workflow description too long", workflow("  description: " + strings.Repeat("d", 1001) + "\n  steps:\n  - {id: a, tool: t}\n"),
		"spec.description: Too long: may not be more than 1000 bytes"},
}

// testInvalidResourcesAreRejected creates each invalid document and
// requires the API server to refuse it, naming the field and the rule.
func testInvalidResourcesAreRejected(t *testing.T, cp *kubetest.ControlPlane) {
	ns := namespace(t, cp, "invalid")
	for _, tc := range invalidCases {
		t.Run(tc.name, func(t *testing.T) {
			objects := documents(t, []byte(tc.doc))
			require.Len(t, objects, 1)
			obj := objects[0]
			obj.SetNamespace(ns)
			err := cp.Client.Create(t.Context(), obj)
			require.Error(t, err, "the API server accepted:\n%s", tc.doc)
			t.Log(err)
			assert.Contains(t, err.Error(), tc.reason)
			assert.Contains(t, err.Error(), fmt.Sprintf("%s.muster.giantswarm.io %q is invalid", obj.GetKind(), "bad"))
		})
	}

	t.Run("unknown field under strict validation", func(t *testing.T) {
		obj := documents(t, []byte(mcpserver("  type: stdio\n  comand: x\n  command: x\n")))[0]
		obj.SetNamespace(ns)
		err := cp.Client.Create(t.Context(), obj, client.FieldValidation("Strict"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown field "spec.comand"`)
	})
}

// testStatusSubresource checks what the Kubernetes watcher and the status
// writer rely on: status is written only through /status, a status write
// leaves metadata.generation alone, and a spec change raises it.
func testStatusSubresource(t *testing.T, cp *kubetest.ControlPlane) {
	ctx := t.Context()
	ns := namespace(t, cp, "status")
	server := &musterv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: ns},
		Spec:       musterv1alpha1.MCPServerSpec{Type: musterv1alpha1.MCPServerTypeStdio, Command: "git-mcp"},
	}
	require.NoError(t, cp.Client.Create(ctx, server))
	require.Equal(t, int64(1), server.Generation)

	server.Status = &musterv1alpha1.MCPServerStatus{
		State:              musterv1alpha1.MCPServerStateRunning,
		ObservedGeneration: server.Generation,
		ToolCount:          1,
		Tools:              []string{"x_git_log"},
		Conditions: []metav1.Condition{{
			Type: musterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Running",
			LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
		}},
	}
	require.NoError(t, cp.Client.Status().Update(ctx, server))

	var got musterv1alpha1.MCPServer
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(server), &got))
	assert.Equal(t, int64(1), got.Generation, "a status write does not change the generation")
	assert.Equal(t, musterv1alpha1.MCPServerStateRunning, got.Status.State)
	assert.Equal(t, int64(1), got.Status.ObservedGeneration)
	require.Len(t, got.Status.Conditions, 1)
	assert.Equal(t, musterv1alpha1.ConditionReady, got.Status.Conditions[0].Type)

	got.Spec.Command = "git-mcp-2"
	got.Status.State = musterv1alpha1.MCPServerStateFailed
	require.NoError(t, cp.Client.Update(ctx, &got))
	var again musterv1alpha1.MCPServer
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(server), &again))
	assert.Equal(t, int64(2), again.Generation, "a spec change raises the generation")
	assert.Equal(t, "git-mcp-2", again.Spec.Command)
	assert.Equal(t, musterv1alpha1.MCPServerStateRunning, again.Status.State, "an update of the object ignores its status")

	bad := again.DeepCopy()
	bad.Status.Conditions[0].Reason = "not a reason"
	err := cp.Client.Status().Update(ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "status.conditions[0].reason", "conditions are validated as metav1.Condition")
}

// testKubectlShowsPrinterColumns runs the built kubectl against the API
// server: `kubectl get mcps` and `kubectl get wf` show the printer columns.
func testKubectlShowsPrinterColumns(t *testing.T, cp *kubetest.ControlPlane) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns := namespace(t, cp, "columns")

	servers := []struct {
		spec   musterv1alpha1.MCPServerSpec
		name   string
		status musterv1alpha1.MCPServerStatus
	}{
		{name: "git-tools", spec: musterv1alpha1.MCPServerSpec{Type: musterv1alpha1.MCPServerTypeStdio, Command: "npx", AutoStart: true},
			status: musterv1alpha1.MCPServerStatus{State: musterv1alpha1.MCPServerStateRunning, ToolCount: 12}},
		{name: "remote-api-tools", spec: musterv1alpha1.MCPServerSpec{Type: musterv1alpha1.MCPServerTypeStreamableHTTP, URL: "https://api.example.com/mcp"},
			status: musterv1alpha1.MCPServerStatus{State: musterv1alpha1.MCPServerStateConnected, ToolCount: 3}},
	}
	for _, s := range servers {
		obj := &musterv1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: ns}, Spec: s.spec}
		require.NoError(t, cp.Client.Create(ctx, obj))
		obj.Status = &s.status
		require.NoError(t, cp.Client.Status().Update(ctx, obj))
	}
	wf := &musterv1alpha1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-application", Namespace: ns},
		Spec: musterv1alpha1.WorkflowSpec{Steps: []musterv1alpha1.WorkflowStep{
			{ID: "build", Tool: "docker_build"}, {ID: "deploy", Tool: "kubectl_apply"},
		}},
	}
	require.NoError(t, cp.Client.Create(ctx, wf))
	wf.Status = &musterv1alpha1.WorkflowStatus{Valid: true, StepCount: 2}
	require.NoError(t, cp.Client.Status().Update(ctx, wf))

	get := func(args ...string) []string {
		t.Helper()
		out, err := cp.Kubectl(ctx, t, nil, append([]string{"--namespace", ns, "get"}, args...)...)
		require.NoError(t, err)
		t.Logf("$ kubectl get %s\n%s", strings.Join(args, " "), out)
		return strings.Split(strings.TrimRight(out, "\n"), "\n")
	}

	lines := get("mcps")
	require.Len(t, lines, 3)
	assert.Equal(t, []string{"NAME", "TYPE", "STATE", "TOOLS", "AGE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"git-tools", "stdio", "Running", "12"}, strings.Fields(lines[1])[:4])
	assert.Equal(t, []string{"remote-api-tools", "streamable-http", "Connected", "3"}, strings.Fields(lines[2])[:4])

	lines = get("mcps", "-o", "wide")
	assert.Equal(t, []string{"NAME", "TYPE", "STATE", "TOOLS", "AGE", "URL", "AUTOSTART"}, strings.Fields(lines[0]))

	lines = get("wf")
	require.Len(t, lines, 2)
	assert.Equal(t, []string{"NAME", "VALID", "STEPS", "AGE"}, strings.Fields(lines[0]))
	assert.Equal(t, []string{"deploy-application", "true", "2"}, strings.Fields(lines[1])[:3])
}
