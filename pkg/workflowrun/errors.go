package workflowrun

import (
	"errors"
	"fmt"
)

// Error is a workflow's bad input or a step's failure, naming the
// workflow, the step (none for the workflow's input and output) and the
// field: "workflow deploy, step build, field args.image: template: …".
type Error struct {
	Workflow string
	Step     string
	Field    string
	Err      error
}

func (e *Error) Error() string {
	s := "workflow " + e.Workflow
	if e.Step != "" {
		s += ", step " + e.Step
	}
	if e.Field != "" {
		s += ", field " + e.Field
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// stepErr makes err an *Error of step in workflow wf. A *fieldError inside
// err gives the field, after prefix ("condition.", "forEach."); an *Error
// is returned as it is.
func stepErr(wf, step, prefix string, err error) error {
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return &Error{Workflow: wf, Step: step, Field: prefix + fe.field, Err: fe.err}
	}
	return &Error{Workflow: wf, Step: step, Err: err}
}

// UnavailableError is the answer to a call of a workflow the validator does
// not find valid.
type UnavailableError struct {
	Workflow string
	// Missing are the tools no running server offers.
	Missing []string
	// Reason is the first validation error, when tools are not what is
	// missing.
	Reason string
}

func (e *UnavailableError) Error() string {
	switch {
	case len(e.Missing) > 0:
		return fmt.Sprintf("workflow %s is not available (missing required tools: %s)", e.Workflow, join(e.Missing))
	case e.Reason != "":
		return fmt.Sprintf("workflow %s is not available (%s)", e.Workflow, e.Reason)
	}
	return fmt.Sprintf("workflow %s is not available", e.Workflow)
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ", "
		}
		out += v
	}
	return out
}
