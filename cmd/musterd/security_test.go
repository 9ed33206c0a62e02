package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// A run of the real binary with planted secrets (an env value of a running
// server, an env value a crashing server prints on stderr, a header and a
// URL password of remote servers, the API token in MUSTERD_TOKEN): none of
// them appears in anything musterd writes or serves — its log at debug
// level, its status files, every API endpoint (/metrics and the event
// streams included) and its recorded trace. Status and trace files are
// 0600 in 0700 directories, also where a trace file (0644) and a status
// directory (0755) existed before; the running server got its spec's env
// plus PATH and HOME, and nothing else of musterd's (not the token).
func TestE2ESecretsAppearInNoOutputAndChildrenGetOnlyTheirEnv(t *testing.T) {
	secret := func(what string) string { return what + "-" + newMarker() }
	var (
		envRunning = secret("envrunning")
		envCrash   = secret("envcrash")
		header     = secret("headerbearer")
		password   = secret("urlpassword")
		token      = secret("apitoken")
	)
	secrets := []string{envRunning, envCrash, header, password, token}
	t.Setenv("MUSTERD_TOKEN", token)
	record := filepath.Join(t.TempDir(), "traces", "run.trace")
	require.NoError(t, os.Mkdir(filepath.Dir(record), 0o700))
	// Left by an earlier run: O_TRUNC alone would keep its mode.
	require.NoError(t, os.WriteFile(record, []byte("an earlier trace\n"), 0o644))
	require.NoError(t, os.Chmod(record, 0o644))
	e := startFS(t, "-log-level", "debug", "-record", record)
	// Left by an earlier version, before any resource is declared: the
	// status directories of the default namespace, 0755.
	oldStatusDir := filepath.Join(e.state, "status", "mcpservers", "default")
	require.NoError(t, os.MkdirAll(oldStatusDir, 0o755))
	for d := oldStatusDir; d != e.state; d = filepath.Dir(d) {
		require.NoError(t, os.Chmod(d, 0o755))
	}
	url := startRemoteServer(t, "fetch")

	marker := newMarker()
	e.write(t, "mcpservers/envy.yaml", mcpServerYAML("envy", append(stdioSpec("-tools", marker),
		"env: "+yamlValue(map[string]string{"API_KEY": envRunning}))...))
	e.write(t, "mcpservers/leaky.yaml", mcpServerYAML("leaky", append(stdioSpec("-stderr-env", "API_KEY", "-exit-at-once"),
		"env: "+yamlValue(map[string]string{"API_KEY": envCrash}))...))
	e.write(t, "mcpservers/headed.yaml", mcpServerYAML("headed", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 10",
		"headers: "+yamlValue(map[string]string{"Authorization": "Bearer " + header})))
	e.write(t, "mcpservers/userinfo.yaml", mcpServerYAML("userinfo", "type: streamable-http", "autoStart: true", "timeout: 10",
		"url: "+yamlValue(strings.Replace(url, "http://", "http://admin:"+password+"@", 1))))
	e.waitServer(t, "envy", "is Running", running("x_envy_"+marker))
	e.waitServer(t, "headed", "is Connected", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateConnected })
	e.waitServer(t, "userinfo", "is Connected", func(s serverObject) bool { return s.Status.State == v1alpha1.MCPServerStateConnected })
	leaky := e.waitServer(t, "leaky", "failed with its stderr", func(s serverObject) bool {
		return s.Status.State == v1alpha1.MCPServerStateFailed && strings.Contains(s.Status.LastError, "exit code 3")
	})
	t.Logf("the crashing server's error, its env value printed on stderr: %q", leaky.Status.LastError)

	// The child's environment: its spec's env, PATH and HOME; not the token.
	child := theServerProc(t, marker)
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", child.pid))
	require.NoError(t, err)
	var names []string
	for kv := range strings.SplitSeq(strings.TrimSuffix(string(environ), "\x00"), "\x00") {
		name, _, _ := strings.Cut(kv, "=")
		names = append(names, name)
	}
	slices.Sort(names)
	wantNames := []string{"API_KEY", "PATH"}
	if _, ok := os.LookupEnv("HOME"); ok {
		wantNames = []string{"API_KEY", "HOME", "PATH"}
	}
	assert.Equal(t, wantNames, names, "the child's environment")
	assert.Contains(t, string(environ), "API_KEY="+envRunning, "the planted env value reached the child")

	// Every API endpoint, with the token where one is needed, while events
	// flow: a manual reconcile of each server.
	served := map[string]string{}
	auth := func(req *http.Request) *http.Request { req.Header.Set("Authorization", "Bearer "+token); return req }
	open := func(ctx context.Context, path string) *http.Response {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+e.addr+path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(auth(req))
		require.NoError(t, err)
		return resp
	}
	read := func(path string, resp *http.Response) {
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body) // a stream ends with its context
		require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, body)
		served[path] = string(body)
	}
	fetch := func(path string, timeout time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		read(path, open(ctx, path))
	}
	// Both streams are open before the reconciles: the API answers a
	// stream's headers only once its bus subscription exists, so each
	// sees every event published after Do returns.
	streamPaths := []string{"/api/v1/events", "/api/v1/events?format=trace"}
	streamCtx, endStreams := context.WithTimeout(context.Background(), 3*time.Second)
	defer endStreams()
	var streams []*http.Response
	for _, path := range streamPaths {
		streams = append(streams, open(streamCtx, path))
	}
	servers := []string{"envy", "leaky", "headed", "userinfo"}
	for _, name := range servers {
		req, err := http.NewRequest(http.MethodPost, "http://"+e.addr+"/api/v1/resources/mcpservers/default/"+name+"/reconcile", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(auth(req))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
	}
	for i, path := range streamPaths {
		read(path, streams[i])
	}
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/api/v1/resources", "/api/v1/resources?kind=mcpservers"} {
		fetch(path, e2eDeadline)
	}
	for _, name := range servers {
		fetch("/api/v1/resources/mcpservers/default/"+name, e2eDeadline)
		fetch("/api/v1/resources/mcpservers/default/"+name+"/events", e2eDeadline)
	}
	out, code := e.cli(t, "describe", "mcps/leaky")
	require.Equal(t, 0, code, out)
	served["musterd describe mcps/leaky"] = out

	e.stopWith(t, syscall.SIGTERM, e2eDeadline)

	// Everything musterd wrote: its log, every file of the state dir, the
	// trace; and everything it served.
	outputs := map[string]string{"stderr log": e.stderr.String()}
	for path, body := range served {
		outputs["GET "+path] = body
	}
	require.NoError(t, filepath.WalkDir(e.state, func(path string, d iofs.DirEntry, err error) error {
		require.NoError(t, err)
		info, err := d.Info()
		require.NoError(t, err)
		if d.IsDir() {
			if path != e.state {
				assert.Equal(t, iofs.FileMode(0o700), info.Mode().Perm(), "directory %s", path)
			}
			return nil
		}
		assert.Equal(t, iofs.FileMode(0o600), info.Mode().Perm(), "file %s", path)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		outputs[path] = string(data)
		return nil
	}))
	require.Contains(t, outputs, filepath.Join(e.state, "status", "mcpservers", "default", "leaky.yaml"), "the status files were written")
	info, err := os.Stat(oldStatusDir)
	require.NoError(t, err)
	assert.Equal(t, iofs.FileMode(0o700), info.Mode().Perm(), "the status directory an earlier version left 0755")
	trace, err := os.ReadFile(record)
	require.NoError(t, err)
	outputs["trace "+record] = string(trace)
	info, err = os.Stat(record)
	require.NoError(t, err)
	assert.Equal(t, iofs.FileMode(0o600), info.Mode().Perm(), "the trace file, 0644 before the run")
	assert.NotContains(t, outputs["trace "+record], "an earlier trace", "the old trace was replaced")

	// Not vacuous: the outputs do talk about these servers.
	assert.Contains(t, outputs["trace "+record], `"name":"leaky"`)
	assert.Contains(t, served["/api/v1/events"], "leaky")
	assert.Contains(t, served["/metrics"], "musterd_reconcile_total")
	for where, text := range outputs {
		for _, s := range secrets {
			if i := strings.Index(text, s); i >= 0 {
				line := text[strings.LastIndexByte(text[:i], '\n')+1:]
				line, _, _ = strings.Cut(line, "\n")
				t.Errorf("secret %s appears in %s: %s", s[:strings.IndexByte(s, '-')], where, line)
			}
		}
	}
	// The token itself never left the test: a reader of the log cannot
	// learn it, but does learn that one is in force.
	sc := bufio.NewScanner(strings.NewReader(e.stderr.String()))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `msg="musterd starting"`) {
			assert.Contains(t, sc.Text(), "api_token=true")
		}
	}
}

// With -inherit-env a real child gets musterd's environment, but never the
// API token musterd read from MUSTERD_TOKEN.
func TestE2EInheritEnvNeverHandsChildrenTheAPIToken(t *testing.T) {
	token := "apitoken-" + newMarker()
	inherited := "inherited-" + newMarker()
	t.Setenv("MUSTERD_TOKEN", token)
	t.Setenv("MUSTERD_E2E_INHERITED", inherited)
	e := startFS(t, "-inherit-env")
	marker := newMarker()
	e.write(t, "mcpservers/heir.yaml", mcpServerYAML("heir", stdioSpec("-tools", marker)...))
	e.waitServer(t, "heir", "is Running", running("x_heir_"+marker))

	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", theServerProc(t, marker).pid))
	require.NoError(t, err)
	vars := strings.Split(strings.TrimSuffix(string(environ), "\x00"), "\x00")
	assert.Contains(t, vars, "MUSTERD_E2E_INHERITED="+inherited, "-inherit-env passes musterd's environment")
	for _, kv := range vars {
		assert.False(t, strings.HasPrefix(kv, "MUSTERD_TOKEN="), "the child got musterd's API token: %s", kv)
	}
	assert.NotContains(t, string(environ), token)
}
