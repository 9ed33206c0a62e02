package main

// The official MCP conformance suite's 2026-07-28 requirements through
// musterd: the go-sdk's conformance server, served straight in stateless
// mode (the go-sdk's only way to serve that protocol) and managed by
// musterd over stdio, run against its view /mcp/servers/<name>, and
// compared check for check. Every difference is expected, with its cause,
// in testdata/conformance-2026-expected.txt; any other fails the test, and
// so does an expected one that no longer differs.

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/conformancetest"
	"github.com/musterd/musterd/pkg/supervisor"
)

// expected2026File lists the checks whose outcome through musterd's view
// differs from straight, by scenario/check, each with its cause.
const expected2026File = "testdata/conformance-2026-expected.txt"

// readExpected reads a list of expected differences: one
// "scenario/check: cause" a line; blank lines and lines starting with #
// are ignored. A line of another form, or a check listed twice, is an
// error naming the file and line.
func readExpected(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	expected := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, cause, ok := strings.Cut(line, ": ")
		key, cause = strings.TrimSpace(key), strings.TrimSpace(cause)
		scenario, check, named := strings.Cut(key, "/")
		if !ok || !named || scenario == "" || check == "" || cause == "" {
			return nil, fmt.Errorf("%s:%d: want \"scenario/check: cause\", got %q", path, i+1, line)
		}
		if _, dup := expected[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", path, i+1, key)
		}
		expected[key] = cause
	}
	return expected, nil
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
	n := assertOnlyExpectedDifferences(t, straight, through, expected2026File)
	t.Logf("straight: %d checks passed, %d failed; through conf-stdio's view: %d passed, %d failed; %d differences, all expected",
		straight.Count("SUCCESS"), len(straight.Failed()), through.Count("SUCCESS"), len(through.Failed()), n)
}

// assertOnlyExpectedDifferences fails t for every check whose outcome
// differs between straight and through and is not listed in the file of
// expected differences, and for every listed one that no longer differs.
// It returns the number of differences.
func assertOnlyExpectedDifferences(t *testing.T, straight, through conformancetest.Result, file string) int {
	t.Helper()
	expected, err := readExpected(file)
	require.NoError(t, err)
	differs := map[string]bool{}
	for _, d := range conformancetest.Diff(straight, through) {
		key, _, _ := strings.Cut(d, ": ")
		differs[key] = true
		if _, ok := expected[key]; !ok {
			t.Errorf("unexpected difference through musterd: %s", d)
		}
	}
	var stale []string
	for key := range expected {
		if !differs[key] {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	assert.Empty(t, stale, "expected differences that no longer differ: drop them from "+file)
	return len(differs)
}
