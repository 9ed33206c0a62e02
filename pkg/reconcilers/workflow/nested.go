package workflow

import (
	"slices"
	"strings"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/resources"
)

// WorkflowToolPrefix starts the tool of every workflow: workflow_<name>.
// A step calling such a tool runs another workflow.
const WorkflowToolPrefix = "workflow_"

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithBuiltinTools names the tools that no MCP server offers but the
// endpoint's router serves itself (core_…): a step may call them.
func WithBuiltinTools(builtin func(tool string) bool) Option {
	return func(r *Reconciler) { r.builtin = builtin }
}

// offered reports whether a running server offers tool, or the router
// serves it: a step may call it. A workflow's tool is not looked up here:
// what that workflow needs is (needs.go).
func (r *Reconciler) offered(tool string) bool {
	if _, nested := nestedWorkflow(tool); nested {
		return false // a workflow not declared: needs yields its tool
	}
	if r.builtin != nil && r.builtin(tool) {
		return true
	}
	return r.tools.Has(tool)
}

// workflowNamed returns the definition in force of the workflow called
// name, as the engine finds it (workflowIn).
func (r *Reconciler) workflowNamed(name string) (*v1alpha1.Workflow, bool) {
	return workflowIn(r.index, name)
}

// workflowIn returns the definition in force of the workflow called name,
// as the engine finds it: by name alone, the first key in ix's order. It
// looks up the name in each namespace: a scan of every workflow's key,
// for each workflow_… step of each reconcile, cost a copy of 100,000 keys
// a step with 100,000 workflows declared.
func workflowIn(ix *resources.Index, name string) (*v1alpha1.Workflow, bool) {
	for _, k := range ix.Named(v1alpha1.KindWorkflow, name) {
		if entry, ok := ix.Get(k); ok {
			if wf, ok := entry.Object.(*v1alpha1.Workflow); ok && wf != nil {
				return wf, true
			}
		}
	}
	return nil, false
}

// cycle returns the chain of workflows by which wf calls itself, directly
// or through others ("a → b → a"), or nil: such a workflow would run
// until the stack or the deadline gave out, so it is refused.
func (r *Reconciler) cycle(wf *v1alpha1.Workflow) []string {
	start := wf.Name
	visited := map[string]bool{}
	var path []string
	var walk func(name string, def *v1alpha1.Workflow) []string
	walk = func(name string, def *v1alpha1.Workflow) []string {
		path = append(path, name)
		defer func() { path = path[:len(path)-1] }()
		for _, tool := range Tools(def) {
			next, ok := strings.CutPrefix(tool, WorkflowToolPrefix)
			if !ok {
				continue
			}
			if next == start {
				return append(slices.Clone(path), next)
			}
			if visited[next] {
				continue
			}
			visited[next] = true
			if nd, ok := r.workflowNamed(next); ok {
				if c := walk(next, nd); c != nil {
					return c
				}
			}
		}
		return nil
	}
	return walk(start, wf)
}
