// Package archtest holds the tests that keep musterd's layout as it is
// drawn.
//
// imports_test.go keeps imports flowing one way, in pipeline order: events
// is a leaf; bus knows only events; the stages know the bus, the events
// and their own interfaces; reconcilers never know the bus; only the
// wiring (pipeline, lifecycle, cmd) knows everything.
//
// homes_test.go says where each concept of the MCP side lives, one
// package each, and fails when a second home grows:
//
//	views and sessions (/mcp, /mcp/direct, /sse, meta-tools)  pkg/mcpserve
//	tool calls (the exposed set, the one way in, the caller)  pkg/router
//	the running servers' exposed tools                        pkg/catalogue
//	sessions to the managed servers, each client's, user's    pkg/supervisor
//	the client a call comes from, as a server sees it          pkg/peer
//	the core tools, read and write                            pkg/coretools
//	declaring a tool musterd implements                       pkg/tooldef
//	workflow runs and their executions                        pkg/workflowrun
//	following the bus at a reader's pace                      pkg/bus (Follow)
//	muster's view of the events, and following it             pkg/musterevents
//	the aggregator.oauth configuration, its secrets           pkg/oauth/config
//	musterd as authorization server (op.NewProvider)          pkg/oauth/authserver
//
//	MCP client ──▶ mcpserve ──▶ router ──▶ coretools (core_…)
//	                              │   ├──▶ catalogue ──▶ supervisor ──▶ a managed server
//	workflowrun (a step) ─────────┘   └──▶ workflowrun (workflow_…)
package archtest
