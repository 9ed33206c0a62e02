package kube

import (
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// handlerHarness drives the informers' handlers directly: the informers
// themselves run against a real API server in the envtest tests.
type handlerHarness struct {
	w     *Watcher
	index *resources.Index
	mu    sync.Mutex
	got   []string
}

func newHandlerHarness(t *testing.T) *handlerHarness {
	b := bus.New(bus.Options{})
	h := &handlerHarness{index: resources.New()}
	w, err := New(b, Options{Config: &rest.Config{}, Index: h.index, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	require.NoError(t, err)
	h.w = w
	_, err = b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(), Handlers: []bus.Handler{
		bus.On(func(e events.ResourceChanged) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.got = append(h.got, string(e.Operation)+" "+e.Key.String()+" "+string(e.Source)+" gen="+itoa(e.Generation))
		}),
	}})
	require.NoError(t, err)
	b.Start()
	t.Cleanup(b.Close)
	return h
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func (h *handlerHarness) published() []string {
	synctest.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.got
	h.got = nil
	return out
}

func server(gen int64, command string) *v1alpha1.MCPServer {
	return &v1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "git", Generation: gen, ResourceVersion: "1"},
		Spec:       v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: command},
	}
}

func TestOnlyANewGenerationIsAChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHandlerHarness(t)
		key := events.NewKey("MCPServer", "team", "git")

		h.w.upsert(server(1, "git-mcp"))
		assert.Equal(t, []string{"create MCPServer/team/git kubernetes gen=1"}, h.published())
		entry, ok := h.index.Get(key)
		require.True(t, ok)
		assert.Equal(t, []string{"kube/team/MCPServer/git"}, entry.Files)
		got := entry.Object.(*v1alpha1.MCPServer)
		assert.Equal(t, "git-mcp", got.Spec.Command)
		assert.Equal(t, v1alpha1.KindMCPServer, got.Kind, "the object in force says what it is")
		assert.Equal(t, v1alpha1.DefaultMCPServerTimeout, got.Spec.Timeout, "defaulted like a file")

		// A status write, or an informer resync: a new resourceVersion,
		// the same generation.
		statusOnly := server(1, "git-mcp")
		statusOnly.ResourceVersion = "2"
		statusOnly.Status = &v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning}
		h.w.upsert(statusOnly)
		h.w.upsert(statusOnly)
		assert.Empty(t, h.published(), "a status-only update is no change")

		h.w.upsert(server(2, "git-mcp-v2"))
		assert.Equal(t, []string{"update MCPServer/team/git kubernetes gen=2"}, h.published())

		// Even a spec set back to what it was is a new generation, whose
		// observedGeneration must catch up.
		h.w.upsert(server(3, "git-mcp-v2"))
		assert.Equal(t, []string{"update MCPServer/team/git kubernetes gen=3"}, h.published())
		entry, _ = h.index.Get(key)
		assert.Equal(t, int64(3), entry.Object.(*v1alpha1.MCPServer).Generation)

		h.w.remove(toolscache.DeletedFinalStateUnknown{Key: "team/git", Obj: server(3, "git-mcp-v2")})
		assert.Equal(t, []string{"delete MCPServer/team/git kubernetes gen=3"}, h.published())
		_, ok = h.index.Get(key)
		assert.False(t, ok)
	})
}

func TestAnInvalidResourceKeepsItsLastGoodDefinitionAndShowsTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHandlerHarness(t)
		key := events.NewKey("MCPServer", "team", "git")
		h.w.upsert(server(1, "git-mcp"))
		h.published()

		bad := server(2, "")
		h.w.upsert(bad)
		assert.Equal(t, []string{"update MCPServer/team/git kubernetes gen=2"}, h.published())
		entry, _ := h.index.Get(key)
		require.Error(t, entry.Err)
		assert.Contains(t, entry.Err.Error(), "MCPServer/team/git (generation 2)")
		assert.Contains(t, entry.Err.Error(), "spec.command")
		assert.Equal(t, "git-mcp", entry.Object.(*v1alpha1.MCPServer).Spec.Command, "the last good definition stays in force")

		h.w.upsert(server(3, "git-mcp"))
		assert.Equal(t, []string{"update MCPServer/team/git kubernetes gen=3"}, h.published())
		entry, _ = h.index.Get(key)
		assert.NoError(t, entry.Err)
	})
}

func TestAWorkflowIsIndexedUnderItsOwnKind(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHandlerHarness(t)
		wf := &v1alpha1.Workflow{
			ObjectMeta: metav1.ObjectMeta{Name: "greet", Generation: 1},
			Spec:       v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{{ID: "hello", Tool: "x_echo_say"}}},
		}
		h.w.upsert(wf)
		assert.Equal(t, []string{"create Workflow/default/greet kubernetes gen=1"}, h.published())
		assert.Equal(t, []string{"kube/default/Workflow/greet"}, h.index.Files())
	})
}

// A resource deleted and created again under its name while the watch was
// down comes back on the informer's relist as an update of the same
// generation (1), but of another object: its spec is a change.
func TestARecreatedResourceWithTheSameGenerationIsAChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHandlerHarness(t)
		key := events.NewKey("MCPServer", "team", "git")
		old := server(1, "git-mcp")
		old.UID = "uid-old"
		h.w.upsert(old)
		assert.Equal(t, []string{"create MCPServer/team/git kubernetes gen=1"}, h.published())

		recreated := server(1, "git-mcp-recreated")
		recreated.UID = "uid-new"
		recreated.ResourceVersion = "7"
		h.w.upsert(recreated)
		assert.Equal(t, []string{"update MCPServer/team/git kubernetes gen=1"}, h.published())
		entry, _ := h.index.Get(key)
		assert.Equal(t, "git-mcp-recreated", entry.Object.(*v1alpha1.MCPServer).Spec.Command, "the new object's spec is in force")

		// Recreated with the very same spec: still another object, whose
		// empty status must be written, so it is reconciled.
		same := server(1, "git-mcp-recreated")
		same.UID = "uid-newer"
		h.w.upsert(same)
		assert.Equal(t, []string{"update MCPServer/team/git kubernetes gen=1"}, h.published())

		// And a status-only update of that object is still no change.
		same.ResourceVersion = "8"
		h.w.upsert(same)
		assert.Empty(t, h.published())
	})
}
