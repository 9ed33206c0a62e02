// Package workflowrun runs workflows: every workflow the reconciler finds
// valid is the tool workflow_<name>, and a call of it runs its steps with
// muster's semantics, as an execution that is kept and can be read back
// (Executions, Execution: the HTTP API, and core_workflow_execution_list
// and _get in package coretools).
//
// Place in the pipeline: at its end, a source of the router's tools
// (Tools, CallTool, Claims). It reads the definitions in force from the
// resources index and the workflow reconciler's verdict
// (reconcilers.Registry.Status); it calls tools only through the Caller
// the wiring gives it (the router, which routes x_…, core_… and workflow_…
// names, so a step may run another workflow). It never imports
// the bus: each run's WorkflowExecutionStarted and
// WorkflowExecutionFinished events, and each tool step's
// WorkflowStepStarted (as its call begins) and WorkflowStepFinished
// (completed, failed, or skipped by its condition), go out through
// Options.Publish, synchronously on the run's goroutine, which
// the wiring points at the bus, so that `musterd events`, the per-resource
// history and traces show runs next to the reconciles of the same
// workflow, while the engine stays testable alone.
//
// Semantics (muster's, internal/workflow):
//
//   - Templates are Go text/template with sprig's functions and
//     missingkey=error, over .input, .results.<stepID> (also .context) and,
//     in a forEach, .vars. A template that is one expression keeps its
//     type; anything else renders to a string. A step's result whose text
//     is JSON is parsed.
//   - Steps: a tool with args; a condition (a template, a tool call or
//     fromStep, with expect and expectNot on success and jsonPath); forEach
//     (items, as, <as>_index; each iteration a step of its sub-step's id,
//     its result kept as <subID>_<i> too, which core_workflow_execution_get
//     finds by step_id); parallel (results merged by sub-step id);
//     allowFailure; output (store); onFailure steps, run in order when a
//     step fails (not when the run succeeds, nor when only the output
//     template fails); an output template, and the reserved argument
//     _debug: true for everything.
//   - The result is muster's JSON: execution_id, workflow, status, input,
//     steps, template_vars (the input references, "input.<name>", of the
//     templates rendered, in the order rendered); the last step's result
//     merged in when it is a plain tool step not marked output (without
//     overwriting those keys); with an output template, the rendered
//     output with execution_id added, as muster adds it. An output
//     template that fails leaves the run failed with the document, every
//     step's result in it, and output_error.
//
// Guarantees:
//
//   - A run uses the definition in force when it was called, to its end,
//     whatever edits arrive meanwhile.
//   - A workflow the reconciler does not find valid is not a tool, and a
//     call of it fails at once naming what is missing ("workflow X is not
//     available (missing required tools: …)"); with Options.AvailableTo,
//     a caller's call is judged by the caller's own view instead, so a
//     workflow on servers users connect to on their own runs for those
//     users, and names the tools the caller lacks. A call of one declared but
//     not judged yet (called right after core_workflow_create, as muster's
//     clients do) waits for the verdict, up to Options.VerdictWait. Cycles
//     are refused by the validator; MaxDepth stops any that a mid-run edit
//     could still make.
//   - Bad input is an error naming the workflow, the step and the field
//     (*Error), its cause in muster's words where muster's clients look
//     for them ("failed to render arguments", "failed to render output
//     template", "input validation failed: required field 'x' is
//     missing", "… expected a list"): a template that fails as it runs
//     (one that does not parse is refused by the validator, naming step
//     and field, so the workflow is unavailable), a missing or mistyped
//     argument, forEach items that are no array, a jsonPath that matches
//     nothing, a result over Options.MaxResultBytes. It fails that run
//     alone.
//   - Bounds: a template render is bounded by what it may produce (text/
//     template ignores the run's deadline): its output, and every string
//     or list a function returns, by tmplfuncs.MaxBytes and MaxItems, the
//     generators (repeat, until, untilStep, seq, rand*, indent, replace,
//     join, printf…) refusing before they build; all its range iterations
//     together by tmplfuncs.MaxIterations; {{define}}/{{template}} and the
//     expensive crypto (genPrivateKey, bcrypt, derivePassword…) are not
//     available. A bound exceeded fails the run naming the workflow, step
//     and field. A call to a server times out after its server's
//     spec.timeout (the supervisor's bound on every call; Options.StepTimeout
//     may add one); a run has an overall deadline (Options.Timeout,
//     or _timeout per call, at most Options.MaxTimeout); a caller's
//     cancellation cancels the calls in flight, and onFailure then runs on
//     a context of its own bounded by Options.CleanupTimeout; parallel
//     sub-steps and forEach iterations run at most Options.Concurrency and
//     Options.ForEachConcurrency at once; progress from the calls reaches
//     the caller, serialised.
//   - Executions: every run that passed the availability check is one,
//     with a UUID, status inprogress, completed or failed, its input with
//     secret-looking keys and values redacted, every step's input (so
//     redacted too) and result (values under secret-looking keys
//     redacted). A record is bounded by Options.MaxRecordBytes (256 KiB,
//     muster's): in one larger, as muster does, every input and result
//     over an eighth of it is replaced by muster's TruncationMarker and
//     truncated is set; then, since musterd records every step's payloads
//     where muster keeps few, the largest left until it fits. Under a
//     state dir each is a file, written atomically (temporary file, fsync,
//     rename, fsync of the directory, mode 0600), so executions survive a
//     restart;
//     one found in progress at start is marked failed with
//     ReasonInterrupted. At most Options.MaxExecutions are kept, none older
//     than Options.MaxAge.
//   - Metrics: musterd_workflow_executions_total{workflow,status} and
//     musterd_workflow_execution_duration_seconds{workflow}.
//   - Tools changes are reported: Refresh (every workflow) and
//     RefreshWorkflows (the named ones: one lookup each, however many are
//     declared) call Options.OnToolsChanged when the set of workflow tools
//     or their schemas changed. Tools is the set as of the last of them.
package workflowrun
