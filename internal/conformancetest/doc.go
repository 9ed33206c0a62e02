// Package conformancetest runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned by `make npm-conformance`)
// against an MCP server's URL, and compares runs check for check.
//
// Place: test support only. It imports nothing of musterd's but
// internal/npmtest, which finds the suite and the Node 22 it runs on.
//
// Use: run the suite straight against a server, then through musterd, and
// require the same outcome of every check:
//
//	bin := conformancetest.BuildEverythingServer(t) // the go-sdk's conformance server
//	straight := conformancetest.Run(t, conformancetest.ServeHTTP(t, bin))
//	through := conformancetest.Run(t, "http://127.0.0.1:PORT/mcp/servers/everything")
//	assert.Empty(t, conformancetest.Diff(straight, through))
//
// The suite's 2026-07-28 release (`make npm-conformance-2026`) runs the
// same way with RunSuite(t, Suite20260728, url), against a server that
// speaks that protocol (the everything-server: ServeHTTPStateless).
//
// Guarantees:
//
//   - Run and RunSuite read the suite's own results (a checks.json per scenario under
//     its -o directory), not its console output; each check keeps its
//     scenario, id, status (SUCCESS, FAILURE, WARNING, INFO, SKIPPED) and
//     error message.
//   - A run that cannot reach its server fails its checks: Run never
//     passes by finding nothing (a run that leaves no result fails t).
//   - Diff names every check whose status differs between two runs, and
//     every check one run has and the other has not.
//   - The suite runs under a deadline (3 minutes); a hung run fails t with
//     the tail of its output.
package conformancetest
