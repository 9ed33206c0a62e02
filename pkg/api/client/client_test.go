package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

const greetWorkflow = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
spec:
  steps:
    - id: hello
      tool: echo
`

var greetKey = events.NewKey(v1alpha1.KindWorkflow, "", "greet")

func newClient(t *testing.T, f *apitest.Fixture, token string) *client.Client {
	c, err := client.New(f.URL, token, f.HTTP)
	require.NoError(t, err)
	return c
}

func TestClientReadsResourcesAndTriggersReconciles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, func(o *api.Options) { o.Token = "t0ken" })
		f.Declare("workflows/greet.yaml", greetWorkflow)
		f.SetResourceStatus(greetKey, v1alpha1.WorkflowStatus{Valid: true, StepCount: 1})
		f.Publish(events.ResourceSynced{Meta: events.Meta{Time: events.Now(), CorrelationID: "c1"}, Key: greetKey, Attempt: 1})
		c := newClient(t, f, "t0ken")
		ctx := context.Background()

		o, err := c.Get(ctx, "wf", "", "greet")
		require.NoError(t, err)
		entry, _ := f.Index.Get(greetKey)
		synced := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
		assert.Equal(t, types.Object{
			APIVersion: v1alpha1.APIVersion, Kind: "Workflow",
			Metadata:  types.ObjectMeta{Name: "greet", Namespace: "default", Hash: entry.Hash},
			Spec:      json.RawMessage(`{"steps":[{"id":"hello","tool":"echo"}]}`),
			Status:    json.RawMessage(`{"valid":true,"stepCount":1}`),
			Reconcile: types.Reconcile{State: "Synced", LastReconcileTime: &synced, CorrelationID: "c1"},
			Files:     []string{"workflows/greet.yaml"},
		}, compact(t, o))
		assert.Equal(t, greetKey, o.Key())

		list, err := c.List(ctx, "workflows", "default")
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, compact(t, o), compact(t, list[0]))
		list, err = c.List(ctx, "", "elsewhere")
		require.NoError(t, err)
		assert.Empty(t, list)

		key, err := c.Reconcile(ctx, "workflow", "", "greet")
		require.NoError(t, err)
		assert.Equal(t, greetKey, key)
		assert.Equal(t, []events.Key{greetKey}, f.Triggered())

		ready, err := c.Ready(ctx)
		require.NoError(t, err)
		assert.False(t, ready)
		f.SetReady(true)
		ready, err = c.Ready(ctx)
		require.NoError(t, err)
		assert.True(t, ready)
	})
}

// compact re-encodes the raw parts of o without the server's indentation.
func compact(t *testing.T, o types.Object) types.Object {
	for _, raw := range []*json.RawMessage{&o.Spec, &o.Status} {
		if len(*raw) > 0 {
			var b bytes.Buffer
			require.NoError(t, json.Compact(&b, *raw))
			*raw = b.Bytes()
		}
	}
	return o
}

func TestClientErrorsCarryTheStatusAndTheServersMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, func(o *api.Options) { o.Token = "t0ken" })
		f.Declare("workflows/greet.yaml", greetWorkflow)
		ctx := context.Background()
		c := newClient(t, f, "")

		_, err := c.Get(ctx, "wf", "default", "nope")
		assert.Equal(t, &client.Error{StatusCode: http.StatusNotFound, Message: "workflows/default/nope: not found"}, err)
		assert.EqualError(t, err, "workflows/default/nope: not found")
		assert.True(t, client.IsNotFound(err))

		_, err = c.Reconcile(ctx, "wf", "default", "greet")
		assert.Equal(t, &client.Error{StatusCode: http.StatusUnauthorized, Message: "a valid bearer token is required to trigger a reconcile"}, err)
		assert.False(t, client.IsNotFound(err))
		assert.True(t, client.IsUnauthorized(err))

		_, err = c.List(ctx, "pods", "")
		assert.EqualError(t, err, `unknown kind "pods": valid kinds are mcpservers (mcpserver, mcps), workflows (workflow, wf)`)

		_, err = c.Events(ctx, types.EventFilter{Types: []string{"Nope"}})
		assert.True(t, client.IsUnauthorized(err), "the event stream needs the token: %v", err)
		_, err = newClient(t, f, "t0ken").Events(ctx, types.EventFilter{Types: []string{"Nope"}})
		var apiErr *client.Error
		require.ErrorAs(t, err, &apiErr)
		assert.Equal(t, http.StatusBadRequest, apiErr.StatusCode)
	})
}

func TestClientErrorWithoutAJSONBodyIsTheBodyOrTheStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		url, hc := apitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("kind") == "text" {
				http.Error(w, "upstream down", http.StatusBadGateway)
				return
			}
			w.WriteHeader(http.StatusTeapot)
		}))
		c, err := client.New(url, "", hc)
		require.NoError(t, err)
		_, err = c.List(context.Background(), "text", "")
		assert.Equal(t, &client.Error{StatusCode: http.StatusBadGateway, Message: "upstream down"}, err)
		_, err = c.List(context.Background(), "", "")
		assert.Equal(t, &client.Error{StatusCode: http.StatusTeapot, Message: "418 I'm a teapot"}, err)
	})
}

func TestNewChecksTheServerAddress(t *testing.T) {
	for _, ok := range []string{"127.0.0.1:8090", "http://127.0.0.1:8090", "https://musterd.example/", "localhost:1"} {
		_, err := client.New(ok, "", nil)
		assert.NoError(t, err, ok)
	}
	for _, bad := range []string{"ftp://host", "http://", "http://host:bad port"} {
		_, err := client.New(bad, "", nil)
		assert.Error(t, err, bad)
	}
}

func TestEventsFollowsTheBusUntilClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		c := newClient(t, f, "")
		s, err := c.Events(context.Background(), types.EventFilter{Kind: "Workflow", Types: []string{events.TypeResourceFailed}})
		require.NoError(t, err)
		failed := events.ResourceFailed{Meta: events.Meta{Time: events.Now(), CorrelationID: "c1"}, Key: greetKey, Attempt: 2, Error: "boom"}
		f.Publish(
			events.ResourceFailed{Meta: failed.Meta, Key: events.NewKey("MCPServer", "", "greet"), Attempt: 1},
			failed,
		)
		ev, err := s.Next()
		require.NoError(t, err)
		assert.Equal(t, events.TypeResourceFailed, ev.Type)
		assert.Equal(t, failed, ev.Event)
		data, _ := events.Marshal(failed)
		assert.JSONEq(t, string(data), string(ev.Data))

		require.NoError(t, s.Close())
		_, err = s.Next()
		assert.ErrorIs(t, err, context.Canceled)
		synctest.Wait()
		for _, h := range f.Bus.Stats().Handlers {
			assert.NotContains(t, h.Subscriber, "api-events", "Close ends the server's subscription")
		}
	})
}

func TestEventsReadsTheServerSentEventsFormat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leader := events.BecameLeader{Meta: events.Meta{Time: events.Now(), CorrelationID: "c1"}, Identity: "pod-1"}
		data, err := events.Marshal(leader)
		require.NoError(t, err)
		url, hc := apitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			assert.Equal(t, "kind=MCPServer&name=git&namespace=ns&type=A%2CB", r.URL.RawQuery)
			io.WriteString(w, ": heartbeat\n\n"+
				"event: BecameLeader\r\ndata: "+string(data)+"\r\n\r\n"+
				": dropped 7\n\n"+
				"event: Custom\ndata: {\"type\":\"Custom\",\n"+
				"data: \"event\":{}}\n\n"+
				"data: "+string(data)+"\n\n"+
				"event: BecameLeader\ndata: {\"type\":\"BecameLeader\",\"event\":{\"unknown\":1}}\n\n")
		}))
		c, err := client.New(url, "", hc)
		require.NoError(t, err)
		s, err := c.Events(context.Background(), types.EventFilter{Kind: "MCPServer", Namespace: "ns", Name: "git", Types: []string{"A", "B"}})
		require.NoError(t, err)
		defer s.Close()

		ev, err := s.Next()
		require.NoError(t, err)
		assert.Equal(t, client.Event{Type: "BecameLeader", Event: leader, Data: data}, ev, "CRLF line ends are read too")
		ev, err = s.Next()
		require.NoError(t, err)
		assert.Equal(t, client.Event{Dropped: 7}, ev)
		ev, err = s.Next()
		require.NoError(t, err)
		assert.Equal(t, client.Event{Type: "Custom", Data: json.RawMessage("{\"type\":\"Custom\",\n\"event\":{}}")}, ev,
			"a type this program does not know comes raw; data lines join with newlines")
		ev, err = s.Next()
		require.NoError(t, err)
		assert.Equal(t, client.Event{Type: "BecameLeader", Event: leader, Data: data}, ev, "without an event field, the envelope names the type")
		_, err = s.Next()
		assert.ErrorContains(t, err, `event stream: events: decode BecameLeader: json: unknown field "unknown"`)
		_, err = s.Next()
		assert.ErrorIs(t, err, io.EOF)
	})
}
