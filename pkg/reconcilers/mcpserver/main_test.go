package mcpserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/internal/proctest"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/supervisor"
)

// fakeBin is cmd/mcp-fake, built once for the tests.
var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

// deadline bounds every wait on a real process: generous, for a loaded
// 2-core machine running the race detector.
const deadline = 20 * time.Second

type harness struct {
	ix  *resources.Index
	sup *supervisor.Supervisor
	cat *catalogue.Catalogue
	r   *mcpserver.Reconciler
}

func newHarness(t *testing.T, opts supervisor.Options) *harness {
	opts.Logger = slog.New(slog.DiscardHandler)
	h := &harness{ix: resources.New(), sup: supervisor.New(opts), cat: catalogue.New(catalogue.Options{})}
	h.r = mcpserver.New(h.ix, h.sup, h.cat)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		require.NoError(t, h.sup.Shutdown(ctx))
	})
	return h
}

func serverKey(name string) events.Key { return events.NewKey(v1alpha1.KindMCPServer, "", name) }

// declare writes an MCPServer named name into the index, as the file
// mcpservers/<name>.yaml with the given spec lines would.
func (h *harness) declare(t *testing.T, name string, spec ...string) {
	t.Helper()
	path := "mcpservers/" + name + ".yaml"
	src := "apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: " + name +
		"\nspec:\n  " + strings.Join(spec, "\n  ") + "\n"
	docs, err := v1alpha1.DecodeFile(path, []byte(src))
	require.NoError(t, err)
	var out []resources.Doc
	for _, d := range docs {
		out = append(out, resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err, Warnings: d.Warnings.Strings()})
	}
	h.ix.SetFile(path, out, nil, serverKey(name))
}

// fakeSpec is the spec lines of a stdio server running mcp-fake with args.
func fakeSpec(autoStart bool, args ...string) []string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return []string{"type: stdio", fmt.Sprintf("autoStart: %t", autoStart), "command: " + fakeBin,
		"args: [" + strings.Join(quoted, ", ") + "]", "timeout: 20"}
}

// reconcile reconciles k and, if that asked for a start, waits for its
// outcome and reconciles again, as the ServiceStateChanged that the runtime
// bridge publishes for the outcome would; it returns the last result.
func (h *harness) reconcile(t *testing.T, k events.Key) reconcilers.Result {
	t.Helper()
	res := h.reconcileOnce(t, k)
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	if _, known, err := h.sup.Wait(ctx, k); err != nil || !known {
		require.NoError(t, err)
		return res
	}
	return h.reconcileOnce(t, k)
}

// reconcileOnce is one reconcile of k.
func (h *harness) reconcileOnce(t *testing.T, k events.Key) reconcilers.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	return h.r.Reconcile(ctx, reconcilers.Request{Key: k, Attempt: 1})
}
func (h *harness) status(t *testing.T, k events.Key) v1alpha1.MCPServerStatus {
	t.Helper()
	st, ok := h.r.Status(k)
	require.True(t, ok, "no status of %s", k)
	return st.(v1alpha1.MCPServerStatus)
}

func (h *harness) pid(t *testing.T, k events.Key) int {
	t.Helper()
	obs, ok := h.sup.Get(k)
	require.True(t, ok, "the supervisor knows no %s", k)
	require.NotZero(t, obs.PID, "%s has no process", k)
	return obs.PID
}

// processGone reports whether pid is neither running nor a zombie.
func processGone(pid int) bool { return !proctest.Exists(pid) }

// processesWith returns the pids of the processes one of whose
// arguments is arg (internal/proctest).
func processesWith(t *testing.T, arg string) []int { return proctest.With(t, arg) }
