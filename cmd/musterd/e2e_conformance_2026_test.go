package main

// The official MCP conformance suite's 2026-07-28 requirements through
// musterd: the go-sdk's conformance server, served straight in stateless
// mode (the go-sdk's only way to serve that protocol) and managed by
// musterd over stdio, run against its view /mcp/servers/<name>, and
// compared check for check. Every difference is expected, with its cause,
// in expected2026; any other fails the test, and so does an expected one
// that no longer differs.

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/supervisor"
)

// Causes of the differences through musterd.
const (
	// musterd talks 2025-11-25 to its servers (the outbound side, package
	// supervisor, pins it) and has no InputRequiredResult bridge yet. The
	// server's go-sdk, serving an older session, fulfils its own
	// InputRequiredResult with classic requests on musterd's session
	// (elicitation/create, sampling/createMessage, roots/list), which a
	// client of the newest generation cannot be asked (it has no session;
	// the go-sdk refuses them), and which musterd's shared session does
	// not offer: the call fails where straight it returns input_required,
	// and the rounds after it never happen.
	causeNoMRTRBridge = "outbound at 2025-11-25, no InputRequiredResult bridge: the server asks musterd's session classic requests, which a 2026-07-28 client cannot receive"
	// The server judges the capabilities of musterd's session to it, not
	// the client's per-request clientCapabilities (forwarded only once
	// musterd talks 2026-07-28 to the server: the outbound side).
	causeUpstreamCapabilities = "outbound at 2025-11-25: the server sees musterd's session's capabilities, not the client's per-request _meta clientCapabilities"
	// The everything-server's test_trigger_tool_change re-registers an
	// identical tool; musterd's views send list_changed only when what
	// they serve changed (pkg/mcpserve doc.go: nothing changed, nothing is
	// sent), so the listen stream hears nothing. Its prompt analogue adds
	// a prompt the first time, which passes through.
	causeIdenticalRelist = "deliberate: the server re-registers an identical tool; musterd sends tools/list_changed only when what the view serves changed"
)

// expected2026 are the checks whose outcome through musterd's view differs
// from straight, by scenario/check, each with its cause.
var expected2026 = map[string]string{
	"input-required-result-basic-elicitation/sep-2322-elicitation-complete":             causeNoMRTRBridge,
	"input-required-result-basic-elicitation/sep-2322-elicitation-incomplete":           causeNoMRTRBridge,
	"input-required-result-basic-list-roots/sep-2322-list-roots-complete":               causeNoMRTRBridge,
	"input-required-result-basic-list-roots/sep-2322-list-roots-incomplete":             causeNoMRTRBridge,
	"input-required-result-basic-sampling/sep-2322-sampling-complete":                   causeNoMRTRBridge,
	"input-required-result-basic-sampling/sep-2322-sampling-incomplete":                 causeNoMRTRBridge,
	"input-required-result-capability-check/sep-2322-respect-client-capabilities":       causeUpstreamCapabilities,
	"input-required-result-ignore-extra-params/sep-2322-ignore-unexpected-params":       causeNoMRTRBridge,
	"input-required-result-missing-input-response/sep-2322-missing-response-rerequests": causeNoMRTRBridge,
	"input-required-result-multi-round/sep-2322-multi-round-r1":                         causeNoMRTRBridge,
	"input-required-result-multi-round/sep-2322-multi-round-r2":                         causeNoMRTRBridge,
	"input-required-result-multi-round/sep-2322-multi-round-r3":                         causeNoMRTRBridge,
	"input-required-result-multiple-input-requests/sep-2322-multiple-inputs-complete":   causeNoMRTRBridge,
	"input-required-result-multiple-input-requests/sep-2322-multiple-inputs-incomplete": causeNoMRTRBridge,
	"input-required-result-non-tool-request/sep-2322-non-tool-complete":                 causeNoMRTRBridge,
	"input-required-result-non-tool-request/sep-2322-non-tool-incomplete":               causeNoMRTRBridge,
	"input-required-result-request-state/sep-2322-request-state-complete":               causeNoMRTRBridge,
	"input-required-result-request-state/sep-2322-request-state-incomplete":             causeNoMRTRBridge,
	"input-required-result-result-type/sep-2322-result-type-included":                   causeNoMRTRBridge,
	"input-required-result-tampered-state/sep-2322-reject-tampered-state":               causeNoMRTRBridge,
	"server-stateless/sep-2575-server-sends-tools-list-changed-on-subscription":         causeIdenticalRelist,
}

func TestE2EConformance2026SuiteThroughAServersView(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	straight := conformancetest.RunSuite(t, conformancetest.Suite20260728, conformancetest.ServeHTTPStateless(t, bin))

	e := startFS(t)
	e.write(t, "mcpservers/conf-stdio.yaml", annotatedServerYAML("conf-stdio",
		map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsPerClient)},
		"type: stdio", "autoStart: true", "command: "+yamlValue(bin)))
	e.waitServer(t, "conf-stdio", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	through := conformancetest.RunSuite(t, conformancetest.Suite20260728, "http://"+e.addr+"/mcp/servers/conf-stdio")
	differs := map[string]bool{}
	for _, d := range conformancetest.Diff(straight, through) {
		key, _, _ := strings.Cut(d, ": ")
		differs[key] = true
		if _, ok := expected2026[key]; !ok {
			t.Errorf("unexpected difference through musterd: %s", d)
		}
	}
	var stale []string
	for key := range expected2026 {
		if !differs[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	assert.Empty(t, stale, "expected differences that no longer differ: drop them from expected2026")
	t.Logf("straight: %d checks passed, %d failed; through conf-stdio's view: %d passed, %d failed; %d differences, all expected",
		straight.Count("SUCCESS"), len(straight.Failed()), through.Count("SUCCESS"), len(through.Failed()), len(differs))
}
