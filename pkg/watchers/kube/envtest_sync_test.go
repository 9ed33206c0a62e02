package kube

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// On a real API server, the resources that exist when the watcher starts
// reach the bus as ResourceChanged creates, then one IndexSynchronized of
// source kubernetes follows them, by which time every one is in the index:
// the debouncer holds the listing's changes until that event, and the
// coordinator's first full pass starts from it.
func TestEnvtestTheListingIsPublishedThenIndexSynchronized(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := t.Context()
	for _, obj := range []v1alpha1.Object{
		&v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "git"},
			Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "git-mcp"}},
		&v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "fs"},
			Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "fs-mcp"}},
		&v1alpha1.Workflow{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "deploy"},
			Spec: v1alpha1.WorkflowSpec{Steps: []v1alpha1.WorkflowStep{{ID: "only", Tool: "x_git_log"}}}},
	} {
		require.NoError(t, cp.Client.Create(ctx, obj))
	}

	b := bus.New(bus.Options{})
	index := resources.New()
	var (
		mu      sync.Mutex
		got     []string
		indexed int // resources in the index when IndexSynchronized arrived
	)
	_, err := b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(), Handlers: []bus.Handler{
		bus.On(func(e events.ResourceChanged) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, string(e.Operation)+" "+e.Key.String()+" "+string(e.Source))
		}),
		bus.On(func(e events.IndexSynchronized) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, "IndexSynchronized "+string(e.Source))
			indexed = len(index.List(""))
		}),
	}})
	require.NoError(t, err)
	b.Start()
	t.Cleanup(b.Close)

	w, err := New(b, Options{Config: cp.Config, Index: index, Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Start(wctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	select {
	case <-w.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not sync")
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) == 4
	}, 30*time.Second, 10*time.Millisecond, "three creates and IndexSynchronized")

	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{
		"create MCPServer/default/git kubernetes",
		"create MCPServer/default/fs kubernetes",
		"create Workflow/default/deploy kubernetes",
	}, got[:3], "the listing, in whatever order the informers deliver it")
	assert.Equal(t, "IndexSynchronized kubernetes", got[3], "IndexSynchronized comes after every resource of the listing")
	assert.Equal(t, 3, indexed, "every listed resource is in the index when IndexSynchronized is published")
}
