// Package coretools is the one home of muster's core tools, with muster's
// names, arguments and answers, declared with package tooldef:
//
//   - reading (read.go, events.go, config.go): core_mcpserver_list/get,
//     core_service_list/status, core_workflow_list/get/available,
//     core_events, core_config_get, and musterd's core_reconcile_status;
//   - changing definitions (tools.go): core_mcpserver_validate/create/
//     update/delete and core_workflow_validate/create/update/delete;
//   - services: core_service_start/stop/restart;
//   - executions (executions.go): core_workflow_execution_list/get;
//   - the caller's own logins to protected servers (auth.go):
//     core_auth_login/logout, over Logins, which the wiring gives; the
//     caller is its identity (package identity), and a login or logout is
//     only ever the caller's own; the resource auth://status (authstatus.go)
//     is the caller's standing with each server, with, for a single
//     sign-on server, sso_pending and sso_attempt_failed (and why) when
//     Logins is also an SSOStatus; core_auth_login then waits for the
//     caller's SSO connection still opening before it answers.
//
// Place in the pipeline: an edge. The router (package router) lists and
// calls the Provider first among its sources; the Provider knows nothing
// of the endpoint. It reads what the stages keep (the index, the status
// store, the reconcilers' observed status, muster's view of the events,
// the engine's executions). Definitions are changed through package
// declare, which writes where the watchers read; services through package
// controls. Neither path applies a change itself: the pipeline does. The
// tools a Provider offers follow its Options: without a Store, Controls or
// Executions, the tools that need them are not offered.
//
// Guarantees:
//
//   - The read tools answer muster's shapes as one text item of compact
//     JSON; arguments of the wrong type are the tool's error naming them
//     (tooldef.Tool.Check). Env values and headers are redacted in the
//     answers (api/shared.RedactMCPServer).
//   - core_events lists muster's events (musterevents: MCPServerCreated,
//     WorkflowStepCompleted, …), newest first, at most limit (50), as
//     muster does; a resourceType it does not know matches nothing, as in
//     muster. Its follow returns those and then writes each later event as
//     notifications/muster/event to the caller's session
//     (router.Caller.Notify); a follow has its own goroutine and bounded
//     queue, so a slow session loses its own events and delays nothing
//     else, and it ends with the session or the session's next follow.
//   - core_workflow_available, core_workflow_list and core_workflow_get
//     say whether a workflow is available as it is judged at the moment
//     of the call (Options.WorkflowAvailability: every tool it needs,
//     through the workflows it calls at any depth, offered now), as muster
//     judges it at each call, so an answer never lags a server's start;
//     core_workflow_get lists the tools it lacks as missingTools. The
//     judgement is the caller's: a tool of a server only another user
//     connects to is missing, the caller's own connections' are offered.
//   - core_mcpserver_validate, _create and _update advertise the auth
//     argument's whole schema (authschema.go): muster's property names,
//     types, enums and required fields down to tokenExchange's
//     clientCredentialsSecretRef, in musterd's words, so clients compose
//     the argument from describe_tool as they do against muster.
//   - The tools that change things answer muster's texts: one text item, a plain string, isError set on
//     failure ("MCP server 'x' created successfully", "Validation failed:
//     …", "Failed to update workflow: workflow x not found").
//   - A workflow that core_workflow_validate, _create or _update refuses is
//     answered in muster's words ("Validation failed: validation failed:
//     steps: step 0 (a): one of tool, forEach, or parallel is required"):
//     the problem muster would have found first, translated from the
//     structure of musterd's validation result (v1alpha1.FieldError's Cause
//     and Path; refusal.go), never from its messages. muster's texts are
//     all in musterwords.go. A problem muster does not check keeps
//     musterd's words, told when muster would have found none.
//   - A create, update or delete answers once the change is in force, the
//     index holding the definition written (or no longer holding the one
//     deleted), within Options.InForceTimeout; with wait: true (musterd's
//     addition) once its reconcile is done, Synced or Failed, naming the
//     state. Past the deadline the answer says the change is written but
//     not yet in force; no call hangs.
//   - resourceVersion (musterd's addition) on update and delete names the
//     version read (core_mcpserver_get's, or the file's hash): an edit since
//     makes the call fail with a conflict, and survives.
//   - Arguments a tool does not know are put where the file decoder sees
//     them, so that it names them ("spec.foo: unknown field"); values of
//     the wrong type are named the same way.
//   - Every call of the Store is bounded by Options.StoreTimeout (30s): an
//     API server or disk that hangs fails the tool ("Failed to create MCP
//     server: create mcpserver/default/x: the kubernetes store did not
//     answer within 30s") rather than holding it.
//   - Env values and headers are never echoed: every error text is scrubbed
//     of them (declare.Scrub).
//   - spec.auth is checked as a file's is, and muster's tools' own rule
//     with it: a stdio server's auth type other than none is refused
//     (package v1alpha1 warns of it in a file). An authorizationServer
//     issuer with a trailing slash is written without it, as muster's
//     tools write it (authargs.go).
//   - Every check of a definition (a validate, and a create's or update's:
//     invalid, or valid and written) is published as an
//     events.DefinitionValidated through Options.Publish, its error
//     scrubbed and redacted: a definition refused here never reaches the
//     watchers, and muster's clients see its WorkflowValidationFailed.
//   - core_mcpserver_create by an authenticated user (identity.From with a
//     Subject) stamps that subject in the new server's annotation
//     ui.giantswarm.io/registered-by, whatever the arguments say; an
//     update keeps it; core_mcpserver_get and _list show it as
//     registeredBy, as muster does. Without a user nothing is stamped.
//   - A server given the users' tokens (auth.forwardToken,
//     auth.tokenExchange) is the operator's to declare (usertokens.go):
//     core_mcpserver_create and _update refuse a signed-in user who asks
//     for one, or who would change one, saying so; nothing is written.
//   - A server musterd itself holds no credential for (Auth Required) is
//     shown Connected, in core_mcpserver_list/get and core_service_list/
//     status, to a caller whose own connection to it is up
//     (Logins.Connected), as muster shows it once the caller's session has
//     logged in; to every other caller it stays Auth Required.
package coretools
