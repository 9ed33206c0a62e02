package workflow

import (
	"iter"
	"slices"
	"strings"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/resources"
)

// need is a tool a workflow needs to run: one that a reference of its own
// names, or one that a workflow it calls (workflow_<name>) needs, at any
// depth. A nested workflow's tool is no need of its own: what the nested
// workflow needs is; but the tool of a workflow not declared is one, and
// nothing offers it.
type need struct {
	ref  reference // the workflow's own reference through which tool is needed
	i    int       // ref's place in references' order
	via  []string  // the workflows called on the way, outermost first; nil when ref names tool itself
	tool string
}

// where names the place of n in the workflow judged, for a message: its
// own step, and the workflows called through it.
func (n need) where() string {
	if len(n.via) == 0 {
		return n.ref.where()
	}
	return n.ref.where() + " (through " + strings.Join(n.via, " → ") + ")"
}

// missing is the validation error of a needed tool no server offers.
func (n need) missing() string {
	return n.where() + ": tool " + n.tool + " is not offered by any running server"
}

// nestedWorkflow returns the name of the workflow that tool runs, if it is
// a workflow's tool (workflow_<name>).
func nestedWorkflow(tool string) (string, bool) {
	name, ok := strings.CutPrefix(tool, WorkflowToolPrefix)
	return name, ok && name != ""
}

// walkNeeds hands to s every tool wf needs to run, in the order of the
// definition, descending into each workflow a step calls as the engine
// would run it (the first of that name in ix's order): its tools are
// needed in turn, at any depth. A called workflow not declared is needed
// as its tool, which nothing offers. Each called workflow is walked once,
// however many steps call it: a diamond is not walked twice, and a cycle
// (a → b → a) ends where it closes, so the walk always ends; the cycle
// itself is the caller's to refuse (cycle). The same tool may be handed
// more than once, from different places. The walk stops when s.take
// returns false.
//
// This is the one answer to "what does this workflow need": the
// reconciler's verdict, the MCP endpoint's live availability
// (Reconciler.Availability) and the runtime bridge's choice of the
// workflows a catalogue change affects (Needed) all walk it. s is an
// interface, not a func, and ix is looked up directly, so that judging a
// workflow that calls none (most do) allocates no more than walking its
// references: 100,000 workflows are judged at each resync.
func walkNeeds(ix *resources.Index, wf *v1alpha1.Workflow, s needSink) {
	w := walker{ix: ix, root: wf.Name, sink: s}
	for ref := range references(wf) {
		if !w.visit(ref, nil, ref.tool) {
			return
		}
		w.i++
	}
}

// needSink takes the needs of a walk; false stops it.
type needSink interface{ take(need) bool }

// yieldSink hands each need to an iterator's yield.
type yieldSink func(need) bool

func (y yieldSink) take(n need) bool { return y(n) }

// walker is one walk of walkNeeds.
type walker struct {
	ix     *resources.Index
	root   string
	sink   needSink
	i      int             // the place of the reference walked
	walked map[string]bool // the workflows walked; made on the first call of one, as most workflows call none
}

// visit hands on tool, needed through ref and via, or walks what the
// workflow it runs needs; false once the sink asked to stop.
func (w *walker) visit(ref reference, via []string, tool string) bool {
	name, nested := nestedWorkflow(tool)
	if !nested {
		return w.sink.take(need{ref: ref, i: w.i, via: via, tool: tool})
	}
	def, declared := workflowIn(w.ix, name)
	if !declared {
		return w.sink.take(need{ref: ref, i: w.i, via: via, tool: tool})
	}
	if w.walked == nil {
		w.walked = map[string]bool{w.root: true}
	}
	if w.walked[name] {
		return true
	}
	w.walked[name] = true
	via = append(slices.Clip(via), name)
	for sub := range references(def) {
		if !w.visit(ref, via, sub.tool) {
			return false
		}
	}
	return true
}

// Needed yields every tool wf needs to run, looking up the workflows it
// calls in ix: the tools its own steps, sub-steps and conditions name
// and, for each workflow it calls, what that one needs, at any depth (a
// workflow called but not declared is needed as its tool). A change of
// any of them may change wf's verdict.
func Needed(ix *resources.Index, wf *v1alpha1.Workflow) iter.Seq[string] {
	return func(yield func(string) bool) {
		walkNeeds(ix, wf, yieldSink(func(n need) bool { return yield(n.tool) }))
	}
}
