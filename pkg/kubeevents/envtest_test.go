package kubeevents_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/internal/modroot"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/kubeevents"
)

// The recorder, running as a user bound to nothing but config/rbac's
// ClusterRole, records its Events on a real API server: config/rbac covers
// what it does (the start's listing, creating Events, patching a repeated
// one's series).
func TestEnvtestEventsAppearOnTheResourcesUnderMusterdsRBAC(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := t.Context()
	root, err := modroot.Dir()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	require.NoError(t, err)
	var role rbacv1.ClusterRole
	require.NoError(t, yaml.Unmarshal(data, &role))
	require.NoError(t, cp.Client.Create(ctx, &role))
	require.NoError(t, cp.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "musterd-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "musterd-test"}},
	}))
	user := cp.AddUser(t, "musterd-test")

	git := &v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "git"},
		Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "git-mcp"}}
	require.NoError(t, cp.Client.Create(ctx, git))
	key := events.Key{Kind: v1alpha1.KindMCPServer, Namespace: "default", Name: "git"}

	var mu sync.Mutex
	status := v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning, ObservedGeneration: 1, ToolCount: 3}
	b := bus.New(bus.Options{})
	r, err := kubeevents.New(b, kubeevents.Options{
		Config: user.Config(),
		ResourceStatus: func(k events.Key) (any, bool) {
			mu.Lock()
			defer mu.Unlock()
			return status, k == key
		},
	})
	require.NoError(t, err)
	b.Start()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Start(runCtx) }()
	<-r.SubscriptionReady()

	type got struct {
		Type, Reason, Action, Note, Controller string
		Count                                  int32
	}
	var seen []got
	// waitFor polls the Events on MCPServer default/git until there are n,
	// the ReconcileFailed one (sorted first) with series count count.
	waitFor := func(n int, count int32) {
		t.Helper()
		// The condition runs on a goroutine of testify's: it fails through
		// c, never through t (FailNow off the test's goroutine is a bug).
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var list eventsv1.EventList
			require.NoError(c, cp.Client.List(ctx, &list, client.InNamespace("default")))
			seen = nil
			for _, e := range list.Items {
				if e.Regarding.UID != git.UID || e.Regarding.Kind != v1alpha1.KindMCPServer || e.Regarding.Name != "git" {
					continue
				}
				g := got{e.Type, e.Reason, e.Action, e.Note, e.ReportingController, 1}
				if e.Series != nil {
					g.Count = e.Series.Count
				}
				seen = append(seen, g)
			}
			slices.SortFunc(seen, func(a, b got) int { return strings.Compare(a.Reason, b.Reason) })
			require.Len(c, seen, n, "the Events on MCPServer default/git: %+v", seen)
			for _, g := range seen {
				if g.Reason == kubeevents.ReasonReconcileFailed {
					assert.Equal(c, count, g.Count, "the ReconcileFailed Event's series count: %+v", seen)
				}
			}
		}, 30*time.Second, 100*time.Millisecond)
	}

	bus.Publish(b, events.ResourceSynced{Meta: events.NewMeta(""), Key: key, Attempt: 1})
	failure := "start git-mcp: connect https://admin:hunter2@example.com refused"
	bus.Publish(b, events.ResourceFailed{Meta: events.NewMeta(""), Key: key, Attempt: 1, Error: failure})
	waitFor(4, 1)
	// The same failure again, the object unchanged: the same Event, its
	// series patched to count 2.
	bus.Publish(b, events.ResourceFailed{Meta: events.NewMeta(""), Key: key, Attempt: 2, Error: failure})
	waitFor(4, 2)
	assert.Equal(t, []got{
		{"Normal", "MCPServerStarted", kubeevents.ActionStart, "MCPServer git service started successfully", "musterd", 1},
		{"Normal", "MCPServerToolsDiscovered", kubeevents.ActionStart, "MCPServer git tools discovered and registered successfully", "musterd", 1},
		{"Warning", kubeevents.ReasonReconcileFailed, kubeevents.ActionReconcile, "start git-mcp: connect https://[redacted]@example.com refused", "musterd", 2},
		{"Normal", kubeevents.ReasonSynced, kubeevents.ActionReconcile, "generation 1 reconciled", "musterd", 1},
	}, seen)

	// What kubectl shows.
	out, err := cp.Kubectl(ctx, t, nil, "events", "-n", "default", "--for", "mcpserver/git")
	require.NoError(t, err)
	t.Logf("kubectl events --for mcpserver/git:\n%s", out)
	assert.Contains(t, out, "MCPServerStarted")

	stop()
	require.NoError(t, <-done, "a clean stop")
}
