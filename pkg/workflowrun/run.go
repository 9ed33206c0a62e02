package workflowrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/peer"
	"github.com/musterd/musterd/pkg/redact"
)

// runner is one run of one workflow: the definition it started with, kept
// to the end whatever happens to the definition meanwhile.
type runner struct {
	e        *Engine
	wf       *v1alpha1.Workflow
	name     string
	caller   Caller
	progress func(*mcp.ProgressNotificationParams)
	input    map[string]any
	// key and execID name the run in its step events.
	key    events.Key
	execID string

	mu      sync.Mutex // guards records and templateVars, appended by concurrent sub-steps
	records []*record
	// templateVars are the input references of the templates rendered so
	// far, muster's template_vars.
	templateVars []string
}

// record is one step's outcome, for the result's steps[] and the
// execution's.
type record struct {
	// id is the step's id as declared; key is where its result is kept
	// for templates: the id, or <id>_<index> in a forEach iteration.
	id, key, tool string
	status        string
	started, end  time.Time
	input         map[string]any
	result        any
	err           string
	output        bool
	allowFailure  bool
	cond          *condInfo
}

// condInfo is how a condition was evaluated, as muster reports it.
type condInfo struct {
	passed bool
	result any
	tool   string
}

// add records rec: in sc's own list when sc is a parallel sub-step's or a
// concurrent iteration's, merged in declaration order when the group ends
// (adopt), so that steps[] does not depend on which call finished first.
func (r *runner) add(sc *scope, rec *record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if sc.records != nil {
		*sc.records = append(*sc.records, rec)
		return
	}
	r.records = append(r.records, rec)
}

// adopt moves the records and template_vars of child into sc's lists, or
// the run's.
func (r *runner) adopt(sc, child *scope) {
	r.mu.Lock()
	recs := *child.records
	var tvars []string
	if child.tvars != nil {
		tvars = *child.tvars
	}
	r.mu.Unlock()
	for _, rec := range recs {
		r.add(sc, rec)
	}
	r.noteVars(sc, tvars)
}

// run is CallTool for workflow_<name>.
func (e *Engine) run(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) *mcp.CallToolResult {
	w, ok := e.lookup(name)
	if ok && !w.known {
		w, ok = e.awaitVerdict(ctx, name)
	}
	if !ok {
		return textResult(fmt.Sprintf("workflow %s not found", name), true)
	}
	if err := e.availableTo(ctx, w); err != nil {
		return textResult(err.Error(), true)
	}
	depth, _ := ctx.Value(depthKey{}).(int)
	if depth >= MaxDepth {
		return textResult(fmt.Sprintf("workflow %s: workflows call each other more than %d deep (a cycle?)", name, MaxDepth), true)
	}
	ctx = context.WithValue(ctx, depthKey{}, depth+1)
	if args == nil {
		args = map[string]any{}
	}
	if progress != nil {
		// Sub-steps running at once report progress at once; the client's
		// callback need not be safe for that.
		var mu sync.Mutex
		inner := progress
		progress = func(p *mcp.ProgressNotificationParams) { mu.Lock(); defer mu.Unlock(); inner(p) }
	}

	exec := e.store.start(name, redact.Args(args))
	e.publish(events.WorkflowExecutionStarted{Meta: events.NewMeta(""), Key: w.key, ExecutionID: exec.ExecutionID})
	r := &runner{e: e, wf: w.def, name: name, progress: progress, key: w.key, execID: exec.ExecutionID}
	e.running.Store(exec.ExecutionID, r)
	defer e.running.Delete(exec.ExecutionID) // after finish saved the steps
	doc, err := r.execute(ctx, args, exec.ExecutionID)
	end := time.Now()

	status := types.ExecutionCompleted
	if err != nil {
		status = types.ExecutionFailed
	}
	exec.Status = status
	exec.CompletedAt = &end
	exec.DurationMs = end.Sub(exec.StartedAt).Milliseconds()
	if r.input != nil {
		exec.Input = redact.Args(r.input)
	}
	exec.Result = redactSecretKeys(doc)
	if err != nil {
		msg := redact.String(err.Error())
		exec.Error = &msg
	}
	exec.Steps = r.executionSteps()
	e.store.finish(exec, e.opts.MaxRecordBytes)
	e.metrics.observe(name, status, end.Sub(exec.StartedAt))
	fin := events.WorkflowExecutionFinished{Meta: events.NewMeta(""), Key: w.key, ExecutionID: exec.ExecutionID,
		Status: status, Duration: end.Sub(exec.StartedAt)}
	if exec.Error != nil {
		fin.Error = *exec.Error
	}
	e.publish(fin)
	return jsonResult(doc, err != nil)
}

func (e *Engine) publish(ev events.Event) {
	if e.opts.Publish != nil {
		e.opts.Publish(ev)
	}
}

// execute runs the steps, and onFailure when one fails, and returns the
// result document (muster's) and the failure, if any.
func (r *runner) execute(ctx context.Context, args map[string]any, execID string) (map[string]any, error) {
	debug := debugFlag(args)
	timeout, err := timeoutArg(r.name, args)
	if err == nil {
		r.input, err = checkInput(r.name, r.wf.Spec.Args, args)
	}
	if err != nil {
		return r.failure(execID, err), err
	}
	if timeout == 0 {
		timeout = r.e.opts.Timeout
	}
	timeout = min(timeout, r.e.opts.MaxTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("workflow %s ran past its deadline of %s", r.name, timeout))
	defer cancel()
	if box := r.e.caller.Load(); box != nil {
		r.caller = box.Caller
	}

	sc := newScope()
	var last any // the result of the last step, when a plain tool step that ran
	for _, s := range r.wf.Spec.Steps {
		st := fromStep(s)
		last = nil
		switch {
		case st.forEach != nil:
			err = r.forEach(ctx, st, sc)
		case len(st.parallel) > 0:
			err = r.parallelStep(ctx, st, sc)
		default:
			var completed bool
			completed, err = r.call(ctx, st, st.id, sc)
			if completed {
				last = sc.results[st.id]
			}
		}
		if err != nil {
			r.onFailure(ctx, sc)
			return r.failure(execID, err), err
		}
	}

	if len(r.wf.Spec.Output) > 0 {
		out, err := r.output(sc)
		if err != nil {
			// As muster: every step succeeded, so onFailure does not run,
			// and their results stay recoverable: the document with every
			// step's result, and output_error in muster's words.
			doc := r.document(execID, types.ExecutionFailed, true)
			doc["output_error"] = redact.String("failed to render output template: " + err.Error())
			err = stepErr(r.name, "", "", rephrase(err, "failed to render output template"))
			doc["error"] = redact.String(err.Error())
			return doc, err
		}
		if !debug {
			// muster adds the execution's id to the output, as to any
			// result that is an object.
			out["execution_id"] = execID
			return out, nil
		}
		doc := r.document(execID, types.ExecutionCompleted, true)
		doc["output"] = out
		return doc, nil
	}
	doc := r.document(execID, types.ExecutionCompleted, debug)
	// muster's rule: the result of a last step that is a plain tool call,
	// not itself marked output, is merged into the top level. The keys
	// that say what the document is are not overwritten.
	if lastStep := r.wf.Spec.Steps[len(r.wf.Spec.Steps)-1]; !outputOf(lastStep.Output, lastStep.Store) && lastStep.Tool != "" {
		if m, ok := last.(map[string]any); ok {
			for k, v := range m {
				if _, reserved := doc[k]; !reserved {
					doc[k] = v
				}
			}
		}
	}
	return doc, nil
}

// output renders the workflow's output template: each key's value, in
// key order. The error is the first key's that fails, a *fieldError naming
// it.
func (r *runner) output(sc *scope) (map[string]any, error) {
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(r.wf.Spec.Output)) {
		v, err := decodeJSON(r.wf.Spec.Output[k].Raw)
		if err != nil {
			return nil, &fieldError{field: "output." + k, err: err}
		}
		if out[k], err = renderValue(v, sc.data(r.input), "output."+k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// document is muster's result: execution_id, workflow, status, input,
// steps and template_vars. allResults shows every step's result, not only
// those marked output (_debug).
func (r *runner) document(execID, status string, allResults bool) map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	steps := make([]map[string]any, 0, len(r.records))
	for _, rec := range r.records {
		s := map[string]any{"id": rec.id, "tool": rec.tool, "status": rec.status}
		if rec.cond != nil {
			s["condition_evaluation"] = rec.cond.passed
			if rec.cond.result != nil {
				s["condition_result"] = rec.cond.result
			}
			if rec.cond.tool != "" {
				s["condition_tool"] = rec.cond.tool
			}
		}
		if rec.allowFailure {
			s["allow_failure"] = true
		}
		if (rec.output || allResults) && rec.result != nil {
			s["result"] = rec.result
		}
		if rec.err != "" {
			s["error"] = rec.err
		}
		steps = append(steps, s)
	}
	input := r.input
	if input == nil {
		input = map[string]any{}
	}
	return map[string]any{"execution_id": execID, "workflow": r.name, "status": status,
		"input": redact.Args(input), "steps": steps, "template_vars": append([]string{}, r.templateVars...)}
}

// failure is the result of a failed run: the document with status failed
// and the error.
func (r *runner) failure(execID string, err error) map[string]any {
	doc := r.document(execID, types.ExecutionFailed, false)
	doc["error"] = redact.String(err.Error())
	return doc
}

// onFailure runs the workflow's onFailure steps in order, each allowed to
// fail. A run that failed because it was cancelled or ran out of time
// cleans up on a context of its own, bounded by Options.CleanupTimeout.
func (r *runner) onFailure(ctx context.Context, sc *scope) {
	if len(r.wf.Spec.OnFailure) == 0 {
		return
	}
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), r.e.opts.CleanupTimeout)
		defer cancel()
	}
	for _, s := range r.wf.Spec.OnFailure {
		st := fromSubStep(s)
		st.allowFailure = true
		if _, err := r.call(ctx, st, st.id, sc); err != nil {
			r.e.log.Warn("onFailure step failed", "workflow", r.name, "step", st.id, "error", redact.String(err.Error()))
		}
	}
}

// call runs one tool step: its condition, its arguments, the call, its
// result. It reports whether the tool ran and succeeded; an error means
// the workflow must stop (a bad input, or a failure the step does not
// allow).
func (r *runner) call(ctx context.Context, st step, recID string, sc *scope) (bool, error) {
	rec := &record{id: st.id, key: recID, tool: st.tool, started: time.Now(), output: st.output, allowFailure: st.allowFailure}
	if st.cond != nil {
		info, err := r.condition(ctx, st, sc)
		if err != nil {
			return false, err
		}
		rec.cond = info
		if !info.passed {
			rec.status, rec.end = types.StepSkipped, time.Now()
			r.add(sc, rec)
			r.stepFinished(rec)
			return false, nil
		}
	}
	args, err := r.args(st.args, sc, "args")
	if err != nil {
		return false, stepErr(r.name, st.id, "", err)
	}
	rec.input = args
	r.stepStarted(rec)
	result, callErr := r.callTool(ctx, st.tool, args)
	rec.end = time.Now()
	if callErr != nil {
		err := stepErr(r.name, recID, "", callErr)
		rec.status, rec.err = types.ExecutionFailed, redact.String(callErr.Error())
		r.add(sc, rec)
		r.stepFinished(rec)
		failed := map[string]any{"success": false, "isError": true, "error": rec.err}
		sc.results[st.id] = failed
		if recID != st.id {
			sc.results[recID] = failed
		}
		if st.allowFailure {
			return false, nil
		}
		return false, err
	}
	rec.status, rec.result = types.ExecutionCompleted, result
	r.add(sc, rec)
	r.stepFinished(rec)
	sc.results[st.id] = result
	if recID != st.id {
		sc.results[recID] = result
	}
	return true, nil
}

// args renders a step's or condition's arguments. field prefixes errors.
func (r *runner) args(raw map[string]v1alpha1.JSON, sc *scope, field string) (map[string]any, error) {
	out := make(map[string]any, len(raw))
	data := sc.data(r.input)
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		v, err := decodeJSON(raw[k].Raw)
		if err != nil {
			return nil, &fieldError{field: field + "." + k, err: err}
		}
		r.track(sc, v)
		if out[k], err = renderValue(v, data, field+"."+k); err != nil {
			// muster's words, which its clients look for.
			return nil, rephrase(err, "failed to render arguments")
		}
	}
	return out, nil
}

// stepTimeoutError is the cause of a call's context that ran past the
// called server's timeout.
type stepTimeoutError struct {
	tool    string
	timeout time.Duration
}

func (e *stepTimeoutError) Error() string {
	return fmt.Sprintf("the call of %s timed out after %s (its server's timeout)", e.tool, e.timeout)
}

// callTool calls tool and returns its result as templates see it: a text
// that is JSON parsed, else its structured content, else the text. A
// result that is an error, too large, or a call that failed is an error.
func (r *runner) callTool(ctx context.Context, tool string, args map[string]any) (any, error) {
	if r.caller == nil {
		return nil, errors.New("no tool router is wired to the workflow engine")
	}
	// A step's result is the workflow's to consume: a server's
	// input-required result cannot be relayed to a caller of 2026-07-28
	// from the middle of a run, so its step is called as one of a client
	// that takes none (and its server's questions are refused, failing the
	// step). A caller of 2025-11-25 is asked them on its own session.
	ctx = peer.WithoutRelay(ctx)
	callCtx := ctx
	if r.e.opts.StepTimeout != nil {
		if d := r.e.opts.StepTimeout(tool); d > 0 {
			var cancel context.CancelFunc
			callCtx, cancel = context.WithTimeoutCause(ctx, d, &stepTimeoutError{tool: tool, timeout: d})
			defer cancel()
		}
	}
	res, err := r.caller.CallTool(callCtx, tool, args, r.progress)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("calling %s: %w", tool, cause(ctx))
		case callCtx.Err() != nil:
			return nil, context.Cause(callCtx)
		}
		return nil, fmt.Errorf("calling %s: %w", tool, err)
	}
	if res == nil {
		return nil, fmt.Errorf("calling %s: no result", tool)
	}
	if res.NeedsInput() || len(res.InputRequests) > 0 {
		return nil, fmt.Errorf("calling %s: its server asked for the client's input, which a workflow step cannot pass on", tool)
	}
	if n := resultSize(res); n > r.e.opts.MaxResultBytes {
		return nil, &fieldError{field: "result", err: fmt.Errorf("the result of %s is %d bytes, more than the limit of %d", tool, n, r.e.opts.MaxResultBytes)}
	}
	value := resultValue(res)
	if res.IsError {
		text, _ := value.(string)
		if text == "" {
			data, _ := json.Marshal(value)
			text = string(data)
		}
		return nil, fmt.Errorf("%s returned an error: %s", tool, text)
	}
	return value, nil
}

// cause says why ctx ended, in words for a user: a client's cancellation
// or the run's deadline.
func cause(ctx context.Context) error {
	c := context.Cause(ctx)
	if errors.Is(c, context.Canceled) {
		return errors.New("the run was cancelled")
	}
	return c
}

// executionSteps is the records as the execution keeps them.
func (r *runner) executionSteps() []types.ExecutionStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]types.ExecutionStep, 0, len(r.records))
	for _, rec := range r.records {
		end := rec.end
		s := types.ExecutionStep{StepID: rec.id, Tool: rec.tool, Status: rec.status, StartedAt: rec.started,
			CompletedAt: &end, DurationMs: end.Sub(rec.started).Milliseconds(), Input: redact.Args(rec.input), Result: redactSecretKeys(rec.result)}
		if s.Input == nil {
			s.Input = map[string]any{}
		}
		if rec.err != "" {
			msg := rec.err
			s.Error = &msg
		}
		if rec.status != types.StepSkipped {
			s.StoredAs = rec.key
		}
		out = append(out, s)
	}
	return out
}
