package router_test

import (
	"context"
	"errors"
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
	subs     []string // "key uri" or "-key uri"
	updates  func(events.Key, string)
	sessions map[events.Key]uint64 // the running servers' sessions
	started  uint64
	refuse   error // the next Subscribe fails with it
}

func (f *subscribingServers) Subscribe(_ context.Context, key events.Key, uri string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.refuse; err != nil {
		f.refuse = nil
		return err
	}
	f.subs = append(f.subs, key.Name+" "+uri)
	return nil
}

// start gives key's server a new session, as the supervisor's start of it
// does: the test calls it before it tells the catalogue the server runs.
func (f *subscribingServers) start(key events.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sessions == nil {
		f.sessions = map[events.Key]uint64{}
	}
	f.started++
	f.sessions[key] = f.started
}

func (f *subscribingServers) Session(key events.Key) (uint64, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	id, ok := f.sessions[key]
	return id, ok
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

// notesListed is a router over subscribingServers whose server "notes",
// offering the resource "todo", has started and been listed. Call it in
// a synctest bubble.
func notesListed(t *testing.T) (*router.Router, *subscribingServers, *catalogue.Catalogue, events.Key) {
	notes := key("notes")
	f := &subscribingServers{fakeServers: fakeServers{
		resources: map[events.Key][]*mcp.Resource{notes: {{URI: "todo", Name: "todo"}}},
		prompts:   map[events.Key][]*mcp.Prompt{},
	}}
	cat := catalogue.New(catalogue.Options{})
	r, err := router.New(router.Options{Catalogue: cat, Servers: f, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	f.start(notes)
	cat.Update(notes, catalogue.Naming{}, nil, time.Time{})
	synctest.Wait()
	return r, f, cat, notes
}

// An exposed resource is subscribed to at its server under the server's
// own URI; the server's updates reach the watchers under the exposed URI;
// a server started again is subscribed again once listed; an unknown URI
// fails; Unsubscribe ends it at the server, and only once.
func TestSubscriptionsGoToTheServerAndSurviveARestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, f, cat, notes := notesListed(t)

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
		f.start(notes)
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

// Listings of a server come often (its resources or prompts changed, its
// tools were listed again): only one of a new session subscribes again,
// since the old session's subscriptions live on; a renewal that failed is
// tried again at the next listing.
func TestOnlyANewSessionIsSubscribedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, f, cat, notes := notesListed(t)
		require.NoError(t, r.Subscribe(t.Context(), "x_notes_todo"))
		require.Equal(t, []string{"notes todo"}, f.subscribed())

		// The same session listed again, twice over: its prompts changed,
		// its tools were listed again.
		f.setPrompts(notes, &mcp.Prompt{Name: "greet"})
		synctest.Wait()
		cat.Update(notes, catalogue.Naming{}, nil, time.Unix(1, 0))
		synctest.Wait()
		assert.Equal(t, []string{"notes todo"}, f.subscribed(), "the live session keeps its subscription: no second subscribe")

		// A new session (a renewed remote session: no Remove in between),
		// whose first renewal fails, then one that succeeds; then nothing.
		f.start(notes)
		f.mu.Lock()
		f.refuse = errors.New("busy")
		f.mu.Unlock()
		cat.Update(notes, catalogue.Naming{}, nil, time.Unix(2, 0))
		synctest.Wait()
		assert.Equal(t, []string{"notes todo"}, f.subscribed(), "the renewal failed")
		f.setPrompts(notes)
		synctest.Wait()
		assert.Equal(t, []string{"notes todo", "notes todo"}, f.subscribed(), "and is tried again at the next listing")
		f.setPrompts(notes, &mcp.Prompt{Name: "again"})
		synctest.Wait()
		assert.Equal(t, []string{"notes todo", "notes todo"}, f.subscribed(), "once renewed, no more")
	})
}

func TestSubscribeNeedsServersThatCanSubscribe(t *testing.T) {
	cat := catalogue.New(catalogue.Options{})
	r, err := router.New(router.Options{Catalogue: cat, Servers: &fakeServers{}, Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	assert.ErrorIs(t, r.Subscribe(t.Context(), "x"), router.ErrSubscriptionsUnsupported)
	assert.ErrorIs(t, r.Unsubscribe(t.Context(), "x"), router.ErrSubscriptionsUnsupported)
}
