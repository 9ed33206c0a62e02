package v1alpha1

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/events"
)

const stdioServer = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git
spec:
  type: stdio
  command: npx
`

const remoteHeader = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: api
spec:
  type: streamable-http
`

const workflowHeader = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: deploy
spec:
`

// billionLaughs is the classic alias bomb: 9 levels of 9 aliases, a few
// hundred bytes that expand to 9^9 (387 million) strings.
const billionLaughs = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: lol
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

// problems decodes src and returns the file's error or else the errors of
// its documents, and whether the file as a whole failed.
func problems(t *testing.T, path, src string) (msg string, fileFailed bool) {
	t.Helper()
	docs, err := DecodeFile(path, []byte(src))
	if err != nil {
		assert.Nil(t, docs)
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, path, fe.File)
		return err.Error(), true
	}
	var msgs []string
	for _, d := range docs {
		if d.Err != nil {
			assert.Nil(t, d.Object, "a document with an error has no object")
			var fe *FieldError
			require.ErrorAs(t, d.Err, &fe)
			assert.Equal(t, path, fe.File)
			msgs = append(msgs, d.Err.Error())
		}
	}
	return strings.Join(msgs, "\n"), false
}

func TestDecodeFileRejectsBadInput(t *testing.T) {
	tests := []struct {
		name       string
		path       string // default mcpservers/git.yaml
		src        string
		want       string
		fileFailed bool
	}{
		// Unknown fields that likely misspell a field whose absence is a
		// problem (the others are warnings: unknown_test.go).
		{name: "unknown field in spec, with suggestion",
			src: strings.Replace(stdioServer, "command:", "comand:", 1),
			want: "mcpservers/git.yaml:6: spec.command: required when type is stdio\n" +
				`mcpservers/git.yaml:7: spec.comand: unknown field (did you mean "command"?)`},
		{name: "field name in the wrong case",
			src: strings.Replace(stdioServer, "command:", "Command:", 1),
			want: "mcpservers/git.yaml:6: spec.command: required when type is stdio\n" +
				`mcpservers/git.yaml:7: spec.Command: unknown field (did you mean "command"?)`},
		{name: "metadata field of the API server",
			src:  strings.Replace(stdioServer, "  name: git\n", "  name: git\n  uid: 1234\n", 1),
			want: `mcpservers/git.yaml:5: metadata.uid: not allowed in definition files, whose metadata holds only name, namespace, labels and annotations`},
		{name: "status in a definition file",
			src:  stdioServer + "status:\n  state: Running\n",
			want: `mcpservers/git.yaml:8: status: not allowed in definition files: musterd keeps status apart from definitions`},
		{name: "headers value that is not a string",
			src:  remoteHeader + "  url: https://api.example.com/mcp\n  headers:\n    X-Token:\n      value: abc\n",
			want: `mcpservers/git.yaml:10: spec.headers[X-Token]: expected string, got object`},
		{name: "unknown field deep in auth",
			src: remoteHeader + "  url: https://api.example.com/mcp\n  auth:\n    tokenExchange:\n" +
				"      clientCredentialsSecretRef:\n        nmae: creds\n",
			want: "mcpservers/git.yaml:10: spec.auth.tokenExchange.clientCredentialsSecretRef.name: required\n" +
				`mcpservers/git.yaml:11: spec.auth.tokenExchange.clientCredentialsSecretRef.nmae: unknown field (did you mean "name"?)`},
		{name: "unknown field in the third step",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n  - id: b\n    tool: t\n  - id: c\n    tol: t\n",
			want: "workflows/deploy.yaml:11: spec.steps[2]: exactly one of tool, forEach, or parallel must be set, got none\n" +
				`workflows/deploy.yaml:12: spec.steps[2].tol: unknown field (did you mean "tool"?)`},

		// Wrong types.
		{name: "string for an integer",
			src:  stdioServer + "  timeout: \"30\"\n",
			want: `mcpservers/git.yaml:8: spec.timeout: expected integer, got string`},
		{name: "fraction for an integer",
			src:  stdioServer + "  timeout: 2.5\n",
			want: `mcpservers/git.yaml:8: spec.timeout: expected integer, got number`},
		{name: "YAML 1.1 boolean is a string",
			src:  stdioServer + "  autoStart: yes\n",
			want: `mcpservers/git.yaml:8: spec.autoStart: expected boolean, got string`},
		{name: "string for a list",
			src:  stdioServer + "  args: --verbose\n",
			want: `mcpservers/git.yaml:8: spec.args: expected array, got string`},
		{name: "number for an environment value",
			src:  stdioServer + "  env:\n    PORT: 8080\n",
			want: `mcpservers/git.yaml:9: spec.env[PORT]: expected string, got integer`},
		{name: "null list item",
			src:  stdioServer + "  args: [a, ~]\n",
			want: `mcpservers/git.yaml:8: spec.args[1]: expected string, got null`},
		{name: "integer beyond int64",
			src:  stdioServer + "  timeout: 18446744073709551615\n",
			want: `mcpservers/git.yaml:8: spec.timeout: integer 18446744073709551615 is out of range`},
		{name: "spec that is not a mapping",
			src:  "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec: [stdio]\n",
			want: `mcpservers/git.yaml:3: spec: expected object, got array`},

		// MCPServer rules.
		{name: "bad type enum",
			src:  strings.Replace(stdioServer, "type: stdio", "type: http", 1),
			want: `mcpservers/git.yaml:6: spec.type: unsupported value "http": must be one of "stdio", "streamable-http", "sse"`},
		{name: "missing type",
			src:  "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nspec:\n  command: npx\n",
			want: `mcpservers/git.yaml:3: spec.type: required`},
		{name: "stdio without command",
			src:  strings.Replace(stdioServer, "  command: npx\n", "", 1),
			want: `mcpservers/git.yaml:6: spec.command: required when type is stdio`},
		{name: "null means unset",
			src:  strings.Replace(stdioServer, "command: npx", "command: ~", 1),
			want: `mcpservers/git.yaml:6: spec.command: required when type is stdio`},
		{name: "remote without url",
			src:  remoteHeader,
			want: `mcpservers/git.yaml:6: spec.url: required when type is streamable-http or sse`},
		{name: "url that is not http",
			src:  remoteHeader + "  url: ftp://files.example.com\n",
			want: `mcpservers/git.yaml:7: spec.url: "ftp://files.example.com" does not match ^https?://[^\s/$.?#].[^\s]*$`},
		{name: "headers on stdio",
			src:  stdioServer + "  headers:\n    Authorization: Bearer x\n",
			want: `mcpservers/git.yaml:8: spec.headers: only allowed when type is streamable-http or sse`},
		{name: "empty headers on stdio are still set",
			src:  stdioServer + "  headers: {}\n",
			want: `mcpservers/git.yaml:8: spec.headers: only allowed when type is streamable-http or sse`},
		{name: "args on a remote server",
			src:  remoteHeader + "  url: https://api.example.com/mcp\n  args: [x]\n",
			want: `mcpservers/git.yaml:8: spec.args: only allowed when type is stdio`},
		{name: "bad toolPrefix",
			src:  stdioServer + "  toolPrefix: 1git\n",
			want: `mcpservers/git.yaml:8: spec.toolPrefix: "1git" does not match ^[a-zA-Z][a-zA-Z0-9_-]*$`},
		{name: "timeout above the maximum",
			src:  stdioServer + "  timeout: 301\n",
			want: `mcpservers/git.yaml:8: spec.timeout: must be between 1 and 300 seconds, got 301`},
		{name: "explicit zero timeout is not the default",
			src:  stdioServer + "  timeout: 0\n",
			want: `mcpservers/git.yaml:8: spec.timeout: must be between 1 and 300 seconds, got 0`},
		{name: "description too long",
			src:  stdioServer + "  description: " + strings.Repeat("é", 501) + "\n",
			want: `mcpservers/git.yaml:8: spec.description: must be at most 500 characters, got 501`},
		{name: "bad auth type",
			src:  remoteHeader + "  url: https://api.example.com/mcp\n  auth:\n    type: basic\n",
			want: `mcpservers/git.yaml:9: spec.auth.type: unsupported value "basic": must be one of "oauth", "none"`},
		{name: "authorizationServer without oauth, with forwardToken",
			src: remoteHeader + "  url: https://api.example.com/mcp\n  auth:\n    forwardToken: true\n" +
				"    authorizationServer:\n      issuer: https://auth.example.com\n",
			want: "mcpservers/git.yaml:10: spec.auth.authorizationServer: only valid when type is oauth\n" +
				"mcpservers/git.yaml:10: spec.auth.authorizationServer: forwardToken bypasses per-backend OAuth; set one or the other, not both"},
		{name: "authorizationServer beside an enabled token exchange",
			src: remoteHeader + "  url: https://api.example.com/mcp\n  auth:\n    type: oauth\n    tokenExchange:\n      enabled: true\n" +
				"      dexTokenEndpoint: https://dex.example.com/token\n      connectorId: local\n" +
				"    authorizationServer:\n      issuer: https://auth.example.com/\n",
			want: "mcpservers/git.yaml:14: spec.auth.authorizationServer: tokenExchange has its own issuer/endpoint config; set one or the other, not both\n" +
				"mcpservers/git.yaml:15: spec.auth.authorizationServer.issuer: \"https://auth.example.com/\" does not match ^https://[^/?#]+(/[^?#]*[^/?#])?$"},
		{name: "enabled token exchange without endpoint and connector",
			src:  remoteHeader + "  url: https://api.example.com/mcp\n  auth:\n    tokenExchange:\n      enabled: true\n",
			want: "mcpservers/git.yaml:10: spec.auth.tokenExchange.dexTokenEndpoint: required when enabled\nmcpservers/git.yaml:10: spec.auth.tokenExchange.connectorId: required when enabled"},
		{name: "family without instanceArg",
			src:  stdioServer + "  family:\n    name: kubernetes\n",
			want: `mcpservers/git.yaml:8: spec.family.instanceArg: required`},

		// Workflow rules.
		{name: "workflow without steps",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  description: nothing to do\n",
			want: `workflows/deploy.yaml:5: spec.steps: a workflow needs at least one step`},
		{name: "workflow with an empty step list",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps: []\n",
			want: `workflows/deploy.yaml:6: spec.steps: a workflow needs at least one step`},
		{name: "duplicate step ids, nested in parallel",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: build\n    tool: t\n  - id: fan\n    parallel:\n    - id: build\n      tool: t\n",
			want: `workflows/deploy.yaml:11: spec.steps[1].parallel[0].id: duplicate step id "build" (first used at spec.steps[0].id)`},
		{name: "duplicate step ids in onFailure",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: build\n    tool: t\n  onFailure:\n  - id: build\n    tool: cleanup\n",
			want: `workflows/deploy.yaml:10: spec.onFailure[0].id: duplicate step id "build" (first used at spec.steps[0].id)`},
		{name: "step with both tool and forEach",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n    forEach:\n      items: '{{ .input.xs }}'\n      steps:\n      - id: b\n        tool: t\n",
			want: `workflows/deploy.yaml:7: spec.steps[0]: exactly one of tool, forEach, or parallel must be set, got tool and forEach`},
		{name: "step with neither tool, forEach nor parallel",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    description: idle\n",
			want: `workflows/deploy.yaml:7: spec.steps[0]: exactly one of tool, forEach, or parallel must be set, got none`},
		{name: "empty parallel group",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    parallel: []\n",
			want: `workflows/deploy.yaml:8: spec.steps[0].parallel: must have at least one step`},
		{name: "forEach without items or body",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    forEach:\n      as: x\n",
			want: "workflows/deploy.yaml:8: spec.steps[0].forEach.items: required\nworkflows/deploy.yaml:8: spec.steps[0].forEach.steps: must have at least one step"},
		{name: "sub-step without tool",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n  onFailure:\n  - id: b\n",
			want: `workflows/deploy.yaml:10: spec.onFailure[0].tool: required`},
		{name: "bad step id",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: build image\n    tool: t\n",
			want: `workflows/deploy.yaml:7: spec.steps[0].id: "build image" does not match ^[a-zA-Z0-9_-]+$`},
		{name: "condition with tool and template",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n    condition:\n      tool: check\n      template: 'true'\n",
			want: `workflows/deploy.yaml:9: spec.steps[0].condition: exactly one of template, tool, or fromStep must be set`},
		{name: "fromStep condition without expectation",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n    condition:\n      fromStep: a\n",
			want: `workflows/deploy.yaml:9: spec.steps[0].condition: a tool or fromStep condition requires expect or expectNot`},
		{name: "bad argument type",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  args:\n    name:\n      type: str\n  steps:\n  - id: a\n    tool: t\n",
			want: `workflows/deploy.yaml:8: spec.args[name].type: unsupported value "str": must be one of "string", "integer", "boolean", "number", "object", "array"`},
		{name: "argument without type",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  args:\n    name:\n      required: true\n  steps:\n  - id: a\n    tool: t\n",
			want: `workflows/deploy.yaml:7: spec.args[name].type: required`},

		// Documents and identity.
		{name: "wrong apiVersion",
			src:  strings.Replace(stdioServer, "v1alpha1", "v1beta1", 1),
			want: `mcpservers/git.yaml:1: apiVersion: unsupported value "muster.giantswarm.io/v1beta1": must be muster.giantswarm.io/v1alpha1`},
		{name: "missing apiVersion",
			src:  strings.Replace(stdioServer, "apiVersion: muster.giantswarm.io/v1alpha1\n", "", 1),
			want: `mcpservers/git.yaml:1: apiVersion: required: must be muster.giantswarm.io/v1alpha1`},
		{name: "foreign kind", fileFailed: true,
			src:  strings.Replace(stdioServer, "kind: MCPServer", "kind: Deployment", 1),
			want: `mcpservers/git.yaml:2: kind: unsupported kind "Deployment": must be MCPServer or Workflow`},
		{name: "missing kind", fileFailed: true,
			src:  "# leading comment\napiVersion: muster.giantswarm.io/v1alpha1\nspec: {}\n",
			want: `mcpservers/git.yaml:2: kind: required: must be MCPServer or Workflow`},
		{name: "document that is not a mapping", fileFailed: true,
			src:  "- a\n- b\n",
			want: `mcpservers/git.yaml:1: a document must be a mapping, got array`},
		{name: "missing name in a multi-document file", fileFailed: true,
			src:  stdioServer + "---\n" + strings.Replace(stdioServer, "metadata:\n  name: git\n", "", 1),
			want: `mcpservers/git.yaml:9: metadata.name: required in a file with more than one document`},
		{name: "invalid name", fileFailed: true,
			src:  strings.Replace(stdioServer, "name: git", "name: ../git", 1),
			want: `mcpservers/git.yaml:4: metadata.name: invalid value "../git": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "file name that is no valid default name", fileFailed: true,
			path: "mcpservers/Git Tools.yaml",
			src:  strings.Replace(stdioServer, "metadata:\n  name: git\n", "", 1),
			want: `mcpservers/Git Tools.yaml:1: metadata.name: not set, and the file name "Git Tools" is no valid default: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "invalid namespace", fileFailed: true,
			src:  strings.Replace(stdioServer, "name: git", "name: git\n  namespace: team.a", 1),
			want: `mcpservers/git.yaml:5: metadata.namespace: invalid value "team.a": must not contain dots`},
		{name: "invalid label",
			src:  strings.Replace(stdioServer, "name: git", "name: git\n  labels:\n    team: -a-", 1),
			want: `mcpservers/git.yaml:5: metadata.labels: Invalid value: "-a-": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
		{name: "the same resource twice",
			src: stdioServer + "---\n" + stdioServer,
			want: "mcpservers/git.yaml:1: MCPServer default/git is declared more than once in this file (lines 1, 9)\n" +
				"mcpservers/git.yaml:9: MCPServer default/git is declared more than once in this file (lines 1, 9)"},

		// YAML itself.
		{name: "syntax error", fileFailed: true,
			src:  stdioServer + "  args: [a, b\n",
			want: `mcpservers/git.yaml:8: invalid YAML: did not find expected ',' or ']'`},
		{name: "syntax error on the first line", fileFailed: true,
			src:  "\tapiVersion: x\n",
			want: `mcpservers/git.yaml:1: invalid YAML: found character that cannot start any token`},
		{name: "syntax error in a later document", fileFailed: true,
			src:  stdioServer + "---\nkind: [a\nname: x\n",
			want: `mcpservers/git.yaml:9: invalid YAML: did not find expected ',' or ']'`},
		{name: "unclosed quote, found by the scanner", fileFailed: true,
			src:  stdioServer + "  description: \"open\n",
			want: `mcpservers/git.yaml:8: invalid YAML: found unexpected end of stream`},
		{name: "bad indentation", fileFailed: true,
			src:  stdioServer + "- x\n",
			want: `mcpservers/git.yaml:8: invalid YAML: did not find expected key`},
		{name: "unknown anchor", fileFailed: true,
			src:  stdioServer + "  args: [*nope]\n",
			want: `mcpservers/git.yaml:8: invalid YAML: unknown anchor 'nope' referenced`},
		{name: "duplicate key", fileFailed: true,
			src:  stdioServer + "  command: uvx\n",
			want: `mcpservers/git.yaml:8: duplicate key "command" (first at line 7)`},
		{name: "mapping as a key", fileFailed: true,
			src:  stdioServer + "  ? {a: b}\n  : c\n",
			want: `mcpservers/git.yaml:8: a mapping key must be a string, not a nested mapping or list`},
		{name: "unsupported tag", fileFailed: true,
			src:  stdioServer + "  description: !secret x\n",
			want: `mcpservers/git.yaml:8: unsupported YAML tag !secret`},
		{name: "not a finite number", fileFailed: true,
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n    args:\n      x: .nan\n",
			want: `workflows/deploy.yaml:10: .nan is not a finite number, which JSON cannot hold`},
		{name: "nesting deeper than JSON allows",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  steps:\n  - id: a\n    tool: t\n    args:\n      x: " + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + "\n",
			want: `workflows/deploy.yaml:1: cannot decode: invalid character '[' exceeded max depth`},
		{name: "not UTF-8", fileFailed: true,
			src:  stdioServer + "  description: \xff\n",
			want: `mcpservers/git.yaml:8: not UTF-8 text`},
		{name: "control character", fileFailed: true,
			src:  stdioServer + "  description: a\x01b\n",
			want: `mcpservers/git.yaml:8: character U+0001 is not allowed in YAML`},
		{name: "billion laughs", fileFailed: true,
			src:  billionLaughs,
			want: `mcpservers/git.yaml:9: aliases expand to more than 10000 values (an alias bomb?)`},
		{name: "alias inside its own anchor", fileFailed: true,
			src:  stdioServer + "  args: &x [a, *x]\n",
			want: `mcpservers/git.yaml:8: alias *x refers to its own anchor`},
		{name: "merge of a scalar", fileFailed: true,
			src:  stdioServer + "  <<: x\n",
			want: `mcpservers/git.yaml:8: a merge key (<<) takes a mapping or a list of mappings, got string`},
		{name: "oversize file", fileFailed: true,
			src:  stdioServer + "  description: " + strings.Repeat("x", MaxFileSize),
			want: fmt.Sprintf("mcpservers/git.yaml: file is %d bytes, more than the limit of 4194304", len(stdioServer)+len("  description: ")+MaxFileSize)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = "mcpservers/git.yaml"
			}
			got, fileFailed := problems(t, path, tt.src)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.fileFailed, fileFailed, "whole file failed")
		})
	}
}

func TestDecodeFileKeepsGoodDocumentsBesideABadOne(t *testing.T) {
	src := "# servers\n" + stdioServer +
		"---\n# nothing here\n---\n" +
		strings.NewReplacer("name: git", "name: broken", "command: npx", "comand: npx").Replace(stdioServer) +
		"---\n" +
		strings.NewReplacer("name: deploy", "name: deploy\n  namespace: team-a").Replace(workflowHeader) + "  steps:\n  - id: a\n    tool: t\n" +
		"---\n"
	docs, err := DecodeFile("all.yaml", []byte(src))
	require.NoError(t, err)
	require.Len(t, docs, 3, "the empty documents are skipped")

	assert.Equal(t, events.NewKey(KindMCPServer, "default", "git"), docs[0].Key())
	assert.Equal(t, 2, docs[0].Line)
	require.NoError(t, docs[0].Err)
	assert.Equal(t, "npx", docs[0].Object.(*MCPServer).Spec.Command)

	assert.Equal(t, events.NewKey(KindMCPServer, "default", "broken"), docs[1].Key(), "a bad document keeps its identity")
	assert.Equal(t, 12, docs[1].Line)
	assert.EqualError(t, docs[1].Err, "all.yaml:17: spec.command: required when type is stdio\n"+
		`all.yaml:18: spec.comand: unknown field (did you mean "command"?)`)
	assert.Nil(t, docs[1].Object)
	assert.NotEmpty(t, docs[1].Hash)

	assert.Equal(t, events.NewKey(KindWorkflow, "team-a", "deploy"), docs[2].Key())
	require.NoError(t, docs[2].Err)
	wf := docs[2].Object.(*Workflow)
	assert.Equal(t, "team-a", wf.Namespace)
	assert.Equal(t, "deploy", wf.Name)
}

func TestDecodeFileDefaultsIdentity(t *testing.T) {
	src := strings.Replace(stdioServer, "metadata:\n  name: git\n", "", 1)
	docs, err := DecodeFile("config/mcpservers/git-tools.yml", []byte("---\n"+src+"---\n# trailing\n"))
	require.NoError(t, err)
	require.Len(t, docs, 1)
	require.NoError(t, docs[0].Err)
	assert.Equal(t, events.NewKey(KindMCPServer, "default", "git-tools"), docs[0].Key(), "name from the file stem, namespace default")
	assert.Equal(t, "git-tools", docs[0].Object.GetName())
	assert.Equal(t, "default", docs[0].Object.GetNamespace())
}

func TestDecodeFileOfNoDocuments(t *testing.T) {
	for _, src := range []string{"", "# only a comment\n", "---\n---\n", "~\n"} {
		docs, err := DecodeFile("empty.yaml", []byte(src))
		require.NoError(t, err, "%q", src)
		assert.Empty(t, docs, "%q", src)
	}
}

func TestDecodeFileAppliesDefaults(t *testing.T) {
	src := remoteHeader + "  url: https://api.example.com/mcp\n  auth:\n    tokenExchange:\n      enabled: true\n" +
		"      dexTokenEndpoint: https://dex.example.com/token\n      connectorId: local\n" +
		"      clientCredentialsSecretRef:\n        name: creds\n"
	docs, err := DecodeFile("api.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	spec := docs[0].Object.(*MCPServer).Spec
	assert.Equal(t, 30, spec.Timeout)
	assert.Equal(t, AuthTypeNone, spec.Auth.Type)
	assert.Equal(t, "openid profile email groups", spec.Auth.TokenExchange.Scopes)
	assert.Equal(t, &ClientCredentialsSecretRef{Name: "creds", ClientIDKey: "client-id", ClientSecretKey: "client-secret"},
		spec.Auth.TokenExchange.ClientCredentialsSecretRef)

	docs, err = DecodeFile("deploy.yaml", []byte(workflowHeader+"  steps:\n  - id: loop\n    forEach:\n      items: '{{ .input.xs }}'\n      steps:\n      - id: a\n        tool: t\n"))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	assert.Equal(t, "item", docs[0].Object.(*Workflow).Spec.Steps[0].ForEach.As)
}

func TestDecodeFileExpandsAnchorsAndMergeKeys(t *testing.T) {
	src := workflowHeader + `  steps:
  - id: a
    tool: kubectl
    args: &common
      namespace: prod
      timeout: 5m
  - id: b
    tool: kubectl
    args:
      <<: *common
      timeout: 10m
  - id: c
    tool: kubectl
    args: *common
`
	docs, err := DecodeFile("deploy.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	steps := docs[0].Object.(*Workflow).Spec.Steps
	assert.Equal(t, map[string]JSON{"namespace": {Raw: []byte(`"prod"`)}, "timeout": {Raw: []byte(`"10m"`)}}, steps[1].Args,
		"a key of the mapping itself wins over a merged one")
	assert.Equal(t, steps[0].Args, steps[2].Args)
}

func TestDocumentHash(t *testing.T) {
	hash := func(src string) string {
		t.Helper()
		docs, err := DecodeFile("git.yaml", []byte(src))
		require.NoError(t, err)
		require.Len(t, docs, 1)
		return docs[0].Hash
	}
	base := hash(stdioServer + "  env:\n    A: \"1\"\n    B: \"2\"\n")
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, base)

	same := map[string]string{
		"comments and blank lines": "# the git server\n" + stdioServer + "\n  # env\n  env:\n    A: \"1\"   # one\n    B: \"2\"\n",
		"flow style and quoting":   strings.Replace(stdioServer, "command: npx", `command: "npx"`, 1) + "  env: {A: '1', B: \"2\"}\n",
		"key order":                "kind: MCPServer\napiVersion: muster.giantswarm.io/v1alpha1\nspec:\n  env:\n    B: \"2\"\n    A: \"1\"\n  command: npx\n  type: stdio\nmetadata:\n  name: git\n",
		"a default spelled out":    stdioServer + "  timeout: 30\n  autoStart: false\n  env:\n    A: \"1\"\n    B: \"2\"\n",
		"default name spelled out": strings.Replace(stdioServer, "  name: git\n", "  name: git\n  namespace: default\n", 1) + "  env:\n    A: \"1\"\n    B: \"2\"\n",
	}
	for name, src := range same {
		assert.Equal(t, base, hash(src), name)
	}

	different := map[string]string{
		"an env value":  stdioServer + "  env:\n    A: \"1\"\n    B: \"3\"\n",
		"a spec field":  stdioServer + "  env:\n    A: \"1\"\n    B: \"2\"\n  autoStart: true\n",
		"a label":       strings.Replace(stdioServer, "  name: git\n", "  name: git\n  labels:\n    team: a\n", 1) + "  env:\n    A: \"1\"\n    B: \"2\"\n",
		"the namespace": strings.Replace(stdioServer, "  name: git\n", "  name: git\n  namespace: other\n", 1) + "  env:\n    A: \"1\"\n    B: \"2\"\n",
	}
	for name, src := range different {
		assert.NotEqual(t, base, hash(src), name)
	}

	broken := strings.Replace(stdioServer, "command:", "comand:", 1)
	assert.Equal(t, hash(broken), hash("# comment\n"+broken), "a document with errors hashes stably too")
	assert.NotEqual(t, hash(broken), hash(strings.Replace(broken, "npx", "uvx", 1)))
}

func TestAliasReuseWithinTheBudget(t *testing.T) {
	// 99 aliases of a 100-value anchor: 9,900 values through aliases.
	var b strings.Builder
	b.WriteString(stdioServer + "  env: &env\n")
	for i := range 100 {
		fmt.Fprintf(&b, "    K%d: v\n", i)
	}
	b.WriteString("---\n" + workflowHeader + "  steps:\n")
	for i := range 99 {
		fmt.Fprintf(&b, "  - id: s%d\n    tool: t\n    args: *env\n", i)
	}
	docs, err := DecodeFile("many.yaml", []byte(b.String()))
	require.NoError(t, err)
	require.Len(t, docs, 2)
	require.NoError(t, docs[1].Err)
	assert.Len(t, docs[1].Object.(*Workflow).Spec.Steps[98].Args, 100)
}

func TestFieldErrorFormats(t *testing.T) {
	assert.Equal(t, "f.yaml:3: spec.x: bad", (&FieldError{File: "f.yaml", Line: 3, Field: "spec.x", Msg: "bad"}).Error())
	assert.Equal(t, "f.yaml:3: bad", (&FieldError{File: "f.yaml", Line: 3, Msg: "bad"}).Error())
	assert.Equal(t, "f.yaml: bad", (&FieldError{File: "f.yaml", Msg: "bad"}).Error())
	assert.Equal(t, "spec.x: bad", (&FieldError{Field: "spec.x", Msg: "bad"}).Error())

	errs := FieldErrors{{Field: "a", Msg: "x"}, {Field: "b", Msg: "y"}}
	assert.EqualError(t, errs.Err(), "a: x\nb: y")
	var fe *FieldError
	require.True(t, errors.As(errs.Err(), &fe))
	assert.Equal(t, "a", fe.Field)
	assert.NoError(t, FieldErrors(nil).Err())
}

// Several bad labels and annotations, which Kubernetes finds in a map's
// random order, give the same error every time, sorted.
func TestSeveralBadLabelsGiveTheSameErrorEveryTime(t *testing.T) {
	src := strings.Replace(stdioServer, "name: git", "name: git\n  labels:\n    a: -x-\n    b: -y-\n    c: -z-\n    d: -w-\n  annotations:\n    -bad-: v\n    _worse_: v", 1)
	var first string
	for range 30 {
		docs, err := DecodeFile("mcpservers/git.yaml", []byte(src))
		require.NoError(t, err)
		require.Len(t, docs, 1)
		require.Error(t, docs[0].Err)
		if first == "" {
			first = docs[0].Err.Error()
			continue
		}
		require.Equal(t, first, docs[0].Err.Error())
	}
	assert.Less(t, strings.Index(first, `"-w-"`), strings.Index(first, `"-x-"`), "sorted")
}

// TestDecodedObjectsShareTheirTypeStrings: a decoded definition's
// apiVersion and kind, and its document's kind, are the package's
// constants, not copies of the file's text (40 bytes a definition, kept
// for as long as the definition is in force).
func TestDecodedObjectsShareTheirTypeStrings(t *testing.T) {
	src := []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: w\nspec:\n  steps:\n    - id: a\n      tool: x_t\n" +
		"---\napiVersion: \"muster.giantswarm.io/v1alpha1\"\nkind: 'MCPServer'\nmetadata: {name: s}\nspec:\n  type: stdio\n  command: ./s\n")
	docs, err := DecodeFile("defs.yaml", src)
	require.NoError(t, err)
	require.Len(t, docs, 2)
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }
	for _, d := range docs {
		require.NoError(t, d.Err)
		tm := d.Object.GetObjectKind().GroupVersionKind()
		assert.Equal(t, APIVersion, tm.GroupVersion().String())
		switch o := d.Object.(type) {
		case *Workflow:
			assert.True(t, same(o.APIVersion, APIVersion) && same(o.Kind, KindWorkflow) && same(d.Kind, KindWorkflow), "Workflow: %+v", o.TypeMeta)
		case *MCPServer:
			assert.True(t, same(o.APIVersion, APIVersion) && same(o.Kind, KindMCPServer) && same(d.Kind, KindMCPServer), "MCPServer: %+v", o.TypeMeta)
		}
	}
}

// A definition decoded from a file holds no status: a file may not declare
// one, and the status sits behind a pointer so that the index's
// definitions do not each carry an empty one (120 bytes of a Workflow's
// 464). Its hash is the one it had while the status was a value: the
// hashes below are what a decoder with a status value gives.
func TestADecodedDefinitionHoldsNoStatus(t *testing.T) {
	for src, hash := range map[string]string{
		stdioServer: "sha256:f5d7673883647a038b104010a407432fa7e5108ccc723ec5ebcd4268e890762e",
		"apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: w\nspec:\n  steps:\n    - id: a\n      tool: t\n": "sha256:5f2b7a126bad99984279f66375d3ebbed5b3b56c255fc7719e277ec361ac83f8",
	} {
		docs, err := DecodeFile("x.yaml", []byte(src))
		require.NoError(t, err)
		require.NoError(t, docs[0].Err)
		switch o := docs[0].Object.(type) {
		case *MCPServer:
			assert.Nil(t, o.Status)
		case *Workflow:
			assert.Nil(t, o.Status)
		}
		assert.Equal(t, hash, docs[0].Hash)
		data, err := json.Marshal(docs[0].Object)
		require.NoError(t, err)
		assert.NotContains(t, string(data), `"status"`)
	}
}
