package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/eventtrace"
	"github.com/musterd/musterd/pkg/eventtrace/replay"
)

// traces is the corpus of traces recorded from real runs, with the golden
// files pkg/eventtrace/replay's TestCorpus keeps.
const traces = "../../testdata/traces"

var corpusNames = []string{"burst-10k", "create-1000", "delete-recreate", "malformed-fix", "crash-loop", "resync"}

// replayBinary runs "musterd replay args…" through the real (race-built)
// binary and returns its stdout, stderr and exit code.
func replayBinary(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(binary, append([]string{"replay"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), errOut.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return out.String(), errOut.String(), 0
}

// The CLI replays every corpus trace to exactly the bytes of the golden
// file that the library's replay under synctest wrote for the same stages,
// and --diff against it finds no difference.
func TestReplayCommandPrintsTheLibrarysGoldenForEveryCorpusTrace(t *testing.T) {
	for _, name := range corpusNames {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			file, golden := filepath.Join(traces, name+".trace"), filepath.Join(traces, name+".golden")
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			stdout, stderr, code := replayBinary(t, file)
			require.Equal(t, 0, code, stderr)
			assert.Empty(t, stderr)
			if stdout != string(want) { // the readable diff, not two megabytes
				t.Fatalf("the CLI's replay differs from %s:\n%s", golden, replay.Diff(want, []byte(stdout)))
			}
			stdout, stderr, code = replayBinary(t, file, "--diff", golden)
			assert.Equal(t, 0, code, stderr)
			assert.Empty(t, stdout+stderr)
		})
	}
}

// --stages runs the stages the library's Options name: the CLI's output
// equals the library's replay under synctest for the same stages.
func TestReplayCommandStagesAreTheLibrarys(t *testing.T) {
	file := filepath.Join(traces, "crash-loop.trace")
	tr, err := eventtrace.ReadFile(file)
	require.NoError(t, err)
	for stages, opts := range map[string]replay.Options{
		"debouncer":             {Debouncer: true},
		"coordinator":           {Coordinator: true},
		"coordinator,statusync": {Coordinator: true, StatusSync: true},
	} {
		t.Run(stages, func(t *testing.T) {
			var want []byte
			synctest.Test(t, func(t *testing.T) {
				got, err := replay.Replay(tr, opts)
				require.NoError(t, err)
				want, err = replay.Encode(got)
				require.NoError(t, err)
			})
			stdout, stderr, code := replayBinary(t, file, "--stages", stages)
			require.Equal(t, 0, code, stderr)
			assert.Empty(t, replay.Diff(want, []byte(stdout)))
			assert.Equal(t, string(want), stdout)
		})
	}
}

func TestTwoReplayCommandRunsAreByteIdentical(t *testing.T) {
	file := filepath.Join(traces, "resync.trace")
	first, stderr, code := replayBinary(t, file)
	require.Equal(t, 0, code, stderr)
	second, stderr, code := replayBinary(t, file)
	require.Equal(t, 0, code, stderr)
	require.NotEmpty(t, first)
	assert.Equal(t, first, second)
}

// A changed debounce interval, by flag or in an edited header, fails
// --diff with exit code 1 and a readable diff: the trailing trigger of the
// recreate, which fell inside the refractory period, moves by the 100ms.
func TestReplayCommandDiffFailsWhenTheDebounceIntervalChanges(t *testing.T) {
	file, golden := filepath.Join(traces, "delete-recreate.trace"), filepath.Join(traces, "delete-recreate.golden")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	header, rest, ok := bytes.Cut(data, []byte("\n"))
	require.True(t, ok)
	require.Contains(t, string(header), `"debounce":"100ms"`)
	edited := filepath.Join(t.TempDir(), "edited.trace")
	require.NoError(t, os.WriteFile(edited, append(append(bytes.ReplaceAll(header, []byte(`"debounce":"100ms"`), []byte(`"debounce":"200ms"`)), '\n'), rest...), 0o600))

	for what, args := range map[string][]string{
		"flag":   {file, "--debounce", "200ms", "--diff", golden},
		"header": {edited, "--diff", golden},
	} {
		t.Run(what, func(t *testing.T) {
			stdout, stderr, code := replayBinary(t, args...)
			assert.Equal(t, 1, code)
			assert.Equal(t, "musterd replay: the replay of "+args[0]+" differs from "+golden+"\n", stderr)
			lines := strings.Split(stdout, "\n")
			require.Greater(t, len(lines), 4, stdout)
			assert.Equal(t, []string{"--- golden", "+++ replay", "@@ -1 +1 @@"}, lines[:3])
			assert.Contains(t, lines[3], `"debounce":"100ms"`)
			assert.Contains(t, lines[4], `"debounce":"200ms"`)
			assert.Contains(t, stdout, "\n- {\"at\":2667463428,\"type\":\"ReconciliationTriggered\"")
			assert.Contains(t, stdout, "\n+ {\"at\":2767463428,\"type\":\"ReconciliationTriggered\"")
			assert.Contains(t, stdout, `"reason":"refractory-end"`)
		})
	}
}

func TestReplayCommandRejectsABadTraceNamingItsLine(t *testing.T) {
	dir := t.TempDir()
	header := `{"format":"musterd-trace","version":1,"musterd":"test","start":"2026-05-01T12:00:00Z","config":{}}` + "\n"
	for name, c := range map[string]struct {
		content, stderr string
	}{
		"no payload":    {header + `{"at":5,"type":"ResourceChanged"}` + "\n", "line 2: the event line has no payload"},
		"not JSON":      {header + "{\"at\":5,\n" + `{"at":6}` + "\n", "line 2: malformed event line: unexpected end of JSON input"},
		"newer version": {strings.Replace(header, `"version":1`, `"version":99`, 1), "line 1: version 99 is newer than this musterd reads (2)"},
		"empty":         {"", "line 1: missing header: the trace is empty"},
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".trace")
			require.NoError(t, os.WriteFile(file, []byte(c.content), 0o600))
			stdout, stderr, code := replayBinary(t, file)
			assert.Equal(t, 1, code)
			assert.Empty(t, stdout)
			assert.Equal(t, "musterd replay: "+file+": trace: "+c.stderr+"\n", stderr)
		})
	}

	_, stderr, code := replayBinary(t, filepath.Join(dir, "missing.trace"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "missing.trace: no such file or directory")
}

func TestReplayCommandUsageErrors(t *testing.T) {
	file := filepath.Join(traces, "delete-recreate.trace")
	for name, args := range map[string][]string{
		"no file":       {},
		"two files":     {file, file},
		"unknown stage": {file, "--stages", "debouncer,reconcilers"},
		"no stage":      {file, "--stages", ""},
		"bad debounce":  {file, "--debounce", "-1s"},
		"unknown flag":  {file, "--frobnicate"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, 2, run(append([]string{"replay"}, args...), &stdout, &stderr), stderr.String())
			assert.Empty(t, stdout.String())
			assert.NotEmpty(t, stderr.String())
		})
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 1, run([]string{"replay", file, "--diff", filepath.Join(t.TempDir(), "none.golden")}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "musterd replay: --diff: open ")

	stderr.Reset()
	assert.Equal(t, 0, run([]string{"replay", "-h"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "the coordinator replays the reconcile outcomes the trace recorded")
}

// A recording cut off mid-line, as by a killed daemon, replays up to the
// cut, with a warning.
func TestReplayCommandReplaysACutOffTraceUpToTheCut(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(traces, "delete-recreate.trace"))
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "cut.trace")
	require.NoError(t, os.WriteFile(file, data[:len(data)-40], 0o600))
	tr, err := eventtrace.ReadFile(file)
	require.ErrorIs(t, err, eventtrace.ErrTruncated)
	got, err := replay.ReplayStepped(tr, replay.Options{Debouncer: true, Coordinator: true, StatusSync: true})
	require.NoError(t, err)
	want, err := replay.Encode(got)
	require.NoError(t, err)

	stdout, stderr, code := replayBinary(t, file)
	assert.Equal(t, 0, code)
	assert.Regexp(t, `^musterd replay: warning: .*line \d+.*; replaying the \d+ events before it\n$`, stderr)
	assert.Equal(t, string(want), stdout)
}
