// Package npmtest finds the npm packages the tests run against, as the
// Makefile installs them under .cache/npm at the module's root: the MCP
// server @modelcontextprotocol/server-everything (`make npm-servers`), the
// MCP Inspector's CLI and the TypeScript SDK (`make npm-clients`), and, under
// .cache/npm-conformance with the Node 22 it needs, the official MCP
// conformance suite (`make npm-conformance`; x86-64 Linux only).
//
// Place: test support only, beside the pipeline; it imports nothing of
// musterd's.
//
// Guarantees:
//
//   - The path is found from the module's root (the nearest go.mod above
//     the test's working directory), so any package's tests may use it.
//   - When node or the package is missing the test is skipped with a
//     message that says which `make` target installs it, unless
//     MUSTERD_REQUIRE_NPM=1 (set by `make test` where node is installed),
//     where it fails instead: a suite that must run the tests against real
//     npm servers never passes by skipping them.
//   - [Lookup] reports the same verdict to a test that runs without the
//     package (a subtest skips), failing it all the same under
//     MUSTERD_REQUIRE_NPM=1.
//
// Use:
//
//	bin := npmtest.ServerEverything(t) // run as: bin stdio
//	cli := npmtest.Inspector(t)
//	sdk := npmtest.TypeScriptSDK(t) // its package directory: import from sdk/dist/esm/…
//	node, script := npmtest.Conformance(t) // run as: node script server --url …
//	node, script = npmtest.ConformanceOf(t, npmtest.Conformance2026Package) // the 2026-07-28 suite
package npmtest
