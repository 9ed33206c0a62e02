package v1alpha1

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidateWithoutAFileNamesFieldsOnly(t *testing.T) {
	server := &MCPServer{Spec: MCPServerSpec{
		Type:    MCPServerTypeSSE,
		Args:    []string{"x"},
		Timeout: 500,
		Auth:    &MCPServerAuth{AuthorizationServer: &AuthorizationServerConfig{Issuer: "https://auth.example.com"}},
	}}
	assert.EqualError(t, server.Validate().Err(), "spec.url: required when type is streamable-http or sse\n"+
		"spec.args: only allowed when type is stdio\n"+
		"spec.timeout: must be between 1 and 300 seconds, got 500\n"+
		"spec.auth.authorizationServer: only valid when type is oauth")

	wf := &Workflow{Spec: WorkflowSpec{
		Args: map[string]ArgDefinition{"b": {Type: "text"}, "a": {}},
		Steps: []WorkflowStep{
			{ID: "x", Tool: "t"},
			{ID: "y", ForEach: &WorkflowForEach{Items: "{{ .input.xs }}", Steps: []WorkflowSubStep{{ID: "x", Tool: "t"}}}},
		},
	}}
	assert.EqualError(t, wf.Validate().Err(), "spec.args[a].type: required\n"+
		`spec.args[b].type: unsupported value "text": must be one of "string", "integer", "boolean", "number", "object", "array"`+"\n"+
		`spec.steps[1].forEach.steps[0].id: duplicate step id "x" (first used at spec.steps[0].id)`)
}

func TestValidateAcceptsObjectsBeforeAndAfterDefault(t *testing.T) {
	server := &MCPServer{Spec: MCPServerSpec{Type: MCPServerTypeStdio, Command: "npx"}}
	assert.Empty(t, server.Validate(), "unset fields are not checked against their bounds")
	server.Default()
	assert.Equal(t, DefaultMCPServerTimeout, server.Spec.Timeout)
	assert.Empty(t, server.Validate())

	wf := &Workflow{Spec: WorkflowSpec{Steps: []WorkflowStep{{ID: "a", Tool: "t"}}}}
	assert.Empty(t, wf.Validate())
	wf.Default()
	assert.Empty(t, wf.Validate())
}

func TestSchemeKnowsTheKinds(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, AddToScheme(scheme))
	for kind, want := range map[string]runtime.Object{
		KindMCPServer: &MCPServer{}, "MCPServerList": &MCPServerList{},
		KindWorkflow: &Workflow{}, "WorkflowList": &WorkflowList{},
	} {
		obj, err := scheme.New(GroupVersion.WithKind(kind))
		require.NoError(t, err, kind)
		assert.IsType(t, want, obj)
	}
	gvks, _, err := scheme.ObjectKinds(&MCPServer{})
	require.NoError(t, err)
	assert.Equal(t, APIVersion, gvks[0].GroupVersion().String())
}

func TestDeepCopySharesNothing(t *testing.T) {
	src := workflowHeader + `  args:
    n:
      type: integer
      default: 3
  steps:
  - id: a
    tool: t
    args: {x: [1, 2]}
    output: true
    condition:
      tool: check
      expect: {success: true, jsonPath: {"$.ok": true}}
  - id: b
    parallel:
    - id: c
      tool: t
`
	docs, err := DecodeFile("deploy.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	orig := docs[0].Object.(*Workflow)
	orig.Status = &WorkflowStatus{Conditions: []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}}}
	before, err := json.Marshal(orig)
	require.NoError(t, err)

	cp := orig.DeepCopyObject().(*Workflow)
	require.Equal(t, orig, cp)
	cp.Spec.Args["n"].Default.Raw[0] = '4'
	cp.Spec.Steps[0].Args["x"].Raw[1] = '9'
	*cp.Spec.Steps[0].Output = false
	*cp.Spec.Steps[0].Condition.Expect.Success = false
	cp.Spec.Steps[0].Condition.Expect.JSONPath["$.ok"].Raw[0] = 'f'
	cp.Spec.Steps[1].Parallel[0].Tool = "other"
	cp.Status.Conditions[0].Status = metav1.ConditionFalse

	after, err := json.Marshal(orig)
	require.NoError(t, err)
	assert.JSONEq(t, string(before), string(after))
}
