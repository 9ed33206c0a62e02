package conformancetest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The suite's 2026-07-28 requirements run straight against the go-sdk's
// conformance server, served stateless (the go-sdk's only way to serve
// that protocol): its checks are read as Run reads the older suite's, and
// all that fail are of the tasks extension, which that server does not
// offer. This is the baseline a run through musterd is compared with.
func TestThe2026SuiteRunsStraightAgainstTheGoSDKsConformanceServer(t *testing.T) {
	url := ServeHTTPStateless(t, BuildEverythingServer(t))
	r := RunSuite(t, Suite20260728, url)
	assert.GreaterOrEqual(t, r.Count("SUCCESS"), 150, "the 2026-07-28 requirements' checks")
	for _, c := range r.Failed() {
		assert.True(t, strings.HasPrefix(c.Scenario, "tasks-"), "%s failed: %s", c.Key(), c.Error)
	}
	t.Logf("%d checks passed, %d failed", r.Count("SUCCESS"), len(r.Failed()))
}
