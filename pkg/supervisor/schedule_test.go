package supervisor

// The restart schedule of the whole supervisor, in virtual time
// (testing/synctest): Ensure asked for a crashing server every 100ms, as an
// impatient reconciler would, starts it at exactly the offsets the backoff
// gives, never sooner, up to the cap; a run of StableAfter clears the
// streak, a shorter run does not. The stdio server is a fake
// (Supervisor.startProc): an in-process MCP server over io.Pipes, whose
// "process" exits when the test says, since a real child's pipes and
// reaping are I/O that virtual time cannot wait on.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// fakeRun is how one start of the fake server behaves: it crashes at once
// (before answering initialize) unless serve is set; then it serves MCP
// until crashAfter has passed, or for ever when that is zero.
type fakeRun struct {
	serve      bool
	crashAfter time.Duration
}

// fakeStarter starts fake servers that behave as runs says, one run per
// start and crash at once after the last, and records when each start came,
// from t0.
type fakeStarter struct {
	t0   time.Time
	runs []fakeRun

	mu     sync.Mutex
	starts []time.Duration
}

func (f *fakeStarter) startedAt() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.starts...)
}

func (f *fakeStarter) start(_ v1alpha1.MCPServerSpec, tail int, _ bool) (*process, error) {
	f.mu.Lock()
	n := len(f.starts)
	f.starts = append(f.starts, time.Since(f.t0))
	var run fakeRun
	if n < len(f.runs) {
		run = f.runs[n]
	}
	f.mu.Unlock()

	inR, inW := io.Pipe()   // the server's stdin
	outR, outW := io.Pipe() // its stdout
	errR, errW := io.Pipe() // its stderr
	exit := make(chan string, 1)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	die := func(how string) {
		once.Do(func() {
			cancel()
			exit <- how
			_ = inR.Close()
			_ = outW.Close()
			_ = errW.Close()
		})
	}
	g := &fakeGroup{die: die}
	if !run.serve {
		die("exited with exit code 3")
	} else {
		server := mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
		mcp.AddTool(server, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
		go func() {
			_ = server.Run(ctx, &mcp.IOTransport{Reader: inR, Writer: outW})
			die("exited with exit code 0") // its stdin closed: a clean exit
		}()
		if run.crashAfter > 0 {
			time.AfterFunc(run.crashAfter, func() { die("exited with exit code 3") })
		}
	}
	return newProcess(100+n, g, inW, outR, errR, tail, func() string { return <-exit }), nil
}

// fakeGroup ends a fake server as signals end a real one.
type fakeGroup struct{ die func(string) }

func (g *fakeGroup) terminate() { g.die("was killed by signal 15 (terminated)") }
func (g *fakeGroup) kill()      { g.die("was killed by signal 9 (killed)") }
func (g *fakeGroup) release()   {}

// timedChange is one observation, at its offset from t0.
type timedChange struct {
	at  time.Duration
	obs Observed
}

// runSchedule runs a supervisor with backoff and StableAfter 60s on the
// fake runs, asking Ensure for the server every 100ms until horizon, and
// returns the offsets of the starts and every change observed.
func runSchedule(t *testing.T, backoff Backoff, runs []fakeRun, horizon time.Duration) ([]time.Duration, []timedChange) {
	t.Helper()
	var (
		starts  []time.Duration
		changes []timedChange
	)
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		fake := &fakeStarter{t0: t0, runs: runs}
		var mu sync.Mutex
		sup := New(Options{
			Logger:         slog.New(slog.DiscardHandler),
			RestartBackoff: backoff,
			StableAfter:    60 * time.Second,
			OnChangeSync: func(_ events.Key, o Observed) {
				mu.Lock()
				changes = append(changes, timedChange{at: time.Since(t0), obs: o})
				mu.Unlock()
			},
		})
		sup.startProc = fake.start
		key := events.NewKey(v1alpha1.KindMCPServer, "", "crash")
		spec := v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "fake"}
		for time.Since(t0) < horizon {
			_, err := sup.Ensure(t.Context(), key, spec)
			var later *RetryLaterError
			if err != nil && !errors.As(err, &later) {
				t.Fatalf("Ensure at %v: %v", time.Since(t0), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		require.NoError(t, sup.Shutdown(t.Context()))
		synctest.Wait()
		starts = fake.startedAt()
	})
	return starts, changes
}

// lastSeen is the last observation before the shutdown's Stopped, which
// forgets the server.
func lastSeen(t *testing.T, changes []timedChange) Observed {
	t.Helper()
	for i := len(changes) - 1; i >= 0; i-- {
		if changes[i].obs.State != v1alpha1.MCPServerStateStopped {
			return changes[i].obs
		}
	}
	t.Fatal("no observation before the shutdown")
	return Observed{}
}

func seconds(s ...int) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, n := range s {
		out[i] = time.Duration(n) * time.Second
	}
	return out
}

// A server that crashes at once starts at exactly 0, 1, 3, 7, … s: each
// delay doubles from 1s until the 5m cap, and then stays there.
func TestACrashingServerStartsExactlyOnTheBackoffScheduleUpToItsCap(t *testing.T) {
	starts, changes := runSchedule(t, Backoff{Jitter: -1}, nil, 1200*time.Second)
	//                    1  2  4   8  16  32   64   128  256  300  300
	want := seconds(0, 1, 3, 7, 15, 31, 63, 127, 255, 511, 811, 1111)
	assert.Equal(t, want, starts)

	last := lastSeen(t, changes)
	assert.Equal(t, len(want), last.ConsecutiveFailures, "every start failed, and counts")
	assert.Zero(t, last.RestartCount, "no process ran: failed starts are not restarts")
	assert.Contains(t, last.LastFailure, "exited with exit code 3 before it finished starting")
	for _, c := range changes {
		if c.obs.State == v1alpha1.MCPServerStateFailed && c.obs.ConsecutiveFailures == len(want) {
			assert.Equal(t, 1111*time.Second, c.at)
			assert.Equal(t, 5*time.Minute, c.obs.NextRetryAfter.Sub(c.obs.LastFailureTime), "the cap")
		}
	}
}

// With the default jitter each delay is stretched by up to 10%, never
// shortened: exactly 6 starts in the first minute, as the end-to-end test
// of the binary sees them.
func TestJitterOnlyLengthensTheDelaysAndSixStartsFitTheFirstMinute(t *testing.T) {
	starts, _ := runSchedule(t, Backoff{}, nil, 200*time.Second)
	require.Len(t, starts, 8, "%v", starts) // the 8th by 127·1.1 s
	inFirstMinute := 0
	for i, at := range starts {
		if at < time.Minute {
			inFirstMinute++
		}
		if i == 0 {
			assert.Zero(t, at)
			continue
		}
		floor := time.Second << (i - 1)
		gap := at - starts[i-1]
		assert.GreaterOrEqual(t, gap, floor, "start %d: %v after the one before", i+1, gap)
		// Jitter adds up to 10%; the start comes at the first Ensure
		// (every 100ms) from then.
		assert.LessOrEqual(t, gap, floor+floor/10+100*time.Millisecond, "start %d: %v after the one before", i+1, gap)
	}
	assert.Equal(t, 6, inFirstMinute, "%v", starts)
}

// A run of StableAfter (60s) clears the failure streak at exactly its 60th
// second, so the next crash waits 1s again; a shorter run clears nothing.
func TestARunOfStableAfterResetsTheBackoffAndAShorterOneDoesNot(t *testing.T) {
	runs := []fakeRun{
		{}, {}, {}, // crash at 0, 1 and 3 s: the next waits 4 s
		{serve: true, crashAfter: 90 * time.Second}, // runs 7..97 s, stable at 67 s
		{}, // 98 s: 1 s after the crash, the streak was cleared
		{serve: true, crashAfter: 59 * time.Second}, // 100..159 s, one second short of stable
		{}, // 163 s: 4 s after, the streak went on (3rd failure)
	}
	starts, changes := runSchedule(t, Backoff{Jitter: -1}, runs, 175*time.Second)
	assert.Equal(t, seconds(0, 1, 3, 7, 98, 100, 163, 171), starts)

	var cleared []time.Duration
	prev := 0
	for _, c := range changes {
		if c.obs.State == v1alpha1.MCPServerStateStopped {
			continue // the shutdown forgets the server
		}
		if prev > 0 && c.obs.ConsecutiveFailures == 0 {
			cleared = append(cleared, c.at)
		}
		prev = c.obs.ConsecutiveFailures
	}
	assert.Equal(t, seconds(67), cleared, "the streak is cleared once, after 60 s of running")
	last := lastSeen(t, changes)
	assert.Equal(t, 2, last.RestartCount, "the two runs that ran were each restarted")
	assert.Equal(t, 5, last.ConsecutiveFailures, "the crashes at 97, 98, 159, 163 and 171 s")
}

// Jitter -1 is off however often the defaults are applied: Options applies
// them to RestartBackoff, and Delay again.
func TestNegativeJitterStaysOffThroughTheDefaults(t *testing.T) {
	b := Options{RestartBackoff: Backoff{Jitter: -1}}.withDefaults().RestartBackoff
	assert.Equal(t, time.Second, b.Delay(1, 0.999))
	assert.Equal(t, 8*time.Second, b.withDefaults().Delay(4, 0.999))
}
