package redistest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartAnswersOnLoopbackAndCleanupStopsIt(t *testing.T) {
	var r *Redis
	t.Run("running", func(t *testing.T) {
		r = Start(t)
		assert.True(t, strings.HasPrefix(r.Addr, "127.0.0.1:"), r.Addr)
		assert.Equal(t, "redis://"+r.Addr, r.URL())
		got, err := r.Do(t.Context(), "SET", "k", "v")
		require.NoError(t, err)
		assert.Equal(t, "+OK", got)
		got, err = r.Do(t.Context(), "GET", "k")
		require.NoError(t, err)
		assert.Equal(t, "$1", got)
		// Persistence is off, and the working directory is the test's.
		assert.Equal(t, "", configGet(t, r, "save"))
		assert.Equal(t, "no", configGet(t, r, "appendonly"))
		assert.Equal(t, r.Dir, configGet(t, r, "dir"))
		assert.Equal(t, "127.0.0.1", configGet(t, r, "bind"))
	})
	// The subtest's cleanup killed the server: nothing listens any more.
	_, err := net.DialTimeout("tcp", r.Addr, time.Second)
	assert.Error(t, err, "redis-server still listens at %s after its test ended", r.Addr)
}

func TestAPasswordIsRequired(t *testing.T) {
	r := StartWith(t, Options{Password: "s3cret pass"})
	conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	got, err := send(conn, bufio.NewReader(conn), "PING")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(got, "-NOAUTH"), "PING without AUTH answered %q", got)

	got, err = r.Do(t.Context(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "+PONG", got)
}

func TestStopAndRestartKeepTheAddressAndStartEmpty(t *testing.T) {
	r := StartWith(t, Options{Password: "pw"})
	addr := r.Addr
	_, err := r.Do(t.Context(), "SET", "k", "v")
	require.NoError(t, err)

	r.Stop()
	r.Stop() // twice is harmless
	_, err = r.Do(t.Context(), "PING")
	assert.Error(t, err, "a stopped server answered")

	r.Restart(t)
	assert.Equal(t, addr, r.Addr)
	got, err := r.Do(t.Context(), "EXISTS", "k")
	require.NoError(t, err)
	assert.Equal(t, ":0", got, "the restarted server kept data")
	got, err = r.Do(t.Context(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "+PONG", got, "the restarted server wants the same password")
}

func TestAMissingServerSaysWhichTargetInstallsIt(t *testing.T) {
	t.Setenv(BinEnv, "/nonexistent/redis-server")
	_, err := find()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/nonexistent/redis-server")
	assert.Contains(t, err.Error(), BinEnv)

	t.Setenv(BinEnv, "")
	t.Setenv("PATH", t.TempDir())
	_, err = find()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run `make redis`")
}

// configGet reads one setting of the running server: CONFIG GET answers an
// array of the name and its value as bulk strings.
func configGet(t *testing.T, r *Redis, name string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	rd := bufio.NewReader(conn)
	got, err := send(conn, rd, "CONFIG", "GET", name)
	require.NoError(t, err)
	require.Equal(t, "*2", got)
	var lines []string
	for range 4 { // $len, name, $len, value
		line, err := rd.ReadString('\n')
		require.NoError(t, err)
		lines = append(lines, strings.TrimRight(line, "\r\n"))
	}
	require.Equal(t, name, lines[1])
	return lines[3]
}

func TestTLSServesOnlyTLSWithTheTestsCA(t *testing.T) {
	r := StartWith(t, Options{TLS: true, Password: "pw"})
	assert.Equal(t, "rediss://"+r.Addr, r.URL())
	assert.FileExists(t, r.CAFile)
	got, err := r.Do(t.Context(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "+PONG", got)

	// Plain TCP gets no answer a client could take for Redis's.
	conn, err := net.DialTimeout("tcp", r.Addr, time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(2*time.Second)))
	got, err = send(conn, bufio.NewReader(conn), "PING")
	assert.False(t, err == nil && got == "+PONG", "a TLS server answered PING in plain TCP")
}
