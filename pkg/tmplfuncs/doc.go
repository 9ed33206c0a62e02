// Package tmplfuncs is the one function library of workflow templates,
// shared by the workflow reconciler (which parses every template of a
// workflow to validate it) and the workflow engine (which renders them), so
// that a template is valid exactly when it can run.
//
// It is sprig's text library, the one muster and Helm use, less the
// functions a template written by whoever can declare a workflow must not
// reach, as Helm removes them:
//   - env and expandenv, which read the daemon's environment (its token,
//     its credentials) into tool arguments, results and execution records;
//   - getHostByName, a DNS lookup: a network call from inside a render.
//
// Bounds (bounds.go). text/template ignores the run's deadline, so a
// render is bounded by what it may produce: Parse refuses {{define}},
// {{template}} and {{block}} (recursion), the expensive crypto functions
// (genPrivateKey, genCA…, bcrypt, htpasswd, derivePassword) are dropped,
// the generators whose result size is an argument (repeat, until,
// untilStep, seq, rand*, indent, nindent, wrapWith, replace,
// regexReplaceAll*, join, printf) refuse before building past MaxBytes or
// MaxItems, every function's result is checked against them, set and
// merge refuse to make a map hold itself, and Execute counts all range
// iterations against MaxIterations and writes through a writer limited to
// MaxBytes. Every bound exceeded is an error wrapping ErrLimit. The worst
// render is thus about MaxIterations function calls of MaxBytes each.
//
// A leaf: it imports no musterd package.
package tmplfuncs
