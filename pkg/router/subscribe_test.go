package router_test

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
)

// subscribingServers is fakeServers that can subscribe to resources, as
// the supervisor can.
type subscribingServers struct {
	fakeServers
	subs    []string // "key uri" or "-key uri"
	updates func(events.Key, string)
}

func (f *subscribingServers) Subscribe(_ context.Context, key events.Key, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, key.Name+" "+uri)
	return nil
}

func (f *subscribingServers) Unsubscribe(_ context.Context, key events.Key, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "-"+key.Name+" "+uri)
	return nil
}

func (f *subscribingServers) WatchResourceUpdates(fn func(events.Key, string)) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates = fn
	return func() {}
}

func (f *subscribingServers) subscribed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.subs...)
}

// An exposed resource is subscribed to at its server under the server's
// own URI; the server's updates reach the watchers under the exposed URI;
// a server started again is subscribed again once listed; an unknown URI
// fails; Unsubscribe ends it at the server, and only once.
func TestSubscriptionsGoToTheServerAndSurviveARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		notes := key("notes")
		f := &subscribingServers{fakeServers: fakeServers{
			resources: map[events.Key][]*mcp.Resource{notes: {{URI: "todo", Name: "todo"}}},
		}}
		cat := catalogue.New(catalogue.Options{})
		r, err := router.New(router.Options{Catalogue: cat, Servers: f, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		cat.Update(notes, catalogue.Naming{}, nil, time.Time{})
		synctest.Wait()

		var got []string
		r.OnResourceUpdated(func(uri string) { got = append(got, uri) })
		require.NoError(t, r.Subscribe(t.Context(), "x_notes_todo"))
		assert.Equal(t, []string{"notes todo"}, f.subscribed())
		require.ErrorIs(t, r.Subscribe(t.Context(), "x_notes_nothing"), router.ErrUnknownResource)

		f.updates(notes, "todo")
		f.updates(notes, "other")
		assert.Equal(t, []string{"x_notes_todo"}, got, "under the exposed URI, and only what is subscribed")

		cat.Remove(notes)
		synctest.Wait()
		cat.Update(notes, catalogue.Naming{}, nil, time.Time{})
		synctest.Wait()
		assert.Equal(t, []string{"notes todo", "notes todo"}, f.subscribed(), "the restarted server is subscribed again")

		require.NoError(t, r.Unsubscribe(t.Context(), "x_notes_todo"))
		require.NoError(t, r.Unsubscribe(t.Context(), "x_notes_todo"))
		assert.Equal(t, []string{"notes todo", "notes todo", "-notes todo"}, f.subscribed())
		f.updates(notes, "todo")
		assert.Equal(t, []string{"x_notes_todo"}, got, "no update after Unsubscribe")
	})
}

func TestSubscribeNeedsServersThatCanSubscribe(t *testing.T) {
	cat := catalogue.New(catalogue.Options{})
	r, err := router.New(router.Options{Catalogue: cat, Servers: &fakeServers{}, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.ErrorIs(t, r.Subscribe(t.Context(), "x"), router.ErrSubscriptionsUnsupported)
	assert.ErrorIs(t, r.Unsubscribe(t.Context(), "x"), router.ErrSubscriptionsUnsupported)
}
