package v1alpha1

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A field the types do not have, where nothing is wrong for want of the
// field it resembles, is ignored with a warning naming file, line and
// field; the document is used.
func TestDecodeFileWarnsOfUnknownFields(t *testing.T) {
	tests := []struct {
		name string
		path string // default mcpservers/git.yaml
		src  string
		want []string
	}{
		{name: "muster's input_schema and required under a workflow's spec",
			path: "workflows/deploy.yaml",
			src: workflowHeader + "  input_schema:\n    type: object\n    args: {}\n  required: [message]\n" +
				"  steps:\n  - id: a\n    tool: t\n",
			want: []string{"workflows/deploy.yaml:6: spec.input_schema: unknown field, ignored",
				"workflows/deploy.yaml:9: spec.required: unknown field, ignored"}},
		{name: "unknown field without a close match",
			src:  stdioServer + "  replicas: 3\n",
			want: []string{"mcpservers/git.yaml:8: spec.replicas: unknown field, ignored"}},
		{name: "several unknown fields, in line order",
			src:  stdioServer + "  zzz: 1\n  aaa: 2\n",
			want: []string{"mcpservers/git.yaml:8: spec.zzz: unknown field, ignored", "mcpservers/git.yaml:9: spec.aaa: unknown field, ignored"}},
		{name: "a close match that is set and valid: a warning, with the suggestion",
			src:  stdioServer + "spek: {}\n",
			want: []string{`mcpservers/git.yaml:8: spek: unknown field, ignored (did you mean "spec"?)`}},
		{name: "a close match whose absence is no problem",
			path: "workflows/deploy.yaml",
			src:  workflowHeader + "  args:\n    replicas:\n      type: integer\n      requird: true\n  steps:\n  - id: a\n    tool: t\n",
			want: []string{`workflows/deploy.yaml:9: spec.args[replicas].requird: unknown field, ignored (did you mean "required"?)`}},
		{name: "in a forEach body",
			path: "workflows/deploy.yaml",
			src: workflowHeader + "  steps:\n  - id: loop\n    forEach:\n      items: '{{ .input.xs }}'\n      steps:\n" +
				"      - id: a\n        tool: t\n        allowfailure: true\n",
			want: []string{`workflows/deploy.yaml:13: spec.steps[0].forEach.steps[0].allowfailure: unknown field, ignored (did you mean "allowFailure"?)`}},
		{name: "in metadata",
			src:  strings.Replace(stdioServer, "  name: git\n", "  name: git\n  labls: {a: b}\n", 1),
			want: []string{`mcpservers/git.yaml:5: metadata.labls: unknown field, ignored (did you mean "labels"?)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = "mcpservers/git.yaml"
			}
			docs, err := DecodeFile(path, []byte(tt.src))
			require.NoError(t, err)
			require.Len(t, docs, 1)
			require.NoError(t, docs[0].Err)
			require.NotNil(t, docs[0].Object)
			assert.Equal(t, tt.want, docs[0].Warnings.Strings())
		})
	}
}

// An unknown field close to a known one is an error, with the
// suggestion, when a problem stands where the known field belongs: on it,
// inside it, or on its object in words naming it. The problem itself is
// reported too. Other unknown fields of the document stay warnings.
func TestDecodeFileRefusesTyposThatMatter(t *testing.T) {
	tests := []struct {
		name         string
		src          string
		want         string
		wantWarnings []string
	}{
		{name: "a step's tool misspelt: the step has none",
			src: workflowHeader + "  input_schema: {}\n  steps:\n  - id: a\n    tol: t\n",
			want: "workflows/deploy.yaml:8: spec.steps[0]: exactly one of tool, forEach, or parallel must be set, got none\n" +
				`workflows/deploy.yaml:9: spec.steps[0].tol: unknown field (did you mean "tool"?)`,
			wantWarnings: []string{"workflows/deploy.yaml:6: spec.input_schema: unknown field, ignored"}},
		{name: "a parallel sub-step's tool misspelt: required",
			src: workflowHeader + "  steps:\n  - id: a\n    parallel:\n    - id: b\n      toool: t\n",
			want: "workflows/deploy.yaml:9: spec.steps[0].parallel[0].tool: required\n" +
				`workflows/deploy.yaml:10: spec.steps[0].parallel[0].toool: unknown field (did you mean "tool"?)`},
		{name: "a condition's fromStep misspelt",
			src: workflowHeader + "  steps:\n  - id: a\n    tool: t\n    condition:\n      fromStpe: a\n      expect: {success: true}\n",
			want: "workflows/deploy.yaml:9: spec.steps[0].condition: exactly one of template, tool, or fromStep must be set\n" +
				`workflows/deploy.yaml:10: spec.steps[0].condition.fromStpe: unknown field (did you mean "fromStep"?)`},
		{name: "steps misspelt: a workflow without steps",
			src: workflowHeader + "  step:\n  - id: a\n    tool: t\n",
			want: "workflows/deploy.yaml:5: spec.steps: a workflow needs at least one step\n" +
				`workflows/deploy.yaml:6: spec.step: unknown field (did you mean "steps"?)`},
		{name: "an invalid value inside the field meant",
			src: workflowHeader + "  step:\n  - id: a\n    tool: t\n  steps:\n  - id: 'b c'\n    tool: t\n",
			want: `workflows/deploy.yaml:6: spec.step: unknown field (did you mean "steps"?)` + "\n" +
				`workflows/deploy.yaml:10: spec.steps[0].id: "b c" does not match ^[a-zA-Z0-9_-]+$`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := DecodeFile("workflows/deploy.yaml", []byte(tt.src))
			require.NoError(t, err)
			require.Len(t, docs, 1)
			assert.Nil(t, docs[0].Object)
			require.Error(t, docs[0].Err)
			assert.Equal(t, tt.want, docs[0].Err.Error())
			assert.Equal(t, tt.wantWarnings, docs[0].Warnings.Strings())
		})
	}
}

// A close match is no reason for an error when the problem is elsewhere,
// or names the field only as part of a longer name.
func TestProblemWhereTheSuggestedFieldBelongs(t *testing.T) {
	u := unknownField{field: "spec.steps[0].condition.expct", parent: "spec.steps[0].condition", suggested: "expect"}
	for _, tt := range []struct {
		err  FieldError
		want bool
	}{
		{FieldError{Field: "spec.steps[0].condition.expect"}, true},
		{FieldError{Field: "spec.steps[0].condition.expect.jsonPath"}, true},
		{FieldError{Field: "spec.steps[0].condition.expect[0]"}, true},
		{FieldError{Field: "spec.steps[0].condition", Msg: "a tool or fromStep condition requires expect or expectNot"}, true},
		{FieldError{Field: "spec.steps[0].condition", Msg: "needs expectNot"}, false},
		{FieldError{Field: "spec.steps[0].condition.expectNot"}, false},
		{FieldError{Field: "spec.steps[0]", Msg: "expect"}, false},
		{FieldError{Field: "spec.steps[1].condition.expect"}, false},
	} {
		assert.Equal(t, tt.want, problemWhere(FieldErrors{&tt.err}, u), "%+v", tt.err)
	}
}

// The warnings are part of the hash: adding an unknown field, or moving
// it, changes the document; a document without warnings hashes as before.
func TestWarningsChangeTheHash(t *testing.T) {
	hash := func(src string) string {
		t.Helper()
		docs, err := DecodeFile("mcpservers/git.yaml", []byte(src))
		require.NoError(t, err)
		require.Len(t, docs, 1)
		require.NoError(t, docs[0].Err)
		return docs[0].Hash
	}
	plain := hash(stdioServer)
	docs, err := DecodeFile("mcpservers/git.yaml", []byte(stdioServer))
	require.NoError(t, err)
	assert.Equal(t, hashJSON(docs[0].Object, nil), plain, "no warnings: the object's hash")

	warned := hash(stdioServer + "  replicas: 3\n")
	assert.NotEqual(t, plain, warned, "an unknown field is a change")
	assert.NotEqual(t, warned, hash(stdioServer+"  replica: 3\n"), "another unknown field is another change")
	assert.NotEqual(t, warned, hash(strings.Replace(stdioServer, "spec:\n", "spec:\n  # moved\n", 1)+"  replicas: 3\n"),
		"a warning on another line is a change")
	assert.Equal(t, warned, hash(stdioServer+"  replicas: 4\n"), "the value of an ignored field is not")

	broken := strings.Replace(stdioServer, "command: npx", "timeout: x", 1)
	docs, err = DecodeFile("mcpservers/git.yaml", []byte(broken+"  replicas: 3\n"))
	require.NoError(t, err)
	require.Error(t, docs[0].Err)
	withWarning := docs[0].Hash
	docs, err = DecodeFile("mcpservers/git.yaml", []byte(broken+"  replicas: 3\n"))
	require.NoError(t, err)
	assert.Equal(t, withWarning, docs[0].Hash, "a document with an error hashes the same each time")
}

// The fast path and yaml.v3 agree on warnings too: files with unknown
// fields the fast path takes decode to the same warnings both ways.
func TestFastPathAgreesOnWarnings(t *testing.T) {
	for _, src := range []string{
		stdioServer + "  replicas: 3\n  zzz:\n    a:\n    - 1\n    - 2\n",
		workflowHeader + "  input_schema:\n    type: object\n    args: {}\n  required:\n  - message\n  steps:\n  - id: a\n    tool: t\n    tol: u\n",
		workflowHeader + "  steps:\n  - id: a\n    tol: t\n  - id: b\n    tool: t\n    extra: 1\n",
		stdioServer + "  x_command: other\n---\n" + strings.Replace(stdioServer, "name: git", "name: other", 1) + "  Command: z\n",
	} {
		docs, err := DecodeFile("dir/file.yaml", []byte(src))
		require.NoError(t, err)
		warned := false
		for _, d := range docs {
			warned = warned || len(d.Warnings) > 0
		}
		require.True(t, warned, "the input has warnings:\n%s", src)
		diff, took := fastSlowDiff("dir/file.yaml", []byte(src))
		assert.True(t, took, "the fast path takes\n%s", src)
		assert.Empty(t, diff)
	}
}

// Refused spells warnings as a strict reader's errors.
func TestRefusedWarnings(t *testing.T) {
	docs, err := DecodeFile("mcpservers/git.yaml", []byte(stdioServer+"  replicas: 3\n  autoStrat: true\n"))
	require.NoError(t, err)
	require.NoError(t, docs[0].Err)
	assert.Equal(t, "mcpservers/git.yaml:8: spec.replicas: unknown field\n"+
		`mcpservers/git.yaml:9: spec.autoStrat: unknown field (did you mean "autoStart"?)`, docs[0].Warnings.Refused().Error())
	assert.Equal(t, "mcpservers/git.yaml:8: spec.replicas: unknown field, ignored", docs[0].Warnings[0].Error(), "the warnings stay as they were")
}
