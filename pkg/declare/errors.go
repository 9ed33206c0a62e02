package declare

import (
	"fmt"
	"strings"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// KindWord is the kind as muster's texts spell it: "MCP server",
// "workflow".
func KindWord(kind string) string {
	switch kind {
	case v1alpha1.KindMCPServer:
		return "MCP server"
	case v1alpha1.KindWorkflow:
		return "workflow"
	}
	return kind
}

// NotFoundError says a definition to update, delete or read is not
// declared.
type NotFoundError struct{ Key events.Key }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s %s not found", KindWord(e.Key.Kind), e.Key.Name)
}

// ExistsError says a definition to create is declared already.
type ExistsError struct {
	Key events.Key
	// Where is the file or object that declares it.
	Where string
}

func (e *ExistsError) Error() string {
	msg := fmt.Sprintf("%s '%s' already exists", KindWord(e.Key.Kind), e.Key.Name)
	if e.Where != "" {
		msg += " (" + e.Where + ")"
	}
	return msg
}

// ConflictError says the definition changed since the caller, or the
// store itself, read it: nothing was written.
type ConflictError struct {
	Key events.Key
	// Where is the file or object.
	Where string
	// Expected is the version the write was based on; Found the one there
	// now ("" when it is gone).
	Expected, Found string
}

func (e *ConflictError) Error() string {
	found := e.Found
	if found == "" {
		found = "none (it was deleted)"
	}
	return fmt.Sprintf("conflict: %s %s (%s) was changed by someone else since it was read (version %s, now %s); nothing was written: read it again and retry",
		KindWord(e.Key.Kind), e.Key.Name, e.Where, e.Expected, found)
}

// InvalidError says a definition does not validate. Its errors name the
// fields as the file decoder does, without the generated document's file
// and lines.
type InvalidError struct {
	Key  events.Key
	Errs v1alpha1.FieldErrors
	// Msg is set instead of Errs for a problem the decoder reports for the
	// document as a whole.
	Msg string
	// Spec is the spec that was checked, an update's merged with what was
	// declared, for callers that say the problem in words of their own
	// (which step is spec.steps[2]); nil when the name was refused. Error
	// never shows it: it holds env and header values.
	Spec map[string]any
}

func (e *InvalidError) Error() string {
	if len(e.Errs) == 0 {
		return e.Msg
	}
	msgs := make([]string, len(e.Errs))
	for i, fe := range e.Errs {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "; ")
}

// UneditableError says the file that declares a definition holds more than
// it (other documents) or something else: musterd edits and deletes only a
// file that declares exactly the one resource, and leaves the rest to its
// owner.
type UneditableError struct {
	Key   events.Key
	Where string
	Why   string
}

func (e *UneditableError) Error() string {
	return fmt.Sprintf("%s %s is declared in %s, which %s; musterd edits and deletes only a file declaring that one resource: change it by hand",
		KindWord(e.Key.Kind), e.Key.Name, e.Where, e.Why)
}
