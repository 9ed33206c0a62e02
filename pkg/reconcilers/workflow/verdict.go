package workflow

import (
	"math/bits"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// verdict is what a reconcile records of a workflow: the definition it
// judged and what it found, from which status and condition spell out the
// status when it is read.
//
// Most verdicts say only which of the definition's tools no server offers
// (none, for a valid workflow). Such a verdict is compact: a bit per
// reference, in references' order, and the lists and messages of the
// status are derived from the definition when read. A verdict that holds
// more (the file's errors or warnings, template errors, a cycle, a server
// still starting, or a missing tool past the 64th reference) keeps its
// lists as they were found. With 100,000 workflows each missing its one tool, as
// in make bench, spelling out every verdict kept 356 bytes a workflow in
// the reconciler (BenchmarkRetainedPerWorkflow): its message, three
// one-item lists and a 184-byte map slot.
//
// def is the index's definition, shared and never changed: keeping it
// costs nothing while it is in force, and the status says what this
// reconcile judged even after an edit, until the next reconcile.
type verdict struct {
	def     *v1alpha1.Workflow // nil when the file never held a good definition
	missing uint64             // compact: bit i, references(def)'s i-th tool is not offered
	lists   *verdictLists      // spelled out; nil when compact
	since   int64              // the Ready condition's last transition, in Unix nanoseconds: 8 bytes, not a time.Time's 24
	reason  readyReason
	valid   bool
	// badTemplates: a template of def does not parse. Kept apart from
	// the errors for Availability, which judges the tools again but not
	// def's own templates while def is in force.
	badTemplates bool
}

// verdictLists is a verdict spelled out.
type verdictLists struct {
	validationErrors []string
	missingTools     []string // sorted, without repeats
	waiting          []string // reasonWaitingForServer: the servers still starting, sorted
	warnings         []string // what the decoder ignored in def (resources.Entry.Warnings)
	hidden           []string // missing tools held back by an exposure policy or a conflict, each with why
}

// maxCompactReferences is how many references a compact verdict's bits
// cover.
const maxCompactReferences = 64

// readyReason is the Ready condition's reason, one of the Reason*
// constants, as verdict keeps it.
type readyReason uint8

const (
	reasonValid readyReason = iota
	reasonInvalid
	reasonToolsMissing
	reasonWaitingForServer
)

// String is the reason's Reason* constant.
func (r readyReason) String() string {
	return [...]string{ReasonValid, ReasonInvalid, ReasonToolsMissing, ReasonWaitingForServer}[r]
}

func (v verdict) ready() bool { return v.reason == reasonValid }

// status is v's status without conditions. The lists of a verdict spelled
// out are v's; those of a compact one are made anew.
func (v verdict) status() v1alpha1.WorkflowStatus {
	st := v1alpha1.WorkflowStatus{Valid: v.valid}
	if v.def != nil {
		st.StepCount = len(v.def.Spec.Steps)
		st.ReferencedTools = Tools(v.def)
		st.ObservedGeneration = v.def.Generation
	}
	switch {
	case v.lists != nil:
		st.ValidationErrors, st.MissingTools = v.lists.validationErrors, v.lists.missingTools
		st.Warnings = v.lists.warnings
	case v.missing != 0:
		n := bits.OnesCount64(v.missing)
		st.ValidationErrors, st.MissingTools = make([]string, 0, n), make([]string, 0, n)
		i := 0
		for ref := range references(v.def) {
			if v.missing&(1<<i) != 0 {
				st.ValidationErrors = append(st.ValidationErrors, ref.missing())
				st.MissingTools = append(st.MissingTools, ref.tool)
			}
			i++
		}
		slices.Sort(st.MissingTools)
		st.MissingTools = slices.Compact(st.MissingTools)
	}
	return st
}

// condition is the Ready condition of v, whose status is st.
func (v verdict) condition(st v1alpha1.WorkflowStatus) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: v.reason.String(),
		ObservedGeneration: st.ObservedGeneration, LastTransitionTime: metav1.NewTime(time.Unix(0, v.since))}
	switch v.reason {
	case reasonValid:
		c.Status, c.Message = metav1.ConditionTrue, "every tool it calls is offered"
	case reasonInvalid:
		c.Message = st.ValidationErrors[0]
	case reasonToolsMissing:
		c.Message = "tools not offered by any running server: " + strings.Join(st.MissingTools, ", ")
		if v.lists != nil && len(v.lists.hidden) > 0 {
			c.Message += " (" + strings.Join(v.lists.hidden, "; ") + ")"
		}
	case reasonWaitingForServer:
		c.Message = "waiting for mcp servers still starting (" + strings.Join(v.lists.waiting, ", ") + ") to offer: " +
			strings.Join(st.MissingTools, ", ")
	}
	return c
}
