package coretools

// muster's words for a workflow definition its core tools refuse, as
// muster's workflow api adapter says them (internal/workflow/api_adapter.go
// at the muster commit musterd is checked against).
//
// Why they are here, apart from musterd's own messages: muster's clients
// (its CLI, its agent, its behavioural suite, users' scripts) read and match
// these texts in the answers of core_workflow_create, _update and
// _validate. musterd's validation (package v1alpha1) says the same problems
// in its own words, naming the file, line and field, and keeps saying them
// so wherever musterd speaks for itself: files, CRDs, status, `musterd
// describe`. Only the core tools' answers, where a muster client reads,
// translate its structured result (v1alpha1.FieldError's Cause and Path)
// into these words (refusal.go). Keep every muster text of those answers
// in this one file, spelled exactly as muster spells it.
const (
	// A request without a name.
	musterNameRequired = "name argument is required"

	// How each tool wraps a refusal. muster's create reads the arguments
	// (musterReading below) before it validates, and says a problem found
	// while reading without its own "validation failed: ".
	musterValidateFailed = "Validation failed: "
	musterCreateFailed   = "Failed to create workflow: "
	musterUpdateFailed   = "Failed to update workflow: "
	musterInvalid        = "validation failed: "

	// Problems found while reading the arguments (muster's
	// convertToWorkflow), in the order muster reads: args, then steps in
	// order, each step's id, forEach, parallel, tool, then its condition;
	// then onFailure.
	musterStepsRequired   = "steps argument is required"
	musterReadingArgs     = "validation failed: args: "
	musterReadingSteps    = "validation failed: steps: "
	musterReadingFailure  = "validation failed: onFailure: "
	musterArgTypeRequired = "argument %s: type is required"

	musterStepIDEmpty     = "step %d: id cannot be empty"
	musterStepIDRequired  = "step %d: id is required"
	musterStepToolEmpty   = "step %d (%s): tool cannot be empty"
	musterStepNoKind      = "step %d (%s): one of tool, forEach, or parallel is required"
	musterStepToolAndMore = "step %d (%s): tool is mutually exclusive with forEach/parallel"
	musterStepBothGroups  = "step %d (%s): forEach and parallel are mutually exclusive"
	musterStepForEach     = "step %d (%s): invalid forEach: "
	musterStepParallel    = "step %d (%s): invalid parallel: "
	musterStepCondition   = "step %d: invalid condition: "
	musterForEachItems    = "items is required and must be a template string"
	musterForEachSteps    = "steps is required and must contain at least one sub-step"

	musterSubStepIDRequired   = "sub-step %d: id is required"
	musterSubStepToolRequired = "sub-step %d (%s): tool is required"
	musterSubStepCondition    = "sub-step %d (%s): invalid condition: "

	musterConditionTemplateAndMore = "condition.template is mutually exclusive with tool/fromStep"
	musterConditionNone            = "condition requires exactly one of template, tool, or fromStep"
	musterConditionToolAndFromStep = "condition: tool and fromStep are mutually exclusive (set exactly one of template, tool, or fromStep)"
	musterConditionNoExpectation   = "a tool or fromStep condition requires expect or expectNot"

	// Problems found while validating what was read (muster's
	// ValidateWorkflowFromStructured), in its order: no steps, then each
	// step's duplicate id, its forEach's and its parallel's duplicate
	// sub-step ids; then onFailure's.
	musterNoSteps          = "workflow must have at least one step"
	musterDuplicateStepID  = "duplicate step ID '%s' found"
	musterDuplicateSubStep = "%s: duplicate sub-step id '%s'"
	musterForEachGroup     = "step %s forEach"
	musterParallelGroup    = "step %s parallel"
	musterOnFailureGroup   = "onFailure"
)
