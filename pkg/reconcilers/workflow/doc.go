// Package workflow reconciles Workflow resources.
//
// Place in the pipeline: called by the coordinator for keys of kind
// Workflow; reads the desired state from the resources index. Like every
// reconciler it never imports the bus.
//
// This version validates and records the desired state: a Workflow is
// valid when its file decodes and passes the CRD's rules. Checking the
// tools its steps name against the tools of the running MCP servers comes
// with the real MCPServer reconciler. What it guarantees already:
//
//   - an invalid or unreadable file makes the Workflow invalid, with
//     validation errors naming file, line and field, and is a permanent
//     error on the resource; the last good definition stays recorded;
//   - a resource no longer declared is forgotten, and reported Deleted;
//   - List covers both what is declared and what was recorded.
package workflow
