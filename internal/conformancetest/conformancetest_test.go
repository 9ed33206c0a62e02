package conformancetest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The suite's results, as a real run against the go-sdk's conformance
// server wrote them (two of its scenarios).
func TestParseReadsTheSuitesResults(t *testing.T) {
	r, err := Parse("testdata/results")
	require.NoError(t, err)
	assert.Equal(t, []Check{
		{Scenario: "ping", ID: "ping", Status: "SUCCESS"},
		{Scenario: "tools-call-sampling", ID: "tools-call-sampling", Status: "SUCCESS"},
	}, r.Checks)
	assert.Equal(t, 2, r.Count("SUCCESS"))
	assert.Empty(t, r.Failed())

	_, err = Parse(t.TempDir())
	assert.ErrorContains(t, err, "left no result", "an empty run is an error, never a pass")
}

// Diff names each check whose outcome differs, and each that only one run
// has; the suite's INFO records do not count.
func TestDiffNamesEveryCheckThatDiffers(t *testing.T) {
	straight := Result{Checks: []Check{
		{Scenario: "ping", ID: "ping", Status: "SUCCESS"},
		{Scenario: "tools-call-sampling", ID: "tools-call-sampling", Status: "SUCCESS"},
		{Scenario: "logging-set-level", ID: "logging-set-level", Status: "SUCCESS"},
		{Scenario: "ping", ID: "outgoing-response", Status: "INFO"},
	}}
	through := Result{Checks: []Check{
		{Scenario: "ping", ID: "ping", Status: "SUCCESS"},
		{Scenario: "tools-call-sampling", ID: "tools-call-sampling", Status: "FAILURE", Error: "client does not support CreateMessage"},
		{Scenario: "completion-complete", ID: "completion-complete", Status: "FAILURE"},
	}}
	assert.Equal(t, []string{
		"completion-complete/completion-complete: absent straight, FAILURE through",
		"logging-set-level/logging-set-level: SUCCESS straight, absent through",
		"tools-call-sampling/tools-call-sampling: SUCCESS straight, FAILURE through: client does not support CreateMessage",
	}, Diff(straight, through))
	assert.Empty(t, Diff(straight, straight))
}

// The suite passes every check straight against the go-sdk's conformance
// server: the baseline a run through musterd is compared with.
func TestTheSuitePassesStraightAgainstTheGoSDKsConformanceServer(t *testing.T) {
	url := ServeHTTP(t, BuildEverythingServer(t))
	r := Run(t, url)
	assert.Empty(t, r.Failed())
	assert.GreaterOrEqual(t, r.Count("SUCCESS"), 40, "the 2025-11-25 scenarios' checks")
	t.Logf("%d checks passed", r.Count("SUCCESS"))
}

// A run against nothing fails its checks: the suite cannot pass by
// finding no server.
func TestARunAgainstNoServerFails(t *testing.T) {
	r := Run(t, "http://127.0.0.1:1/mcp")
	assert.NotEmpty(t, r.Failed())
	assert.Zero(t, r.Count("SUCCESS"))
}
