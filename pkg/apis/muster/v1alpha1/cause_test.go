package v1alpha1

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every problem validation finds says what it is (Cause, Path, Fields,
// First) besides its message, so that a program can answer in other words
// without parsing Msg; the message itself stays musterd's.
func TestValidationErrorsSayTheirCause(t *testing.T) {
	field := func(names ...any) FieldPath {
		var p FieldPath
		for _, n := range names {
			switch n := n.(type) {
			case int:
				p = append(p, PathElement{Kind: PathItem, Index: n})
			case [1]string: // a map entry
				p = append(p, PathElement{Kind: PathEntry, Name: n[0]})
			default:
				p = append(p, PathElement{Kind: PathField, Name: n.(string)})
			}
		}
		return p
	}
	type want struct {
		path   FieldPath
		cause  Cause
		fields []string
		first  FieldPath
		msg    string
	}
	for _, tc := range []struct {
		name, spec string
		want       want
	}{
		{"no steps", "  description: d\n",
			want{field("spec", "steps"), CauseRequired, nil, nil, "a workflow needs at least one step"}},
		{"empty steps", "  steps: []\n",
			want{field("spec", "steps"), CauseEmpty, nil, nil, "a workflow needs at least one step"}},
		{"step id missing", "  steps:\n  - tool: t\n",
			want{field("spec", "steps", 0, "id"), CauseRequired, nil, nil, "required"}},
		{"step id empty", "  steps:\n  - id: \"\"\n    tool: t\n",
			want{field("spec", "steps", 0, "id"), CauseEmpty, nil, nil, "required"}},
		{"duplicate step id", "  steps:\n  - id: a\n    tool: t\n  - id: a\n    tool: t\n",
			want{field("spec", "steps", 1, "id"), CauseDuplicate, nil, field("spec", "steps", 0, "id"), `duplicate step id "a" (first used at spec.steps[0].id)`}},
		{"step of no kind", "  steps:\n  - id: a\n",
			want{field("spec", "steps", 0), CauseOneOf, nil, nil, "exactly one of tool, forEach, or parallel must be set, got none"}},
		{"step of two kinds", "  steps:\n  - id: a\n    tool: t\n    forEach:\n      items: x\n      steps:\n      - id: b\n        tool: t\n",
			want{field("spec", "steps", 0), CauseOneOf, []string{"tool", "forEach"}, nil, "exactly one of tool, forEach, or parallel must be set, got tool and forEach"}},
		{"empty tool", "  steps:\n  - id: a\n    tool: \"\"\n",
			want{field("spec", "steps", 0, "tool"), CauseEmpty, nil, nil, "must not be empty"}},
		{"forEach without items", "  steps:\n  - id: a\n    forEach:\n      steps:\n      - id: b\n        tool: t\n",
			want{field("spec", "steps", 0, "forEach", "items"), CauseRequired, nil, nil, "required"}},
		{"forEach of no steps", "  steps:\n  - id: a\n    forEach:\n      items: x\n      steps: []\n",
			want{field("spec", "steps", 0, "forEach", "steps"), CauseEmpty, nil, nil, "must have at least one step"}},
		{"forEach without steps", "  steps:\n  - id: a\n    forEach:\n      items: x\n",
			want{field("spec", "steps", 0, "forEach", "steps"), CauseRequired, nil, nil, "must have at least one step"}},
		{"empty parallel group", "  steps:\n  - id: a\n    parallel: []\n",
			want{field("spec", "steps", 0, "parallel"), CauseEmpty, nil, nil, "must have at least one step"}},
		{"sub-step without tool", "  steps:\n  - id: a\n    parallel:\n    - id: b\n",
			want{field("spec", "steps", 0, "parallel", 0, "tool"), CauseRequired, nil, nil, "required"}},
		{"duplicate sub-step id", "  steps:\n  - id: a\n    parallel:\n    - id: b\n      tool: t\n    - id: b\n      tool: t\n",
			want{field("spec", "steps", 0, "parallel", 1, "id"), CauseDuplicate, nil, field("spec", "steps", 0, "parallel", 0, "id"), `duplicate step id "b" (first used at spec.steps[0].parallel[0].id)`}},
		{"condition of template and tool", "  steps:\n  - id: a\n    tool: t\n    condition:\n      template: x\n      tool: t\n",
			want{field("spec", "steps", 0, "condition"), CauseOneOf, []string{"template", "tool"}, nil, "exactly one of template, tool, or fromStep must be set"}},
		{"condition without expectation", "  steps:\n  - id: a\n    tool: t\n    condition:\n      fromStep: x\n",
			want{field("spec", "steps", 0, "condition"), CauseRequired, []string{"expect", "expectNot"}, nil, "a tool or fromStep condition requires expect or expectNot"}},
		{"onFailure sub-step without id", "  steps:\n  - id: a\n    tool: t\n  onFailure:\n  - tool: t\n",
			want{field("spec", "onFailure", 0, "id"), CauseRequired, nil, nil, "required"}},
		{"argument without type", "  args:\n    who: {}\n  steps:\n  - id: a\n    tool: t\n",
			want{field("spec", "args", [1]string{"who"}, "type"), CauseRequired, nil, nil, "required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := DecodeFile("workflows/deploy.yaml", []byte(workflowHeader+tc.spec))
			require.NoError(t, err)
			require.Len(t, docs, 1)
			var fes FieldErrors
			require.True(t, errors.As(docs[0].Err, &fes), "%v", docs[0].Err)
			for _, fe := range fes {
				assert.Equal(t, fe.Field, fe.Path.String(), "Path spells Field")
			}
			var found *FieldError
			for _, fe := range fes {
				if fe.Path.String() == tc.want.path.String() && fe.Cause == tc.want.cause {
					found = fe
				}
			}
			require.NotNil(t, found, "no %v error at %s among %v", tc.want.cause, tc.want.path, fes)
			assert.Equal(t, tc.want.path, found.Path)
			assert.Equal(t, tc.want.fields, found.Fields)
			assert.Equal(t, tc.want.first, found.First)
			assert.Equal(t, tc.want.msg, found.Msg, "the message stays musterd's")
		})
	}
}

// Outside files (objects from an API server) a value not set cannot be
// told from one set empty: both are required.
func TestValidateOutsideFilesSaysRequired(t *testing.T) {
	w := &Workflow{Spec: WorkflowSpec{Steps: []WorkflowStep{{Tool: "t"}}}}
	fes := w.Validate()
	require.NotEmpty(t, fes)
	assert.Equal(t, "spec.steps[0].id", fes[0].Field)
	assert.Equal(t, CauseRequired, fes[0].Cause)
	assert.Equal(t, FieldPath{{Name: "spec"}, {Name: "steps"}, {Kind: PathItem}, {Name: "id"}}, fes[0].Path)
}
