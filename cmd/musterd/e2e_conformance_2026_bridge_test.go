package main

// The official MCP conformance suite's 2026-07-28 requirements through
// musterd's bridge: the go-sdk's conformance server served with sessions,
// which the go-sdk does in 2025-11-25 only (a server of the older
// generation, that asks its client mid-call), managed by musterd as a
// remote server, and the suite's client of 2026-07-28 against its view.
// Its input-required scenarios are answered by the bridge: each question
// the server asks on the call's own session reaches the suite as an
// input-required result, and its retries carry the answers back. Compared
// check for check with the suite straight against the same server in
// stateless mode; every difference is expected, with its cause.

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/internal/conformancetest"
)

// Causes of the differences through the bridge.
const (
	// A classic elicitation/create carries no input-request ID: the
	// server's own key (the suite looks for "user_name") is lost on the
	// older generation's wire, and musterd numbers the questions.
	causeBridgedIDs = "bridged: the older server's classic request carries no input-request ID, so musterd numbers its questions where the suite looks for the server's own key"
	// The go-sdk server sends its three questions as three classic
	// requests at once, but nothing in a classic request says others
	// follow: musterd puts each to the client as it arrives, in a round of
	// its own, where the suite wants all three in one.
	causeBridgedOneByOne = "bridged: the older server's questions arrive as separate classic requests, each put to the client in its own round, where the suite wants them in one"
	// Only tool calls are bridged: a prompt's question meets the shared
	// session, which offers the server nothing.
	causeNoNonToolBridge = "bridged: prompts/get and resources/read are not bridged (tool calls are): the older server's question meets the shared session, which offers it nothing"
)

// expected2026Bridged are the checks whose outcome through the bridge
// differs from straight, by scenario/check, each with its cause.
var expected2026Bridged = map[string]string{
	"input-required-result-basic-elicitation/sep-2322-elicitation-complete":             causeBridgedIDs,
	"input-required-result-basic-elicitation/sep-2322-elicitation-incomplete":           causeBridgedIDs,
	"input-required-result-multiple-input-requests/sep-2322-multiple-inputs-complete":   causeBridgedOneByOne,
	"input-required-result-multiple-input-requests/sep-2322-multiple-inputs-incomplete": causeBridgedOneByOne,
	"input-required-result-non-tool-request/sep-2322-non-tool-complete":                 causeNoNonToolBridge,
	"input-required-result-non-tool-request/sep-2322-non-tool-incomplete":               causeNoNonToolBridge,
	"server-stateless/sep-2575-server-sends-tools-list-changed-on-subscription":         causeIdenticalRelist,
}

func TestE2EConformance2026SuiteBridgedToAnOlderServer(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	straight := conformancetest.RunSuite(t, conformancetest.Suite20260728, conformancetest.ServeHTTPStateless(t, bin))

	e := startFS(t)
	e.write(t, "mcpservers/conf-older.yaml", annotatedServerYAML("conf-older", nil,
		"type: streamable-http", "autoStart: true", "url: "+yamlValue(conformancetest.ServeHTTP(t, bin))))
	s := e.waitServer(t, "conf-older", "connected", func(s serverObject) bool { return s.Status.State == "Connected" })
	assert.Equal(t, "2025-11-25", s.Status.ProtocolVersion, "the server speaks the older generation to musterd")

	through := conformancetest.RunSuite(t, conformancetest.Suite20260728, "http://"+e.addr+"/mcp/servers/conf-older")
	differs := map[string]bool{}
	for _, d := range conformancetest.Diff(straight, through) {
		key, _, _ := strings.Cut(d, ": ")
		differs[key] = true
		if _, ok := expected2026Bridged[key]; !ok {
			t.Errorf("unexpected difference through the bridge: %s", d)
		}
	}
	var stale []string
	for key := range expected2026Bridged {
		if !differs[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	assert.Empty(t, stale, "expected differences that no longer differ: drop them from expected2026Bridged")
	var bridged int
	for _, c := range through.Checks {
		if strings.HasPrefix(c.Scenario, "input-required") && c.Status == "SUCCESS" {
			bridged++
		}
	}
	assert.Positive(t, bridged)
	t.Logf("straight: %d checks passed; through the bridge: %d passed (%d of the input-required scenarios'), %d failed; %d differences, all expected",
		straight.Count("SUCCESS"), through.Count("SUCCESS"), bridged, len(through.Failed()), len(differs))
}
