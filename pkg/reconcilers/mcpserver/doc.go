// Package mcpserver reconciles MCPServer resources.
//
// Place in the pipeline: called by the coordinator for keys of kind
// MCPServer; reads the desired state from the resources index. Like every
// reconciler it never imports the bus.
//
// This version validates and records the desired state only: it does not
// start processes or connect to remote servers yet, so every server it
// records is reported Stopped. What it guarantees already:
//
//   - the definition in force is the index's last good one; an invalid or
//     unreadable file is a permanent error on the resource, naming the file,
//     line and field, while the last good definition stays recorded;
//   - a resource no longer declared is forgotten, and reported Deleted;
//   - List covers both what is declared and what was recorded, so the
//     resync reaches orphans.
package mcpserver
