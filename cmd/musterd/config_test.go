package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigYAMLSetsDefaultsThatFlagsOverride(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(`
debounce: 250ms
workers: 4
logLevel: debug
stateDir: /var/lib/musterd
healthListen: ":8081"
orchestrator: {}   # muster's own setting
`), 0o644))
	cfg, notes, err := parseDaemonFlags([]string{"-config-dir", dir, "-workers", "3"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 250*time.Millisecond, cfg.debounce)
	assert.Equal(t, 3, cfg.workers, "the command line wins")
	assert.Equal(t, slog.LevelDebug, cfg.logLevel)
	assert.Equal(t, "/var/lib/musterd", cfg.stateDir)
	assert.Equal(t, ":8081", cfg.healthListen)
	assert.Equal(t, []string{"config.yaml: ignoring keys musterd does not use: orchestrator"}, notes)
}

func TestMustersAggregatorKeysSetTheListenAddressAndThePrefix(t *testing.T) {
	write := func(content string) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(content), 0o644))
		return dir
	}
	dir := write("aggregator:\n  host: localhost\n  port: 9190\n  musterPrefix: m\n  transport: streamable-http\n")
	cfg, notes, err := parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "localhost:9190", cfg.listen, "where muster serve would answer")
	assert.Equal(t, "m", cfg.toolPrefix)
	assert.Equal(t, []string{"config.yaml: listening on aggregator.host/port localhost:9190, where muster serve would"}, notes)

	cfg, _, err = parseDaemonFlags([]string{"-config-dir", write("aggregator: {port: 9191}\n")}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:9191", cfg.listen, "the port alone keeps the loopback host")

	cfg, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-listen", "127.0.0.1:7000", "-tool-prefix", "t"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7000", cfg.listen, "the command line wins")
	assert.Equal(t, "t", cfg.toolPrefix)

	cfg, _, err = parseDaemonFlags([]string{"-config-dir", write("listen: 127.0.0.1:7001\ntoolPrefix: k\naggregator: {port: 9192, musterPrefix: m}\n")}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:7001", cfg.listen, "musterd's own key wins over muster's")
	assert.Equal(t, "k", cfg.toolPrefix)

	_, _, err = parseDaemonFlags([]string{"-config-dir", write("aggregator: {host: 0.0.0.0}\n")}, io.Discard)
	assert.ErrorContains(t, err, "not a loopback address", "the loopback rule stands")
	_, _, err = parseDaemonFlags([]string{"-config-dir", write("aggregator: {port: 70000}\n")}, io.Discard)
	assert.ErrorContains(t, err, "aggregator.port 70000 is not a TCP port")
}

func TestWithoutConfigYAMLTheDefaultsHoldAndTheStateDirIsTheConfigDir(t *testing.T) {
	dir := t.TempDir()
	cfg, notes, err := parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, notes)
	assert.Equal(t, dir, cfg.stateDir)
	assert.Equal(t, 100*time.Millisecond, cfg.debounce)
	assert.Equal(t, "127.0.0.1:8090", cfg.listen)
}

func TestAMalformedConfigYAMLIsAnErrorNamingIt(t *testing.T) {
	for name, content := range map[string]string{
		"syntax":   "debounce: [\n",
		"duration": "debounce: soon\n",
		"level":    "logLevel: loud\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(content), 0o644))
			_, _, err := parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
			assert.ErrorContains(t, err, "config")
		})
	}
}

func TestTheAPITokenComesFromAFileTheFlagOrTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600))
	cfg, _, err := parseDaemonFlags([]string{"-config-dir", dir, "-token-file", tokenFile}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", cfg.token)

	t.Setenv("MUSTERD_TOKEN", "from-env")
	cfg, _, err = parseDaemonFlags([]string{"-config-dir", dir}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "from-env", cfg.token)
	_, stillSet := os.LookupEnv("MUSTERD_TOKEN")
	assert.False(t, stillSet, "musterd removes the token from its environment once read: nothing it starts inherits it")

	t.Setenv("MUSTERD_TOKEN", "from-env")
	cfg, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-api-token", "from-flag"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "from-flag", cfg.token, "the flag wins over the environment")

	_, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-api-token", "x", "-token-file", tokenFile}, io.Discard)
	assert.ErrorContains(t, err, "-api-token and -token-file both name the token")

	require.NoError(t, os.WriteFile(tokenFile, nil, 0o600))
	_, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-token-file", tokenFile}, io.Discard)
	assert.ErrorContains(t, err, "is empty")
}

func TestKubernetesModeIsSetByFlagsOrConfigYAML(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(`
kubernetes: true
namespace: team
leaderElect: true
leaderElectionID: mine
leaderElectionLeaseDuration: 4s
leaderElectionRenewDeadline: 3s
leaderElectionRetryPeriod: 500ms
kubeConnectTimeout: 5s
`), 0o644))
	cfg, notes, err := parseDaemonFlags([]string{"-config-dir", dir, "-leader-election-id", "theirs"}, io.Discard)
	require.NoError(t, err)
	assert.Empty(t, notes)
	k := cfg.kube
	assert.True(t, k.enabled)
	assert.True(t, k.leaderElect)
	assert.Equal(t, "team", k.namespace)
	assert.Equal(t, "theirs", k.leaderElectionID, "the command line wins")
	assert.Equal(t, "team", k.leaderElectionNamespace, "the Lease lives in the watched namespace by default")
	assert.Equal(t, []time.Duration{4 * time.Second, 3 * time.Second, 500 * time.Millisecond, 5 * time.Second},
		[]time.Duration{k.leaseDuration, k.renewDeadline, k.retryPeriod, k.connectTimeout})

	_, _, err = parseDaemonFlags([]string{"-config-dir", dir, "-leader-election-renew-deadline", "5s"}, io.Discard)
	assert.ErrorContains(t, err, "-leader-election-lease-duration (4s) > -leader-election-renew-deadline (5s)")

	defaults := defaultDaemonConfig().kube
	assert.Equal(t, []time.Duration{15 * time.Second, 10 * time.Second, 2 * time.Second, 30 * time.Second},
		[]time.Duration{defaults.leaseDuration, defaults.renewDeadline, defaults.retryPeriod, defaults.connectTimeout},
		"controller-runtime's election defaults")
}

func TestTheMCPListenerNeedsATokenOffLoopback(t *testing.T) {
	t.Setenv("MUSTERD_TOKEN", "")
	_, _, err := parseDaemonFlags([]string{"-config-dir", t.TempDir(), "-mcp-listen", "0.0.0.0:8090"}, io.Discard)
	assert.EqualError(t, err, `-mcp-listen "0.0.0.0:8090" resolves to 0.0.0.0, not a loopback address and no token is set: the MCP endpoint calls the servers' tools; give a token in $MUSTERD_TOKEN, -token-file or -api-token`)
	cfg, _, err := parseDaemonFlags([]string{"-config-dir", t.TempDir(), "-mcp-listen", "127.0.0.1:0"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:0", cfg.mcpListen)
	t.Setenv("MUSTERD_TOKEN", "t0ken")
	cfg, _, err = parseDaemonFlags([]string{"-config-dir", t.TempDir(), "-mcp-listen", ":8090"}, io.Discard)
	require.NoError(t, err, "with a token, any address: the pod's Service reaches it")
	assert.Equal(t, ":8090", cfg.mcpListen)
	_, _, err = parseDaemonFlags([]string{"-config-dir", t.TempDir(), "-mcp-listen", "nonsense"}, io.Discard)
	assert.ErrorContains(t, err, `-mcp-listen "nonsense"`)
}
