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
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/internal/conformancetest"
)

// expected2026BridgedFile lists the checks whose outcome through the
// bridge differs from straight, by scenario/check, each with its cause.
const expected2026BridgedFile = "testdata/conformance-2026-bridged-expected.txt"

func TestE2EConformance2026SuiteBridgedToAnOlderServer(t *testing.T) {
	bin := conformancetest.BuildEverythingServer(t)
	straight := conformancetest.RunSuite(t, conformancetest.Suite20260728, conformancetest.ServeHTTPStateless(t, bin))

	e := startFS(t)
	e.write(t, "mcpservers/conf-older.yaml", annotatedServerYAML("conf-older", nil,
		"type: streamable-http", "autoStart: true", "url: "+yamlValue(conformancetest.ServeHTTP(t, bin))))
	s := e.waitServer(t, "conf-older", "connected", func(s serverObject) bool { return s.Status.State == "Connected" })
	assert.Equal(t, "2025-11-25", s.Status.ProtocolVersion, "the server speaks the older generation to musterd")

	through := conformancetest.RunSuite(t, conformancetest.Suite20260728, "http://"+e.addr+"/mcp/servers/conf-older")
	n := assertOnlyExpectedDifferences(t, straight, through, expected2026BridgedFile)
	var bridged int
	for _, c := range through.Checks {
		if strings.HasPrefix(c.Scenario, "input-required") && c.Status == "SUCCESS" {
			bridged++
		}
	}
	assert.Positive(t, bridged)
	t.Logf("straight: %d checks passed; through the bridge: %d passed (%d of the input-required scenarios'), %d failed; %d differences, all expected",
		straight.Count("SUCCESS"), through.Count("SUCCESS"), bridged, len(through.Failed()), n)
}
