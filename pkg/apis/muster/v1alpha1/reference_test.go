package v1alpha1

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
)

// referenceDir holds muster's CRDs and examples, beside the repository.
const referenceDir = "../../../../../shared/reference"

func referenceFiles(t testing.TB, pattern string) []string {
	files, err := filepath.Glob(filepath.Join(referenceDir, pattern))
	require.NoError(t, err)
	if len(files) == 0 {
		t.Skipf("no muster reference files %s in %s", pattern, referenceDir)
	}
	return files
}

func TestReferenceExamplesDecodeAndRoundTrip(t *testing.T) {
	for _, file := range referenceFiles(t, "*.yaml") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			docs, err := DecodeFile(file, data)
			require.NoError(t, err)
			require.NotEmpty(t, docs)
			for _, doc := range docs {
				require.NoError(t, doc.Err)
				assert.Empty(t, doc.Object.Validate(), "a decoded object stays valid after defaulting")

				encoded, err := json.Marshal(doc.Object)
				require.NoError(t, err)
				again, err := DecodeFile("roundtrip.json", encoded)
				require.NoError(t, err)
				require.Len(t, again, 1)
				require.NoError(t, again[0].Err)
				assert.Equal(t, doc.Object, again[0].Object)
				assert.Equal(t, doc.Hash, again[0].Hash)
				assert.Equal(t, doc.Key(), again[0].Key())
			}
		})
	}
}

func TestReferenceExampleValues(t *testing.T) {
	files := referenceFiles(t, "mcpserver-example.yaml")
	data, err := os.ReadFile(files[0])
	require.NoError(t, err)
	docs, err := DecodeFile("mcpserver-example.yaml", data)
	require.NoError(t, err)
	byName := map[string]*MCPServer{}
	for _, d := range docs {
		byName[d.Name] = d.Object.(*MCPServer)
	}

	git := byName["git-tools"]
	assert.Equal(t, MCPServerSpec{
		Type: MCPServerTypeStdio, AutoStart: true, Command: "npx",
		Args:        []string{"@modelcontextprotocol/server-git"},
		Env:         map[string]string{"GIT_ROOT": "/workspace", "LOG_LEVEL": "info"},
		Description: "Git tools MCP server for repository operations",
		Timeout:     DefaultMCPServerTimeout,
	}, git.Spec)
	assert.Equal(t, APIVersion, git.APIVersion)
	assert.Equal(t, KindMCPServer, git.Kind)

	sse := byName["remote-sse-tools"]
	assert.Equal(t, 60, sse.Spec.Timeout)
	assert.Equal(t, "remote_", sse.Spec.ToolPrefix)

	k8s := byName["mcp-kubernetes"].Spec.Auth
	assert.Equal(t, &MCPServerAuth{Type: AuthTypeOAuth, ForwardToken: true, RequiredAudiences: []string{"dex-k8s-authenticator"}}, k8s)

	files = referenceFiles(t, "workflow-complex-example.yaml")
	data, err = os.ReadFile(files[0])
	require.NoError(t, err)
	docs, err = DecodeFile("workflow-complex-example.yaml", data)
	require.NoError(t, err)
	wf := docs[0].Object.(*Workflow)
	require.Len(t, wf.Spec.Steps, 4)
	rollback := wf.Spec.Steps[3]
	assert.Equal(t, &WorkflowCondition{FromStep: "apply_migration", Expect: &WorkflowConditionExpectation{Success: new(false)}}, rollback.Condition,
		"an explicit success: false survives, unlike an omitted one")
	assert.Equal(t, `false`, string(wf.Spec.Args["dry_run"].Default.Raw))
	assert.True(t, wf.Spec.Steps[2].AllowFailure)
}

// TestTypesMatchReferenceCRDs walks each reference CRD's schema beside the
// Go type it describes and requires the same field names at every level,
// the same required fields, and the same enum values.
func TestTypesMatchReferenceCRDs(t *testing.T) {
	roots := map[string]reflect.Type{"MCPServer": mcpServerType, "Workflow": workflowType}
	for _, file := range referenceFiles(t, "crds/*.yaml") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var crd struct {
				Spec struct {
					Names    struct{ Kind string }
					Versions []struct {
						Name   string
						Schema struct {
							OpenAPIV3Schema map[string]any `yaml:"openAPIV3Schema"`
						}
					}
				}
			}
			require.NoError(t, yaml.Unmarshal(data, &crd))
			root := roots[crd.Spec.Names.Kind]
			require.NotNil(t, root, crd.Spec.Names.Kind)
			require.Len(t, crd.Spec.Versions, 1)
			assert.Equal(t, GroupVersion.Version, crd.Spec.Versions[0].Name)
			compareSchema(t, crd.Spec.Versions[0].Schema.OpenAPIV3Schema, root, crd.Spec.Names.Kind)
		})
	}
}

// enumValues lists each enum type's constants, which validation accepts.
var enumValues = map[reflect.Type][]string{
	reflect.TypeFor[MCPServerType](): {string(MCPServerTypeStdio), string(MCPServerTypeStreamableHTTP), string(MCPServerTypeSSE)},
	reflect.TypeFor[MCPServerState](): {
		string(MCPServerStateRunning), string(MCPServerStateStarting), string(MCPServerStateStopped),
		string(MCPServerStateConnected), string(MCPServerStateAuthRequired), string(MCPServerStateConnecting),
		string(MCPServerStateDisconnected), string(MCPServerStateFailed),
	},
	reflect.TypeFor[AuthType](): {string(AuthTypeOAuth), string(AuthTypeNone)},
	reflect.TypeFor[ArgType](): {
		string(ArgTypeString), string(ArgTypeInteger), string(ArgTypeBoolean),
		string(ArgTypeNumber), string(ArgTypeObject), string(ArgTypeArray),
	},
}

func compareSchema(t *testing.T, schema map[string]any, typ reflect.Type, path string) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if want, ok := enumValues[typ]; ok {
		var got []string
		for _, v := range schema["enum"].([]any) {
			got = append(got, v.(string))
		}
		assert.ElementsMatch(t, want, got, "%s: enum", path)
	}
	switch {
	case typ == jsonValueType || strings.HasPrefix(typ.PkgPath(), "k8s.io/"):
		return // free-form values and Kubernetes' own types
	case typ.Kind() == reflect.Struct:
		props, _ := schema["properties"].(map[string]any)
		fields := jsonFields(typ)
		var want []string
		for name := range fields {
			if name != "observedGeneration" && !slices.Contains(musterdStatusFields[path], name) { // musterd's additions
				want = append(want, name)
			}
		}
		assert.ElementsMatch(t, slices.Collect(maps.Keys(props)), want, "%s: fields", path)
		var required []string
		reqs, _ := schema["required"].([]any)
		for _, r := range reqs {
			required = append(required, r.(string))
		}
		assert.ElementsMatch(t, required, requiredFields(typ), "%s: required fields", path)
		for name, prop := range props {
			if ft, ok := fields[name]; ok {
				compareSchema(t, prop.(map[string]any), ft, path+"."+name)
			}
		}
	case typ.Kind() == reflect.Map:
		compareSchema(t, schema["additionalProperties"].(map[string]any), typ.Elem(), path+"[*]")
	case typ.Kind() == reflect.Slice:
		compareSchema(t, schema["items"].(map[string]any), typ.Elem(), path+"[]")
	}
}

// musterdStatusFields are the status fields musterd adds to muster's CRDs,
// by path: what it observes of what runs.
var musterdStatusFields = map[string][]string{
	"MCPServer.status": {"tools", "toolCount", "override", "lastFailure", "lastFailureTime", "warnings", "protocolVersion"}, // override: an operator's stop/start; the last failure kept apart from lastError; warnings: the fields musterd ignored; protocolVersion: the MCP generation agreed with the server
	"Workflow.status":  {"missingTools", "warnings"},
}

// alwaysWritten are fields without omitempty that are optional all the
// same (marked +optional): musterd writes them even when false.
var alwaysWritten = map[string]bool{"WorkflowStatus.Valid": true}

// requiredFields are the fields of typ whose json tag lacks omitempty.
func requiredFields(typ reflect.Type) []string {
	var required []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && !strings.Contains(opts, "omitempty") && !alwaysWritten[typ.Name()+"."+f.Name] {
			required = append(required, name)
		}
	}
	return required
}
