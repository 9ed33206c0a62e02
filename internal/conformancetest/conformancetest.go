package conformancetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/musterd/musterd/internal/npmtest"
)

// SpecVersion is the protocol version whose scenarios Run runs.
const SpecVersion = "2025-11-25"

// Suite is a pinned release of the suite and the arguments it runs a
// server's scenarios with.
type Suite struct {
	Package npmtest.Package
	// Args are the arguments after `server --url URL -o DIR`.
	Args []string
}

// The suites the Makefile pins.
var (
	// Suite20251125 runs the scenarios of 2025-11-25 (Run's).
	Suite20251125 = Suite{Package: npmtest.ConformancePackage, Args: []string{"--spec-version", SpecVersion}}
	// Suite20260728 runs exactly the scenarios MCP 2026-07-28 requires.
	Suite20260728 = Suite{Package: npmtest.Conformance2026Package, Args: []string{"--requirements", "2026-07-28"}}
)

// RunTimeout bounds one run of the suite.
const RunTimeout = 3 * time.Minute

// EverythingServer is the go-sdk's conformance server, part of the go-sdk
// module musterd requires.
const EverythingServer = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// Check is one check of a scenario, as the suite reports it.
type Check struct {
	Scenario string `json:"-"`
	ID       string `json:"id"`
	Status   string `json:"status"`
	Error    string `json:"errorMessage,omitempty"`
}

// Key names a check within a run.
func (c Check) Key() string { return c.Scenario + "/" + c.ID }

// Result is one run's checks, sorted by scenario and id.
type Result struct {
	Checks []Check
}

// Count returns how many checks have status.
func (r Result) Count(status string) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == status {
			n++
		}
	}
	return n
}

// Failed returns the checks that failed.
func (r Result) Failed() []Check {
	var out []Check
	for _, c := range r.Checks {
		if c.Status == "FAILURE" {
			out = append(out, c)
		}
	}
	return out
}

// resultDir is a scenario's result directory: server-<scenario>-<time>.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// Parse reads the results the suite wrote under dir (its -o).
func Parse(dir string) (Result, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return Result{}, err
	}
	var r Result
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if !e.IsDir() || m == nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name(), "checks.json"))
		if err != nil {
			return Result{}, err
		}
		var checks []Check
		if err := json.Unmarshal(data, &checks); err != nil {
			return Result{}, fmt.Errorf("%s: %w", e.Name(), err)
		}
		for _, c := range checks {
			c.Scenario = m[1]
			r.Checks = append(r.Checks, c)
		}
	}
	if len(r.Checks) == 0 {
		return Result{}, errors.New("conformancetest: the suite left no result under " + dir)
	}
	slices.SortStableFunc(r.Checks, func(a, b Check) int { return strings.Compare(a.Key(), b.Key()) })
	return r, nil
}

// Diff lists how got differs from want, check for check: a status that
// differs, a check only one of them has. INFO checks (the suite's record
// of what was sent) are left out: they describe, they do not judge.
func Diff(want, got Result) []string {
	index := func(r Result) map[string]Check {
		m := map[string]Check{}
		for _, c := range r.Checks {
			if c.Status != "INFO" {
				m[c.Key()] = c
			}
		}
		return m
	}
	w, g := index(want), index(got)
	var out []string
	for k, wc := range w {
		gc, ok := g[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: %s straight, absent through", k, wc.Status))
		case gc.Status != wc.Status:
			out = append(out, fmt.Sprintf("%s: %s straight, %s through: %s", k, wc.Status, gc.Status, gc.Error))
		}
	}
	for k, gc := range g {
		if _, ok := w[k]; !ok {
			out = append(out, fmt.Sprintf("%s: absent straight, %s through", k, gc.Status))
		}
	}
	slices.Sort(out)
	return out
}

// Run runs Suite20251125 against url (RunSuite).
func Run(t testing.TB, url string) Result {
	t.Helper()
	return RunSuite(t, Suite20251125, url)
}

// RunSuite runs suite's server scenarios against url and returns their
// checks. It skips t where the suite is not installed (fails it under
// MUSTERD_REQUIRE_NPM=1), and fails t if the suite hangs or leaves no
// result.
func RunSuite(t testing.TB, suite Suite, url string) Result {
	t.Helper()
	node, script := npmtest.ConformanceOf(t, suite.Package)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	args := append([]string{script, "server", "--url", url, "-o", out}, suite.Args...)
	cmd := exec.CommandContext(ctx, node, args...)
	output, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("conformance suite against %s did not end within %s; its output ends:\n%s", url, RunTimeout, tail(output))
	}
	r, perr := Parse(out)
	if perr != nil {
		t.Fatalf("conformance suite against %s: %v (exit: %v); its output ends:\n%s", url, perr, err, tail(output))
	}
	return r
}

func tail(b []byte) string {
	const n = 4000
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// BuildEverythingServer builds the go-sdk's conformance server into a
// temporary directory and returns its path.
func BuildEverythingServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "everything-server")
	cmd := exec.Command("go", "build", "-o", bin, EverythingServer)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", EverythingServer, err, out)
	}
	return bin
}

// ServeHTTP runs bin, the everything-server, over streamable HTTP with
// sessions (sampling and elicitation need them) on a free loopback port
// until t ends, and returns its MCP URL once it accepts connections.
func ServeHTTP(t testing.TB, bin string) string {
	t.Helper()
	return serveHTTP(t, bin, "-stateless=false")
}

// ServeHTTPStateless is ServeHTTP without sessions: the only way the
// go-sdk serves MCP 2026-07-28 (and the everything-server's default).
func ServeHTTPStateless(t testing.TB, bin string) string {
	t.Helper()
	return serveHTTP(t, bin, "-stateless=true")
}

func serveHTTP(t testing.TB, bin, stateless string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, "-http="+addr, stateless)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + "/mcp"
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not serve %s within 30s: %v", bin, url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
