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
// A leaf: it imports no musterd package.
package tmplfuncs
