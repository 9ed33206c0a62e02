package supervisor_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/logtest"
	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/proctest"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/supervisor"
)

// fakeBin is cmd/mcp-fake, built once for the tests.
var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

// deadline bounds every wait on a real process: generous, for a loaded
// 2-core machine running the race detector.
const deadline = 20 * time.Second

func fake(args ...string) v1alpha1.MCPServerSpec {
	return v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: fakeBin, Args: args, Timeout: 20}
}

func key(name string) events.Key { return events.NewKey("MCPServer", "", name) }

// recorder keeps every OnChange call.
type recorder struct {
	mu      sync.Mutex
	changes map[events.Key][]supervisor.Observed
	order   []change // every change of every key, in order
}

type change struct {
	key events.Key
	obs supervisor.Observed
}

func (c change) String() string { return c.key.Name + ":" + string(c.obs.State) }

func (r *recorder) onChange(k events.Key, o supervisor.Observed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes[k] = append(r.changes[k], o)
	r.order = append(r.order, change{k, o})
}

func (r *recorder) of(k events.Key) []supervisor.Observed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changes[k])
}

func (r *recorder) states(k events.Key) []v1alpha1.MCPServerState {
	var states []v1alpha1.MCPServerState
	for _, o := range r.of(k) {
		states = append(states, o.State)
	}
	return states
}

// waitFor polls until a change of k reported through OnChange satisfies
// ok, and returns the first that does.
func (r *recorder) waitFor(t *testing.T, k events.Key, what string, ok func(supervisor.Observed) bool) supervisor.Observed {
	t.Helper()
	var found supervisor.Observed
	require.Eventually(t, func() bool {
		for _, o := range r.of(k) {
			if ok(o) {
				found = o
				return true
			}
		}
		return false
	}, deadline, 5*time.Millisecond, "%s: no such change of %s; changes: %+v", what, k, r.of(k))
	return found
}

type harness struct {
	sup  *supervisor.Supervisor
	rec  *recorder
	logs *logtest.Buffer
}

// newHarness returns a supervisor with opts, its OnChange recorded and its
// logs captured, shut down when the test ends.
func newHarness(t *testing.T, opts supervisor.Options) *harness {
	h := &harness{rec: &recorder{changes: map[events.Key][]supervisor.Observed{}}, logs: &logtest.Buffer{}}
	opts.OnChange = h.rec.onChange
	opts.Logger = slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.sup = supervisor.New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		require.NoError(t, h.sup.Shutdown(ctx))
	})
	return h
}

// ensure asks for spec and waits for the outcome of the start it may need.
func (h *harness) ensure(t *testing.T, k events.Key, spec v1alpha1.MCPServerSpec) supervisor.Observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	_, err := h.sup.Ensure(ctx, k, spec)
	require.NoError(t, err)
	return h.settle(t, k)
}

// settle waits until no start of k is under way or asked for, and returns
// the outcome.
func (h *harness) settle(t *testing.T, k events.Key) supervisor.Observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	obs, ok, err := h.sup.Wait(ctx, k)
	require.NoError(t, err)
	require.True(t, ok, "%s is known", k)
	return obs
}

// processesWith returns the pids of the processes one of whose
// arguments is arg (internal/proctest).
func processesWith(t *testing.T, arg string) []int { return proctest.With(t, arg) }

// processExists reports whether pid names a process (a zombie included).
func processExists(pid int) bool { return proctest.Exists(pid) }

// groupExists reports whether any process is left in process group pgid.
func groupExists(pgid int) bool { return proctest.GroupExists(pgid) }
