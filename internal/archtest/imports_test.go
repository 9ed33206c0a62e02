package archtest

import (
	"fmt"
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/musterd/musterd"

// allowed lists, for each package (a path below the module, matched by
// longest prefix), the musterd packages its non-test code may import. A
// package that matches no entry fails the test: where a new package sits in
// the pipeline must be decided, not defaulted.
var allowed = map[string][]string{
	"pkg/events":            {},
	"pkg/events/eventstest": {"pkg/events"},
	"pkg/redact":            {},             // a leaf beside events, for every stage
	"pkg/tmplfuncs":         {},             // the template functions, a leaf shared by the workflow reconciler and engine
	"pkg/apis":              {"pkg/events"}, // the resource types
	"pkg/resources":         {"pkg/events"},
	"pkg/bus":               {"pkg/events"},
	// The work queue of handles, below the stages that queue keys.
	"pkg/keyqueue":    {"pkg/events", "internal/ring"},
	"pkg/catalogue":   {"pkg/events", "internal/registry"},                                                             // the tools of running servers, beside the index, and each owner's view of them (owners as strings: no identity)
	"pkg/reconcilers": {"pkg/events", "pkg/apis", "pkg/resources", "pkg/supervisor", "pkg/catalogue", "pkg/tmplfuncs"}, // plain code over state: never the bus
	"pkg/debouncer":   {"pkg/events", "pkg/bus", "internal/ring"},
	"pkg/coordinator": {"pkg/events", "pkg/bus", "pkg/reconcilers", "pkg/redact", "pkg/keyqueue"},
	"pkg/statusync":   {"pkg/events", "pkg/bus", "pkg/redact", "pkg/apis", "pkg/keyqueue"},
	"pkg/watchers":    {"pkg/events", "pkg/bus", "pkg/redact", "pkg/apis", "pkg/resources"},
	// The runtime watcher bridges the supervisor to the bus and the
	// catalogue, and finds workflows by the tools they name.
	"pkg/watchers/supervised": {"pkg/events", "pkg/bus", "pkg/redact", "pkg/apis", "pkg/resources", "pkg/supervisor", "pkg/catalogue", "pkg/reconcilers/workflow"},
	"pkg/lifecycle":           {"pkg/bus", "pkg/redact"},
	"pkg/election":            {"pkg/events", "pkg/bus"}, // a foundation gating the leader-only stages
	// muster's view of the events: a translation, and an observer of the
	// bus that keeps it, beside the history.
	"pkg/musterevents": {"pkg/events", "pkg/bus", "pkg/redact", "pkg/apis"},
	// Kubernetes Events: an observer of the bus's outcomes, leader-only.
	"pkg/kubeevents": {"pkg/events", "pkg/bus", "pkg/redact", "pkg/apis", "pkg/musterevents"},
	"pkg/supervisor": {"pkg/events", "pkg/apis", "pkg/redact", "pkg/peer", "pkg/identity", "internal/registry", "internal/jsoneq"}, // runs servers; knows nothing of the bus
	// The client a call comes from, as the managed servers see it: a leaf
	// the endpoint implements and the supervisor reads.
	"pkg/peer": {},
	// Who a request comes from (user, session, owner): a leaf the endpoint
	// sets and the stages keeping per-user state read.
	"pkg/identity": {},
	// Checking a caller's bearer token against the issuers musterd
	// trusts: beside the endpoint's guard, over package identity.
	"pkg/oauth/verify": {"pkg/identity"},
	// musterd as OAuth authorization server, its provider upstream: an
	// edge the wiring mounts and composes with the verifier's check; its
	// state lives in the store.
	"pkg/oauth/authserver": {"pkg/identity", "pkg/oauth/store"},
	// musterd as OAuth client of the protected servers: discovery, the
	// users' logins through /oauth/proxy, their tokens per issuer. A
	// library the wiring mounts and the per-user connections read through
	// its TokenSource; it knows no stage.
	"pkg/oauth/client": {"pkg/redact", "pkg/oauth/store", "pkg/identity"}, // owners are identity.Identity.Owner strings
	// The router is the one way in for a tool call: the exposed set (its
	// sources, the core tools and the workflows, plugged in by the wiring
	// through its Source interface; the running servers' tools from the
	// catalogue, called through the supervisor), each caller's by its
	// identity's owner; never the bus.
	"pkg/router": {"pkg/events", "pkg/redact", "pkg/catalogue", "pkg/supervisor", "pkg/identity", "internal/registry", "internal/jsoneq", "internal/turns"},
	// OAuth state at rest (tokens, login states, registrations), in
	// memory or Valkey, encrypted: a leaf below the OAuth flows.
	"pkg/oauth/store": {},
	// How a tool musterd implements is declared: a leaf.
	"pkg/tooldef": {},
	// The API is an edge, like cmd: it reads the stages' state and serves it.
	"pkg/api": {"pkg/events", "pkg/bus", "pkg/apis", "pkg/resources", "pkg/statusync", "pkg/lifecycle", "pkg/redact", "pkg/eventtrace", "pkg/controls", "pkg/identity"},
	// The MCP endpoint is an edge like the API: its views and sessions. It
	// lists and calls every exposed tool through its Backend (package
	// router) and implements only muster's meta-tools itself, sharing the
	// API's token check (package api/shared, not the API server itself).
	"pkg/mcpserve": {"pkg/events", "pkg/apis", "pkg/redact", "pkg/api/shared", "pkg/router", "pkg/tooldef", "pkg/peer", "pkg/identity", "internal/turns"},
	// What the API and the MCP endpoint must do alike: a leaf of the edges.
	"pkg/api/shared": {"pkg/api/types", "pkg/apis", "pkg/redact", "pkg/statusync", "pkg/identity"},
	// Declared state: writes definitions where the watchers read them, as
	// an editor would; it knows nothing of the stages.
	"pkg/declare": {"pkg/events", "pkg/apis", "pkg/redact"},
	// The live page: static files the browser runs, which read everything
	// from the API. It only serves files: nothing of the pipeline.
	"pkg/ui": {},
	// muster's aggregator.oauth section, typed and checked: a leaf the
	// wiring reads config.yaml into, redacting what it quotes of a value.
	"pkg/oauth/config": {"pkg/redact"},
	// The operators' controls: an edge like the API, which serves them.
	// They reach the stages through the bus and small interfaces.
	"pkg/controls": {"pkg/events", "pkg/bus", "pkg/apis", "pkg/resources", "pkg/statusync", "pkg/redact", "pkg/services"},
	// The overrides the MCPServer reconciler honours: its input, like the
	// index.
	"pkg/services": {"pkg/events", "pkg/apis", "pkg/reconcilers"},
	// The core tools, read and write: a source of the router's, over the
	// state the stages keep (index, status store, reconcilers' statuses,
	// muster's events, the engine's executions), declare and controls; it
	// knows nothing of the endpoint. Its checks' outcomes go out through a
	// function the wiring puts on the bus, redacted; a follow of
	// core_events writes to its caller's session through router.Caller.
	"pkg/coretools": {"pkg/events", "pkg/apis", "pkg/resources", "pkg/statusync", "pkg/declare", "pkg/controls", "pkg/redact",
		"pkg/api/shared", "pkg/api/types", "pkg/musterevents", "pkg/router", "pkg/tooldef", "pkg/workflowrun", "pkg/identity"},
	// The trace format and recorder: an observer of the bus, like a
	// logger.
	"pkg/eventtrace": {"pkg/events", "pkg/bus"},
	"pkg/pipeline":   {"*"}, // the wiring
	// The workflow engine: runs the workflows the reconciler finds valid,
	// calling tools through a router the wiring gives it, and serves their
	// executions. Beside the reconcilers, never the bus: its execution
	// events go out through a function the wiring puts on the bus.
	"pkg/workflowrun": {"pkg/events", "pkg/apis", "pkg/resources", "pkg/redact", "pkg/api/types", "pkg/tmplfuncs", "pkg/peer"},
	// Replay wires stages on buses of its own, like the pipeline.
	"pkg/eventtrace/replay": {"pkg/events", "pkg/bus", "pkg/eventtrace", "pkg/debouncer", "pkg/coordinator", "pkg/statusync", "pkg/reconcilers", "pkg/lifecycle"},
	// Golden is test support: only test binaries import it.
	"pkg/eventtrace/replay/replaytest": {"pkg/eventtrace", "pkg/eventtrace/replay"},
	"cmd":                              {"*"},
	"internal":                         {"*"},
	// The envtest helper of the Kubernetes tests: the scheme's types only.
	"internal/kubetest": {"pkg/apis", "internal/modroot", "internal/logtest"},
	// Where musterd's module is checked out, for the test helpers: a leaf.
	"internal/modroot": {},
	// A log sink tests read, and a log file's tail: a leaf.
	"internal/logtest": {},
	// A test's own CA and loopback serving certificate, for the rigs of
	// servers that speak TLS: a leaf.
	"internal/testca": {},
	// The FIFO ring of the queues of small values (keyqueue, debouncer): a
	// leaf.
	"internal/ring": {},
	// The registered funcs of the stages that tell others of their changes
	// (supervisor, catalogue, router): a leaf.
	"internal/registry": {},
	// Turns per key (a resource's subscribe and unsubscribe): a leaf.
	"internal/turns": {},
	// Comparing listings as a client sees them: a leaf.
	"internal/jsoneq": {},
	// The bad-input corpus of the watcher's and the daemon's tests.
	"internal/badinput": {},
	// The npm packages the tests run against (server-everything, the
	// Inspector): paths under .cache/npm; nothing of musterd's.
	"internal/npmtest": {"internal/modroot"},
	// The OIDC provider of the OAuth tests (Dex under .cache/dex) and its
	// logins: nothing of musterd's.
	"internal/dextest": {"internal/modroot", "internal/logtest", "internal/testca"},
	// The Redis of the OAuth storage tests (redis-server as a child
	// process): nothing of musterd's.
	"internal/redistest": {"internal/logtest", "internal/testca"},
	// Packages of tests only (test/crd, test/deploy); their doc.go imports
	// nothing.
	"test": {},
}

// rule returns the entry of allowed that governs pkg.
func rule(pkg string) (string, bool) {
	best := ""
	for prefix := range allowed {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) > len(best) {
			best = prefix
		}
	}
	return best, best != ""
}

// violations returns the wrong-way imports of pkg.
func violations(pkg string, imports []string) []string {
	prefix, ok := rule(pkg)
	if !ok {
		return []string{fmt.Sprintf("%s: no import rule; add it to archtest.allowed", pkg)}
	}
	var bad []string
	for _, imp := range imports {
		if !strings.HasPrefix(imp, module+"/") {
			continue
		}
		target := strings.TrimPrefix(imp, module+"/")
		if target == pkg || strings.HasPrefix(target, prefix+"/") || target == prefix {
			continue // within its own subtree
		}
		ok := false
		for _, a := range allowed[prefix] {
			if a == "*" || target == a || strings.HasPrefix(target, a+"/") {
				ok = true
			}
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s imports %s: against the pipeline's direction", pkg, target))
		}
	}
	return bad
}

func TestImportsFlowInPipelineOrder(t *testing.T) {
	pkgs := packages(t)
	require.Greater(t, len(pkgs), 5, "the walk found too few packages to mean anything")
	var bad []string
	for pkg, imps := range pkgs {
		bad = append(bad, violations(pkg, imps)...)
	}
	sort.Strings(bad)
	assert.Empty(t, bad)
}

func TestTheCheckCatchesWrongWayImports(t *testing.T) {
	assert.Empty(t, violations("pkg/coordinator", []string{module + "/pkg/bus", module + "/pkg/reconcilers", "k8s.io/client-go/util/workqueue"}))
	assert.Equal(t, []string{"pkg/events imports pkg/bus: against the pipeline's direction"},
		violations("pkg/events", []string{module + "/pkg/bus"}))
	assert.Equal(t, []string{"pkg/reconcilers/mcpserver imports pkg/bus: against the pipeline's direction"},
		violations("pkg/reconcilers/mcpserver", []string{module + "/pkg/bus"}))
	assert.Equal(t, []string{"pkg/bus imports pkg/statusync: against the pipeline's direction"},
		violations("pkg/bus", []string{module + "/pkg/statusync"}))
	assert.Len(t, violations("pkg/debouncer", []string{module + "/pkg/coordinator"}), 1, "stages do not import each other")
	assert.Len(t, violations("pkg/unplaced", nil), 1, "a package with no rule fails")
	assert.Empty(t, violations("pkg/watchers/fs", []string{module + "/pkg/watchers"}), "a package may use its own subtree")
	assert.Len(t, violations("pkg/reconcilers/workflow", []string{module + "/pkg/watchers/supervised"}), 1, "reconcilers do not import the bridge")
	assert.Len(t, violations("pkg/catalogue", []string{module + "/pkg/bus"}), 1, "the catalogue knows nothing of the bus")
	assert.Len(t, violations("pkg/watchers/fs", []string{module + "/pkg/supervisor"}), 1, "only the runtime watcher sees the supervisor")
	assert.Len(t, violations("pkg/eventtrace", []string{module + "/pkg/coordinator"}), 1, "the recorder knows no stage")
	assert.Empty(t, violations("pkg/eventtrace/replay", []string{module + "/pkg/eventtrace", module + "/pkg/coordinator", module + "/pkg/lifecycle"}), "replay is wiring")
	assert.Len(t, violations("pkg/eventtrace/replay", []string{module + "/pkg/api"}), 1, "replay does not reach the edges")
	assert.Len(t, violations("pkg/mcpserve", []string{module + "/pkg/api"}), 1, "the MCP endpoint shares api/shared, not the API server")
	assert.Empty(t, violations("pkg/mcpserve", []string{module + "/pkg/api/shared", module + "/pkg/router"}))
	assert.Len(t, violations("pkg/mcpserve", []string{module + "/pkg/supervisor"}), 1, "the endpoint reaches servers only through the router")
	assert.Len(t, violations("pkg/mcpserve", []string{module + "/pkg/coretools"}), 1, "the endpoint implements no exposed tool")
	assert.Len(t, violations("pkg/router", []string{module + "/pkg/coretools"}), 1, "the router knows its sources by interface")
	assert.Empty(t, violations("pkg/oauth/authserver", []string{module + "/pkg/identity", module + "/pkg/oauth/store"}))
	assert.Len(t, violations("pkg/oauth/authserver", []string{module + "/pkg/supervisor"}), 1, "the authorization server knows no stage")
}

// packages returns the module's packages (their paths below it, test-only
// directories left out) and what each imports, tests left out.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	out := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "bin") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files, or only tests
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = p.Imports
		return nil
	})
	require.NoError(t, err)
	return out
}

// An allowance no package uses is a door left open: a stage could start
// depending on another without the decision this map records. Each must be
// used by some package it governs.
func TestEveryAllowanceIsUsed(t *testing.T) {
	used := map[string]map[string]bool{}
	for pkg, imps := range packages(t) {
		prefix, ok := rule(pkg)
		if !ok {
			continue
		}
		for _, imp := range imps {
			imp, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			for _, a := range allowed[prefix] {
				if imp == a || strings.HasPrefix(imp, a+"/") {
					if used[prefix] == nil {
						used[prefix] = map[string]bool{}
					}
					used[prefix][a] = true
				}
			}
		}
	}
	var unused []string
	for prefix, as := range allowed {
		for _, a := range as {
			if a != "*" && !used[prefix][a] {
				unused = append(unused, prefix+" may import "+a+" but none of its packages does")
			}
		}
	}
	sort.Strings(unused)
	assert.Empty(t, unused)
}
