package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/eventtrace"
)

// stream is an open event stream read as raw server-sent events.
type stream struct {
	header http.Header
	r      *bufio.Reader
	cancel context.CancelFunc
}

func openStream(t *testing.T, f *apitest.Fixture, query string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.URL+"/api/v1/events"+query, nil)
	require.NoError(t, err)
	resp, err := f.HTTP.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	t.Cleanup(func() { resp.Body.Close() })
	return &stream{header: resp.Header, r: bufio.NewReader(resp.Body), cancel: cancel}
}

// next reads one block: an event or a comment, up to its blank line.
func (s *stream) next(t *testing.T) string {
	t.Helper()
	var block strings.Builder
	for {
		line, err := s.r.ReadString('\n')
		require.NoError(t, err)
		block.WriteString(line)
		if line == "\n" {
			return block.String()
		}
	}
}

// summary reads n events and spells each as "Type key".
func (s *stream) summary(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		block := s.next(t)
		_, data, ok := strings.Cut(block, "\ndata: ")
		require.True(t, ok, block)
		e, err := events.Unmarshal([]byte(strings.TrimSpace(data)))
		require.NoError(t, err)
		key := "-"
		if k, ok := e.(events.Keyed); ok {
			key = k.ResourceKey().String()
		}
		out = append(out, e.EventType()+" "+key)
	}
	return out
}

func subscribers(f *apitest.Fixture) []string {
	var names []string
	for _, h := range f.Bus.Stats().Handlers {
		if strings.HasPrefix(h.Subscriber, "api-events-") {
			names = append(names, h.Subscriber)
		}
	}
	return names
}

func TestEventStreamSendsEachEventAsOneServerSentEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "")
		assert.Equal(t, "text/event-stream", s.header.Get("Content-Type"))
		f.Publish(events.BecameLeader{Meta: meta("c1"), Identity: "pod-1"})
		assert.Equal(t, "event: BecameLeader\n"+
			`data: {"type":"BecameLeader","event":{"time":"2000-01-01T00:00:00Z","correlationId":"c1","identity":"pod-1"}}`+"\n\n",
			s.next(t))
	})
}

func TestEventStreamFiltersByKindNamespaceNameAndType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		greet := openStream(t, f, "?kind=workflows&namespace=team-a&name=greet")
		outcomes := openStream(t, f, "?type=ResourceSynced,ResourceFailed")
		servers := openStream(t, f, "?kind=mcps")
		all := openStream(t, f, "")

		for _, e := range []events.Event{
			events.IndexSynchronized{Meta: meta("c0"), Source: events.SourceFilesystem},
			events.ReconciliationTriggered{Meta: meta("c1"), Reason: events.ReasonChange, Keys: events.NewTriggeredKeys(
				events.TriggeredKey{Key: gitKey, CorrelationID: "c1"}, events.TriggeredKey{Key: greetKey, CorrelationID: "c1"})},
			events.ReconciliationStarted{Meta: meta("c1"), Key: gitKey, Attempt: 1},
			events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1},
			events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1},
			events.ResourceFailed{Meta: meta("c1"), Key: gitKey, Attempt: 1, Error: "boom"},
			events.ReconciliationStarted{Meta: meta("c2"), Key: events.NewKey("Workflow", "", "greet"), Attempt: 1},
		} {
			f.Publish(e) // one at a time: the store's StatusSynced follows each of its events
		}
		assert.Equal(t, []string{
			"ReconciliationTriggered -",
			"ReconciliationStarted Workflow/team-a/greet",
			"StatusSynced Workflow/team-a/greet",
			"ResourceSynced Workflow/team-a/greet",
			"StatusSynced Workflow/team-a/greet",
		}, greet.summary(t, 5))
		assert.Equal(t, []string{
			"ResourceSynced Workflow/team-a/greet",
			"ResourceFailed MCPServer/default/git",
		}, outcomes.summary(t, 2))
		assert.Equal(t, []string{
			"ReconciliationTriggered -",
			"ReconciliationStarted MCPServer/default/git",
			"StatusSynced MCPServer/default/git",
			"ResourceFailed MCPServer/default/git",
			"StatusSynced MCPServer/default/git",
		}, servers.summary(t, 5))
		assert.Len(t, all.summary(t, 12), 12, "without a filter, every event: 7 published, 5 StatusSynced")

		// Nothing else was sent: the next block of each is the heartbeat.
		for _, s := range []*stream{greet, outcomes, servers, all} {
			assert.Equal(t, ": heartbeat\n\n", s.next(t))
		}
	})
}

func TestEventStreamRejectsAnUnknownEventType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		code, body := get(t, f, "/api/v1/events?type=ResourceSynced,Synced")
		assert.Equal(t, http.StatusBadRequest, code)
		assert.JSONEq(t, `{"error":"unknown event type \"Synced\": valid types are `+strings.Join(events.Types(), ", ")+`"}`, body)
		assert.Empty(t, subscribers(f))
	})
}

func TestEventStreamSendsAHeartbeatEvery15Seconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "")
		start := time.Now()
		assert.Equal(t, ": heartbeat\n\n", s.next(t))
		assert.Equal(t, 15*time.Second, time.Since(start))
		time.Sleep(5 * time.Second)
		f.Publish(events.BecameLeader{Meta: meta("c1"), Identity: "pod-1"})
		assert.Equal(t, []string{"BecameLeader -"}, s.summary(t, 1))
		assert.Equal(t, ": heartbeat\n\n", s.next(t))
		assert.Equal(t, 30*time.Second, time.Since(start), "the heartbeat keeps its period")
	})
}

func TestEventStreamSubscriptionEndsWhenTheClientGoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		first := openStream(t, f, "")
		second := openStream(t, f, "?kind=wf")
		assert.Equal(t, []string{"api-events-1", "api-events-2"}, subscribers(f), "one subscription per client, each named apart")

		first.cancel()
		synctest.Wait()
		assert.Equal(t, []string{"api-events-2"}, subscribers(f))
		second.cancel()
		synctest.Wait()
		assert.Empty(t, subscribers(f))
	})
}

func TestEventStreamEndsWhenTheBusCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "")
		f.Bus.Close()
		_, err := s.r.ReadString('\n')
		assert.ErrorIs(t, err, io.EOF)
	})
}

func TestEventStreamHeadSubscribesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		code, header, body := call(t, f, http.MethodHead, "/api/v1/events", nil)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "text/event-stream", header.Get("Content-Type"))
		assert.Empty(t, body)
		assert.Empty(t, subscribers(f))
	})
}

// floodUnreadStream publishes n BecameLeader events, correlation IDs 0 to
// n-1, to a stream nobody reads, and returns once the stream's writer is
// stuck on the unread connection. After the first ten it waits: the writer
// has taken a first batch before any drop and is stuck sending it, so the
// stream holds at least that batch whatever the scheduler does with the
// burst that follows.
func floodUnreadStream(f *apitest.Fixture, n int) {
	const firstBatch = 10
	for i := range n {
		f.Bus.Publish(events.BecameLeader{Meta: meta(fmt.Sprint(i)), Identity: "pod"})
		if i == firstBatch-1 {
			synctest.Wait()
		}
	}
	synctest.Wait()
}

func TestEventStreamOfASlowClientDropsCountsAndAnnounces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "")
		const published = 3000
		floodUnreadStream(f, published)

		delivered, announced := 0, 0
		var order []int
		for delivered+announced < published {
			block := s.next(t)
			if n, ok := strings.CutPrefix(block, ": dropped "); ok {
				var dropped int
				_, err := fmt.Sscanf(n, "%d", &dropped)
				require.NoError(t, err)
				announced += dropped
				continue
			}
			require.True(t, strings.HasPrefix(block, "event: BecameLeader\n"), block)
			_, data, _ := strings.Cut(block, `"correlationId":"`)
			var i int
			_, err := fmt.Sscanf(data, "%d", &i)
			require.NoError(t, err)
			order = append(order, i)
			delivered++
		}
		assert.Equal(t, published, delivered+announced)
		assert.Positive(t, announced, "a client that does not read loses events")
		assert.True(t, slices.IsSorted(order), "what is delivered keeps its order")
		var counted uint64
		for _, h := range f.Bus.Stats().Handlers {
			if h.Subscriber == "api-events-1" {
				counted += h.Dropped
			}
		}
		assert.Equal(t, uint64(announced), counted, "the announcement is the bus's count")
	})
}

func TestEventStreamOfAClientThatStopsReadingEndsAfterAMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		openStream(t, f, "") // never read
		for i := range 500 {
			f.Bus.Publish(events.BecameLeader{Meta: meta(fmt.Sprint(i)), Identity: "pod"})
		}
		synctest.Wait() // the write is stuck
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, []string{"api-events-1"}, subscribers(f))
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, subscribers(f), "the stalled write timed out and the subscription ended")
	})
}

// traceLines reads n lines of a trace stream, header included.
func (s *stream) traceLines(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		line, err := s.r.ReadString('\n')
		require.NoError(t, err)
		out = append(out, line)
	}
	return out
}

func TestEventStreamAsATraceHasAHeaderThenTheFilteredEventsAtTheirOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "?format=trace&kind=workflows")
		assert.Equal(t, "application/jsonl", s.header.Get("Content-Type"))
		header := s.traceLines(t, 1)

		time.Sleep(1500 * time.Millisecond)
		f.Publish(events.BecameLeader{Meta: meta("c0"), Identity: "pod-1"}) // filtered out
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		time.Sleep(time.Second)
		f.Publish(events.ResourceFailed{Meta: meta("c2"), Key: greetKey, Attempt: 1, Error: "boom"})
		lines := append(header, s.traceLines(t, 4)...)

		assert.Equal(t, []string{
			`{"format":"musterd-trace","version":2,"musterd":"","start":"2000-01-01T00:00:00Z"}` + "\n",
			`{"at":1500000000,"type":"ResourceSynced","correlationId":"c1","event":{"time":"2000-01-01T00:00:01.5Z","correlationId":"c1","key":{"kind":"Workflow","namespace":"team-a","name":"greet"},"attempt":1,"duration":0}}` + "\n",
			`{"at":1500000000,"type":"StatusSynced","correlationId":"c1","event":{"time":"2000-01-01T00:00:01.5Z","correlationId":"c1","key":{"kind":"Workflow","namespace":"team-a","name":"greet"},"category":"written"}}` + "\n",
			`{"at":2500000000,"type":"ResourceFailed","correlationId":"c2","event":{"time":"2000-01-01T00:00:02.5Z","correlationId":"c2","key":{"kind":"Workflow","namespace":"team-a","name":"greet"},"error":"boom","attempt":1,"duration":0}}` + "\n",
			`{"at":2500000000,"type":"StatusSynced","correlationId":"c2","event":{"time":"2000-01-01T00:00:02.5Z","correlationId":"c2","key":{"kind":"Workflow","namespace":"team-a","name":"greet"},"category":"written"}}` + "\n",
		}, lines)
		tr, err := eventtrace.Read(strings.NewReader(strings.Join(lines, "")))
		require.NoError(t, err, "what the stream sends is a trace")
		assert.Len(t, tr.Entries, 4)

		time.Sleep(time.Minute)
		f.Publish(events.ResourceSynced{Meta: meta("c3"), Key: greetKey, Attempt: 2})
		assert.Contains(t, s.traceLines(t, 1)[0], `"correlationId":"c3"`, "no heartbeat comes between events: JSON Lines have none")
	})
}

func TestEventStreamRejectsAnUnknownFormat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		code, body := get(t, f, "/api/v1/events?format=xml")
		assert.Equal(t, http.StatusBadRequest, code)
		assert.JSONEq(t, `{"error":"unknown format \"xml\": use sse or trace"}`, body)
		assert.Empty(t, subscribers(f))
	})
}

func TestTraceStreamOfASlowClientEndsBeforeTheGap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "?format=trace")
		const published = 3000
		floodUnreadStream(f, published)

		body, err := io.ReadAll(s.r)
		require.NoError(t, err, "the stream ends")
		tr, err := eventtrace.Read(strings.NewReader(string(body)))
		require.NoError(t, err, "what was sent is a whole trace")
		require.NotEmpty(t, tr.Entries)
		assert.Less(t, len(tr.Entries), published, "a client that does not read loses the rest")
		for i, e := range tr.Entries {
			require.Equal(t, fmt.Sprint(i), e.Event.Metadata().CorrelationID, "no event missing before the end")
		}
		require.NotNil(t, tr.End, "the end line says why the stream ended")
		assert.Equal(t, eventtrace.EndSlowClient, tr.End.Reason)
		assert.Positive(t, tr.End.Dropped)
		assert.LessOrEqual(t, tr.End.Dropped, uint64(published-len(tr.Entries)))
		synctest.Wait()
		assert.Empty(t, subscribers(f))
	})
}

func TestTraceStreamEndsWithAShutdownLineWhenTheDaemonStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		s := openStream(t, f, "?format=trace")
		s.traceLines(t, 1) // the header
		time.Sleep(time.Second)
		f.Publish(events.BecameLeader{Meta: meta("c1"), Identity: "pod-1"})
		s.traceLines(t, 1)
		time.Sleep(time.Second)
		f.Bus.Close()
		assert.Equal(t, []string{`{"end":"shutdown","at":2000000000,"dropped":0}` + "\n"}, s.traceLines(t, 1))
		_, err := s.r.ReadString('\n')
		assert.ErrorIs(t, err, io.EOF, "nothing after the end line")
	})
}
