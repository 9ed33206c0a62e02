package supervisor_test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/supervisor"
)

// environ reads the environment a process started with, sorted.
func environ(t *testing.T, pid int) []string {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if os.IsNotExist(err) {
		t.Skip("no /proc on this system")
	}
	require.NoError(t, err)
	env := strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
	slices.Sort(env)
	return env
}

// A real child's environment, read from /proc, holds its spec's env plus
// PATH and HOME, and nothing else of the supervisor's, unless InheritEnv;
// musterd's API token it never gets.
func TestAStdioServerGetsOnlyItsSpecsEnvPlusPATHAndHOME(t *testing.T) {
	t.Setenv("HOME", "/home/musterd-test")
	t.Setenv("MUSTERD_TOKEN", "daemon-token-not-for-servers")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "cloud-credential-not-for-servers")
	spec := fake("-tools", "echo")
	spec.Env = map[string]string{"API_KEY": "granted-by-the-spec", "HOME": "/srv/server-home"}

	h := newHarness(t, supervisor.Options{})
	obs := h.ensure(t, key("plain"), spec)
	require.NotZero(t, obs.PID)
	assert.Equal(t, []string{"API_KEY=granted-by-the-spec", "HOME=/srv/server-home", "PATH=" + os.Getenv("PATH")}, environ(t, obs.PID))

	inherit := newHarness(t, supervisor.Options{InheritEnv: true})
	obs = inherit.ensure(t, key("inherits"), spec)
	env := environ(t, obs.PID)
	assert.Contains(t, env, "AWS_SECRET_ACCESS_KEY=cloud-credential-not-for-servers", "InheritEnv passes the supervisor's environment")
	for _, kv := range env {
		assert.False(t, strings.HasPrefix(kv, "MUSTERD_TOKEN="), "InheritEnv withholds musterd's API token: %s", kv)
	}
	assert.Contains(t, env, "HOME=/srv/server-home", "the spec's env still wins")
	assert.Contains(t, env, "API_KEY=granted-by-the-spec")
}
