package coretools

import (
	"errors"

	"github.com/musterd/musterd/pkg/declare"
)

// errorText is the text of err, a definition of w's kind that declare
// refused or failed to write, as the tools answer it.
//
// The problems of a definition declare refuses are already scrubbed one by
// one (the env and header values of the definition removed, each message
// redacted): they are joined as they are. Redacting the joined text again
// would take a field path for a secret's key and its message for the
// secret ("spec.auth.type: [redacted] value"), as the redactor takes any
// key with the word auth or token in it: the answer would no longer say
// what is wrong with spec.auth. Any other error is scrubbed whole.
func (w writes) errorText(spec map[string]any, err error) string {
	if invalid, ok := errors.AsType[*declare.InvalidError](err); ok && len(invalid.Errs) > 0 {
		return invalid.Error()
	}
	msg := err.Error()
	if w.scrub {
		msg = declare.Scrub(spec, msg)
	}
	return msg
}
