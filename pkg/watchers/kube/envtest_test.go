package kube

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// watchGap is a proxy in front of a real API server that can open a gap in
// the MCPServer watch: it cuts the watches, holds the watcher's new watch
// while the test changes things, then answers it 410 Gone (as an API
// server whose watch cache no longer has that resourceVersion does), which
// makes the informer relist.
type watchGap struct {
	mu      sync.Mutex
	cancels map[*http.Request]context.CancelFunc
	holding bool
	held    chan struct{} // a watch is held
	release chan struct{}
}

func newWatchGap(t *testing.T, cfg *rest.Config) (*watchGap, *rest.Config) {
	transport, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	target, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1
	g := &watchGap{cancels: map[*http.Request]context.CancelFunc{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "true" || !strings.HasSuffix(r.URL.Path, "/mcpservers") {
			proxy.ServeHTTP(w, r)
			return
		}
		g.mu.Lock()
		if g.holding {
			g.holding = false
			held, release := g.held, g.release
			g.mu.Unlock()
			close(held)
			<-release
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old resource version"}`))
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		r = r.WithContext(ctx)
		g.cancels[r] = cancel
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			delete(g.cancels, r)
			g.mu.Unlock()
			cancel()
		}()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return g, &rest.Config{Host: srv.URL}
}

// open cuts the MCPServer watches and returns once the watcher's next
// watch is held; close answers it 410 Gone.
func (g *watchGap) open(t *testing.T) (close func()) {
	g.mu.Lock()
	g.holding = true
	g.held, g.release = make(chan struct{}), make(chan struct{})
	held, release := g.held, g.release
	for _, cancel := range g.cancels {
		cancel()
	}
	g.mu.Unlock()
	select {
	case <-held:
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not watch again after its watch was cut")
	}
	return func() { closeOnce(release) }
}

func closeOnce(c chan struct{}) {
	select {
	case <-c:
	default:
		close(c)
	}
}

// A resource deleted and created again with another spec while the watch
// was down comes back on the relist as an update whose generation (1)
// equals the old one: the watcher must still take the new object's spec.
func TestEnvtestARecreatedResourceMissedInAWatchGapIsTakenOnRelist(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := t.Context()
	gap, cfg := newWatchGap(t, cp.Config)
	b := bus.New(bus.Options{})
	b.Start()
	t.Cleanup(b.Close)
	index := resources.New()
	w, err := New(b, Options{Config: cfg, Index: index, Namespace: "default", Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Start(wctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	create := func(command string) identity {
		obj := &v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "git"},
			Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: command}}
		require.NoError(t, cp.Client.Create(ctx, obj))
		return identity{uid: string(obj.UID), gen: obj.Generation}
	}
	key := events.NewKey(v1alpha1.KindMCPServer, "default", "git")
	command := func() string {
		e, ok := index.Get(key)
		if !ok || e.Object == nil {
			return ""
		}
		return e.Object.(*v1alpha1.MCPServer).Spec.Command
	}
	old := create("git-mcp")
	select {
	case <-w.Synced():
	case <-time.After(30 * time.Second):
		t.Fatal("the watcher did not sync")
	}
	require.Eventually(t, func() bool { return command() == "git-mcp" }, 30*time.Second, 20*time.Millisecond)

	release := gap.open(t)
	defer release()
	obj := &v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "git"}}
	require.NoError(t, cp.Client.Delete(ctx, obj))
	recreated := create("git-mcp-recreated")
	require.Equal(t, old.gen, recreated.gen, "the recreated object starts at the same generation")
	require.NotEqual(t, old.uid, recreated.uid)
	release()

	require.Eventually(t, func() bool { return command() == "git-mcp-recreated" }, 30*time.Second, 20*time.Millisecond,
		"the relist's update of the same generation, of another object, is taken")
	e, _ := index.Get(key)
	assert.Equal(t, recreated.uid, string(e.Object.(*v1alpha1.MCPServer).UID))
}

// identity is what tells two objects of one name apart.
type identity struct {
	uid string
	gen int64
}
