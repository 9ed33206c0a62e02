package tmplfuncs

import (
	"fmt"
	"strings"
)

// IsTemplate reports whether s holds a template action at all. A string
// without one is a literal: the engine passes it on unchanged and the
// reconciler does not parse it.
func IsTemplate(s string) bool { return strings.Contains(s, "{{") }

// CleanError drops text/template's "template: t:1:2: executing "t" at
// <...>:" prefix of an error of Parse or Execute down to its position and
// cause, which is what a user can act on: "template: line 1:2: ...". An
// error of another form (a bound of Execute) is only prefixed "template: ".
// The reconciler and the engine both show errors so, so that a workflow's
// validation and its runs name a bad template alike.
func CleanError(err error) error {
	msg := err.Error()
	if !strings.HasPrefix(msg, "template: ") {
		return fmt.Errorf("template: %w", err)
	}
	msg = strings.TrimPrefix(msg, "template: ")
	msg = strings.Replace(msg, `executing "t" at `, "at ", 1)
	msg = strings.TrimPrefix(msg, "t:")
	return fmt.Errorf("template: line %s", msg)
}
