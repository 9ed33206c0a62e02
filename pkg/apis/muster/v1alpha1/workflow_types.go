package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArgType is the type of a workflow argument's value.
// +kubebuilder:validation:Enum=string;integer;boolean;number;object;array
type ArgType string

const (
	ArgTypeString  ArgType = "string"
	ArgTypeInteger ArgType = "integer"
	ArgTypeBoolean ArgType = "boolean"
	ArgTypeNumber  ArgType = "number"
	ArgTypeObject  ArgType = "object"
	ArgTypeArray   ArgType = "array"
)

// DefaultForEachVariable is the loop variable of a forEach step that names
// none.
const DefaultForEachVariable = "item"

// Workflow declares a sequence of tool calls that musterd exposes as one
// tool.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wf
// +kubebuilder:printcolumn:name="Valid",type=boolean,JSONPath=`.status.valid`
// +kubebuilder:printcolumn:name="Steps",type=integer,JSONPath=`.status.stepCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Workflow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WorkflowSpec `json:"spec,omitempty"`
	// (Not the field's documentation, which the CRD shows: Status is nil
	// until a status is written. A definition from a file never has one,
	// musterd keeping statuses apart, and an empty status in each of the
	// index's definitions would be a large share of their memory. The CRD's
	// schema is the same either way.)

	Status *WorkflowStatus `json:"status,omitempty"`
}

// WorkflowSpec is the desired state of a workflow.
type WorkflowSpec struct {
	// Description says what the workflow is for.
	// +kubebuilder:validation:MaxLength=1000
	// +optional
	Description string `json:"description,omitempty"`

	// Args declares the workflow's arguments, by name; calls are validated
	// against it.
	// +optional
	Args map[string]ArgDefinition `json:"args,omitempty"`

	// Steps run in order.
	// +kubebuilder:validation:MinItems=1
	Steps []WorkflowStep `json:"steps"`

	// OnFailure are best-effort cleanup steps, run in order when a step that
	// does not allow failure fails. Their own failures are tolerated.
	// +optional
	OnFailure []WorkflowSubStep `json:"onFailure,omitempty"`

	// Output shapes the workflow's result: each leaf is a template rendered
	// after all steps against .input, .results and .vars. When empty, the
	// default result document is returned.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Output map[string]JSON `json:"output,omitempty"`
}

// ArgDefinition declares one workflow argument.
type ArgDefinition struct {
	// Type is the type of the argument's value.
	Type ArgType `json:"type"`

	// Required makes the argument mandatory.
	// +kubebuilder:default=false
	// +optional
	Required bool `json:"required,omitempty"`

	// Default is the value of an omitted argument.
	// +optional
	Default *JSON `json:"default,omitempty"`

	// Description documents the argument.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`
}

// WorkflowStep is one step of a workflow: exactly one of a tool call (Tool),
// a sequential loop (ForEach) or a concurrent group (Parallel).
//
// +kubebuilder:validation:XValidation:rule="(has(self.tool) ? 1 : 0) + (has(self.forEach) ? 1 : 0) + (has(self.parallel) ? 1 : 0) == 1",message="exactly one of tool, forEach, or parallel must be set"
type WorkflowStep struct {
	// ID identifies the step within the workflow; later steps read its
	// result as .results.<id>.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]+$`
	ID string `json:"id"`

	// Tool is the tool to call.
	// +optional
	Tool string `json:"tool,omitempty"`

	// Args are the tool's arguments; string values may be templates.
	// +optional
	Args map[string]JSON `json:"args,omitempty"`

	// Condition, when set, decides whether the step runs.
	// +optional
	Condition *WorkflowCondition `json:"condition,omitempty"`

	// Output includes the step's result in the workflow's result. When
	// unset, Store decides.
	// +optional
	Output *bool `json:"output,omitempty"`

	// Store is the deprecated spelling of Output.
	// +kubebuilder:default=false
	// +optional
	Store bool `json:"store,omitempty"`

	// AllowFailure lets the workflow go on when the step fails.
	// +kubebuilder:default=false
	// +optional
	AllowFailure bool `json:"allowFailure,omitempty"`

	// Description documents the step.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`

	// ForEach runs a body of sub-steps once per item of a list.
	// +optional
	ForEach *WorkflowForEach `json:"forEach,omitempty"`

	// Parallel runs sub-steps concurrently, each against the state from
	// before the group started.
	// +kubebuilder:validation:MinItems=1
	// +optional
	Parallel []WorkflowSubStep `json:"parallel,omitempty"`
}

// WorkflowSubStep is a tool call inside a forEach body, a parallel group or
// onFailure. It cannot nest further, which keeps the CRD schema
// non-recursive.
type WorkflowSubStep struct {
	// ID identifies the sub-step.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]+$`
	ID string `json:"id"`

	// Tool is the tool to call.
	// +kubebuilder:validation:MinLength=1
	Tool string `json:"tool"`

	// Args are the tool's arguments; string values may be templates.
	// +optional
	Args map[string]JSON `json:"args,omitempty"`

	// Condition, when set, decides whether the sub-step runs.
	// +optional
	Condition *WorkflowCondition `json:"condition,omitempty"`

	// Output includes the sub-step's result in the workflow's result. When
	// unset, Store decides.
	// +optional
	Output *bool `json:"output,omitempty"`

	// Store is the deprecated spelling of Output.
	// +kubebuilder:default=false
	// +optional
	Store bool `json:"store,omitempty"`

	// AllowFailure lets execution go on when the sub-step fails.
	// +kubebuilder:default=false
	// +optional
	AllowFailure bool `json:"allowFailure,omitempty"`

	// Description documents the sub-step.
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Description string `json:"description,omitempty"`
}

// WorkflowForEach runs Steps once per element of the list Items resolves
// to.
type WorkflowForEach struct {
	// Items is a template that must resolve to an array.
	// +kubebuilder:validation:MinLength=1
	Items string `json:"items"`

	// As names the loop variable, read as .vars.<as>.
	// +kubebuilder:default=item
	// +optional
	As string `json:"as,omitempty"`

	// Steps is the body run for each item.
	// +kubebuilder:validation:MinItems=1
	Steps []WorkflowSubStep `json:"steps"`
}

// WorkflowCondition gates a step: exactly one of Template, Tool or FromStep.
// A Tool or FromStep condition needs Expect or ExpectNot.
//
// +kubebuilder:validation:XValidation:rule="(has(self.template) ? 1 : 0) + (has(self.tool) ? 1 : 0) + (has(self.fromStep) ? 1 : 0) == 1",message="exactly one of template, tool, or fromStep must be set"
// +kubebuilder:validation:XValidation:rule="has(self.template) || has(self.expect) || has(self.expectNot)",message="a tool or fromStep condition requires expect or expectNot"
type WorkflowCondition struct {
	// Tool is called to evaluate the condition.
	// +optional
	Tool string `json:"tool,omitempty"`

	// Args are the condition tool's arguments.
	// +optional
	Args map[string]JSON `json:"args,omitempty"`

	// FromStep evaluates the result of an earlier step instead of calling a
	// tool.
	// +optional
	FromStep string `json:"fromStep,omitempty"`

	// Template is a Go template; the step runs when it renders "true".
	// Expect and ExpectNot are ignored then.
	// +optional
	Template string `json:"template,omitempty"`

	// Expect must hold for the step to run.
	// +optional
	Expect *WorkflowConditionExpectation `json:"expect,omitempty"`

	// ExpectNot must not hold for the step to run.
	// +optional
	ExpectNot *WorkflowConditionExpectation `json:"expectNot,omitempty"`
}

// WorkflowConditionExpectation is what a condition expects of a tool result.
type WorkflowConditionExpectation struct {
	// Success is whether the tool call should succeed.
	// +optional
	Success *bool `json:"success,omitempty"`

	// JSONPath maps JSON paths in the result to the values expected there.
	// +optional
	JSONPath map[string]JSON `json:"jsonPath,omitempty"`
}

// WorkflowStatus is the observed state of a workflow.
type WorkflowStatus struct {
	// Valid is whether the spec passed validation and every tool it names
	// is offered by a running server. Always written, false included, so
	// that an invalid workflow says so (optional in the schema, as in
	// muster's CRD).
	// +optional
	Valid bool `json:"valid"`

	// ValidationErrors are the spec's validation errors.
	// +optional
	ValidationErrors []string `json:"validationErrors,omitempty"`

	// ReferencedTools are the tools the steps call. Informational: whether
	// a tool is available depends on the caller's session.
	// +optional
	ReferencedTools []string `json:"referencedTools,omitempty"`

	// MissingTools are the ReferencedTools that no running MCP server
	// offers, sorted. A musterd addition, not in muster's CRD.
	// +optional
	MissingTools []string `json:"missingTools,omitempty"`

	// StepCount is the number of steps.
	// +optional
	StepCount int `json:"stepCount,omitempty"`

	// ObservedGeneration is the metadata.generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions are the latest observations; see ConditionReady.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Warnings are what musterd ignored in the definition in force: fields
	// of its file that the schema does not have, as muster's loader ignores
	// them, each naming file:line and field ("workflows/a.yaml:6:
	// spec.input_schema: unknown field, ignored"). A musterd addition, not
	// in muster's CRD.
	// +optional
	Warnings []string `json:"warnings,omitempty"`
}

// WorkflowList is a list of Workflows.
//
// +kubebuilder:object:root=true
type WorkflowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workflow `json:"items"`
}
