// Package workflow reconciles Workflow resources: it validates each one
// and checks the tools it names against the live tool catalogue.
//
// Place in the pipeline: called by the coordinator for keys of kind
// Workflow; reads the desired state from the resources index and the tools
// of the running MCP servers from the catalogue. Like every reconciler it
// never imports the bus. When the catalogue changes, the runtime bridge
// (package watchers/supervised) publishes a change of every workflow that
// names an affected tool, which brings it back here: no polling.
//
// Guarantees:
//
//   - A workflow is checked by the rules of the reference CRD (the index
//     holds only definitions that passed them); an invalid or unreadable
//     file makes it invalid, with validation errors naming file, line and
//     field, and is a permanent error on the resource; the last good
//     definition stays in force.
//   - Every tool that a step, a step's condition, a forEach or parallel
//     sub-step, an onFailure step or their conditions name is looked up in
//     the catalogue. Each one missing is a validation error naming its step
//     ("step build: tool x_git_status is not offered by any running
//     server"), and is listed in missingTools. One that an exposure
//     policy leaves out or renames away, or that two servers expose at
//     once (catalogue.Why), says so instead, naming the server, the
//     annotation and the policy's field ("step greet: tool x_fake_echo is
//     not exposed: MCPServer default/fake's exposure policy
//     (metadata.annotations[musterd.io/exposure]) leaves it out:
//     tools.exclude[0] \"echo\""), and the Ready message adds it.
//   - A step may call another workflow's tool, workflow_<name>: what the
//     workflow needs is then what that one needs, at any depth (needs.go,
//     the one walk that decides it). A tool missing down the chain is a
//     validation error naming the step and the workflows on the way
//     ("step call-mid (through mid → deep): tool x_a_b is not offered by
//     any running server") and is listed in missingTools; a called
//     workflow not declared is missing as its tool (workflow_<name>).
//     Each called workflow is walked once, so a diamond costs no more and
//     a cycle ends. A tool the endpoint serves itself (core_…,
//     WithBuiltinTools) is offered too. A workflow that calls itself,
//     directly or through others, is invalid with the chain named
//     ("calls itself: a → b → a"), so it is never run into a stack
//     overflow.
//   - Availability judges a workflow by the same walk against the tools
//     offered at the moment of the call (muster's core_workflow_available
//     does so at each call); the recorded verdict says the same once the
//     pipeline has brought the workflow back after the change. A change
//     of a tool a workflow needs only through another, or of a workflow
//     it calls at any depth, brings it back too (the runtime bridge's
//     Needed, and the daemon's callers of a changed workflow).
//   - Every template a workflow holds (arguments, conditions, jsonPath
//     expectations, forEach items, output) must parse, with sprig's
//     functions as the workflow engine runs them; one that does not is a
//     validation error naming the step and the field ("step render:
//     args.x: template: line 1: unclosed action"), so the workflow is
//     refused before any run rather than failing each.
//   - A workflow whose tools are missing reconciled successfully: the
//     reconcile state is Synced, the status says valid: false. It turns
//     valid, with no edit, when a server offering the tools runs.
//   - A missing tool whose exposed name a server still starting would give
//     it (catalogue.StartingFor) is no validation error: the workflow is
//     reported waiting for that server (Ready False, reason
//     WaitingForServer, the tool listed in missingTools, no validation
//     error, valid false: it cannot run yet), and
//     the runtime bridge brings it back the moment the start ends: valid
//     when the server's tools arrive, invalid if the start failed or the
//     server does not offer the tool after all.
//   - Status: valid, validationErrors, referencedTools, missingTools,
//     stepCount, observedGeneration, warnings (the fields of the file
//     musterd ignored, resources.Entry.Warnings) and a Ready condition.
//   - A resource no longer declared is forgotten, and reported Deleted;
//     List covers both what is declared and what was recorded.
package workflow
