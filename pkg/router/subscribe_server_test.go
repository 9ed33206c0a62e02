package router_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

// A server's view subscribes by the server's own URI; it and the exposed
// URI routed to the same resource share one subscription at the server,
// which ends when neither wants it; each hears the updates under its own
// name while it wants them; a server started again is subscribed again.
func TestAServersViewSubscribesByItsOwnURIAndSharesTheServersSubscription(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, f, cat, notes := notesListed(t)
		type update struct {
			key events.Key
			uri string
		}
		var exposed []string
		var own []update
		r.OnResourceUpdated(func(uri string) { exposed = append(exposed, uri) })
		r.OnServerResourceUpdated(func(key events.Key, uri string) { own = append(own, update{key, uri}) })

		require.NoError(t, r.SubscribeServer(t.Context(), notes, "todo"))
		require.NoError(t, r.SubscribeServer(t.Context(), notes, "todo"))
		require.NoError(t, r.Subscribe(t.Context(), "x_notes_todo"))
		assert.Equal(t, []string{"notes todo"}, f.subscribed(), "one subscription at the server, by its own URI")
		require.NoError(t, r.SubscribeServer(t.Context(), notes, "unlisted"))
		assert.Equal(t, []string{"notes todo", "notes unlisted"}, f.subscribed(), "the view's URIs are the server's to judge")

		f.updates(notes, "todo")
		assert.Equal(t, []string{"x_notes_todo"}, exposed)
		assert.Equal(t, []update{{notes, "todo"}}, own)

		cat.Remove(notes)
		synctest.Wait()
		f.start(notes)
		cat.Update(notes, catalogue.Naming{}, nil, time.Time{})
		synctest.Wait()
		assert.ElementsMatch(t, []string{"notes todo", "notes unlisted", "notes todo", "notes unlisted"}, f.subscribed(),
			"the restarted server is subscribed again to both, once each")

		require.NoError(t, r.UnsubscribeServer(t.Context(), notes, "todo"))
		assert.Len(t, f.subscribed(), 4, "the exposed URI still wants it")
		f.updates(notes, "todo")
		assert.Equal(t, []string{"x_notes_todo", "x_notes_todo"}, exposed)
		assert.Equal(t, []update{{notes, "todo"}}, own, "the view unsubscribed: no more updates for it")

		require.NoError(t, r.Unsubscribe(t.Context(), "x_notes_todo"))
		require.NoError(t, r.UnsubscribeServer(t.Context(), notes, "unlisted"))
		require.NoError(t, r.UnsubscribeServer(t.Context(), notes, "unlisted"))
		assert.Equal(t, []string{"-notes todo", "-notes unlisted"}, f.subscribed()[4:], "unsubscribed once nobody wants them, once each")
	})
}
