package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/resources"
)

// reconciling declares greet and starts its reconcile.
func reconciling(t *testing.T) *apitest.Fixture {
	f := apitest.New(t, nil)
	f.Declare("workflows/greet.yaml", greetWorkflow)
	f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1})
	return f
}

func TestCLIWaitExitsZeroTheMomentTheResourceIsSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		start := time.Now()
		done := startCLI(f, nil, nil, "wait", "wf/greet", "--for", "synced", "--timeout", "30s")
		synctest.Wait()
		time.Sleep(3 * time.Second)
		f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, done())
		assert.Equal(t, 3*time.Second, time.Since(start), "it reacts to the event, it does not poll")
	})
}

func TestCLIWaitSucceedsAtOnceWhenTheConditionHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := reconciling(t)
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, runCLI(f, "wait", "workflow", "greet"))
	})
}

func TestCLIWaitTimesOutWithExitOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := reconciling(t)
		start := time.Now()
		assert.Equal(t, result{code: 1, stderr: "musterd: timed out after 5s waiting for workflows/default/greet to be Synced; it is Reconciling\n"},
			runCLI(f, "wait", "wf/greet", "--timeout", "5s"))
		assert.Equal(t, 5*time.Second, time.Since(start))

		assert.Equal(t, result{code: 1, stderr: "musterd: timed out after 1m0s waiting for workflows/default/nope to be Synced; it does not exist\n"},
			runCLI(f, "wait", "wf/nope", "--timeout", "1m"))
		assert.Equal(t, 65*time.Second, time.Since(start))
	})
}

func TestCLIWaitForSyncedFailsAtOnceWhenTheResourceCannotGetThere(t *testing.T) {
	for name, c := range map[string]struct {
		failure events.ResourceFailed
		stderr  string
	}{
		"retries used up": {
			events.ResourceFailed{Key: greetKey, Attempt: 5, Error: "connection refused"},
			"musterd: workflows/default/greet is Failed, its retries used up: connection refused\n",
		},
		"permanent error": {
			events.ResourceFailed{Key: greetKey, Attempt: 1, Permanent: true, Error: "workflows/greet.yaml:7: bad"},
			"musterd: workflows/default/greet is in Error with no retry scheduled: workflows/greet.yaml:7: bad\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := reconciling(t)
				start := time.Now()
				done := startCLI(f, nil, nil, "wait", "wf/greet", "--timeout", "30s")
				synctest.Wait()
				time.Sleep(2 * time.Second)
				c.failure.Meta = meta("c1")
				f.Publish(c.failure)
				assert.Equal(t, result{code: 1, stderr: c.stderr}, done())
				assert.Equal(t, 2*time.Second, time.Since(start), "not at the timeout")
			})
		})
	}
}

func TestCLIWaitForSyncedOutlastsAnErrorThatWillBeRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := reconciling(t)
		done := startCLI(f, nil, nil, "wait", "wf/greet")
		synctest.Wait()
		f.Publish(events.ResourceFailed{Meta: meta("c1"), Key: greetKey, Attempt: 1, Error: "busy", NextRetry: time.Now().Add(time.Second)})
		time.Sleep(time.Second)
		f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 2})
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 2})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, done())
	})
}

// The state read first may predate an edit made just before wait ran: a
// broken file just fixed must not fail the wait for synced.
func TestCLIWaitForSyncedDoesNotFailOnTheStateItFindsFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := reconciling(t)
		f.Publish(events.ResourceFailed{Meta: meta("c1"), Key: greetKey, Attempt: 1, Permanent: true, Error: "broken"})
		done := startCLI(f, nil, nil, "wait", "wf/greet")
		synctest.Wait()
		f.Declare("workflows/greet.yaml", strings.Replace(greetWorkflow, "Say hello", "Say hello again", 1))
		f.Publish(events.ReconciliationStarted{Meta: meta("c2"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: meta("c2"), Key: greetKey, Attempt: 1})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, done())

		f.Publish(events.ResourceFailed{Meta: meta("c3"), Key: greetKey, Attempt: 1, Permanent: true, Error: "broken"})
		assert.Equal(t, result{code: 1, stderr: "musterd: timed out after 3s waiting for workflows/default/greet to be Synced; it is Error: broken\n"},
			runCLI(f, "wait", "wf/greet", "--timeout", "3s"), "a resource that stays failed times out")
	})
}

func TestCLIWaitForTheOtherConditions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := reconciling(t)
		errored := startCLI(f, nil, nil, "wait", "wf/greet", "--for", "error")
		failed := startCLI(f, nil, nil, "wait", "wf/greet", "--for=Failed")
		deleted := startCLI(f, nil, nil, "wait", "wf/greet", "--for", "deleted")
		synctest.Wait()
		f.Publish(events.ResourceFailed{Meta: meta("c1"), Key: greetKey, Attempt: 1, Error: "busy", NextRetry: time.Now().Add(time.Second)})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Error\n"}, errored())
		f.Publish(events.ResourceFailed{Meta: meta("c1"), Key: greetKey, Attempt: 2, Error: "busy"})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Failed\n"}, failed())
		f.Remove("workflows/greet.yaml")
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is deleted\n"}, deleted())
	})
}

func TestCLIWaitForAResourceNotDeclaredYet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		done := startCLI(f, nil, nil, "wait", "wf/greet")
		synctest.Wait()
		f.Declare("workflows/greet.yaml", greetWorkflow)
		f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, done())
	})
}

func TestCLIWaitInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := reconciling(t)
		ctx, interrupt := context.WithCancel(context.Background())
		done := startCLI(f, ctx, nil, "wait", "wf/greet")
		synctest.Wait()
		interrupt()
		assert.Equal(t, result{code: 1, stderr: "musterd: interrupted while waiting for workflows/default/greet to be Synced\n"}, done())
	})
}

func TestCLIEventsPrintsWhatArrivesWithinTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		start := time.Now()
		done := startCLI(f, nil, nil, "events")
		synctest.Wait()
		time.Sleep(1500 * time.Millisecond)
		retry := time.Now().Add(4 * time.Second)
		var keys []events.TriggeredKey
		for _, name := range []string{"a", "b", "c", "d", "e"} {
			keys = append(keys, events.TriggeredKey{Key: events.NewKey("Workflow", "", name), CorrelationID: "c1"})
		}
		for _, e := range []events.Event{
			events.IndexSynchronized{Meta: meta("c0"), Source: events.SourceFilesystem},
			events.ReconciliationTriggered{Meta: meta("c1"), Reason: events.ReasonIndexSynced, Keys: events.NewTriggeredKeys(keys...)},
			events.ReconciliationTriggered{Meta: meta("c1"), Reason: events.ReasonManual, Keys: events.NewTriggeredKeys(keys[0])},
			events.ResourceSynced{Meta: meta("c2"), Key: gitKey, Attempt: 1, Duration: 3 * time.Millisecond, RequeueAfter: time.Minute},
			events.ResourceFailed{Meta: meta("c3"), Key: searchKey, Attempt: 2, Duration: time.Second, Error: "refused", NextRetry: retry},
			events.ResourceSynced{Meta: meta("c4"), Key: searchKey, Attempt: 1, Deleted: true},
			events.StatusSyncFailed{Meta: meta("c5"), Key: gitKey, Category: "other", Attempt: 1, Error: "disk full"},
			events.ServiceStateChanged{Meta: meta("c6"), Key: gitKey, State: "Running", PreviousState: "Starting"},
			events.BecameLeader{Meta: meta("c7"), Identity: "pod-1"},
		} {
			f.Publish(e)
		}
		assert.Equal(t, result{code: 0, stdout: `2000-01-01T00:00:01.500Z  IndexSynchronized        -  source=filesystem
2000-01-01T00:00:01.500Z  ReconciliationTriggered  -  reason=index-synced keys=workflows/default/a,workflows/default/b,workflows/default/c,…(2 more)
2000-01-01T00:00:01.500Z  ReconciliationTriggered  -  reason=manual keys=workflows/default/a
2000-01-01T00:00:01.500Z  ResourceSynced           mcpservers/default/git  attempt=1 duration=3ms requeueAfter=1m0s
2000-01-01T00:00:01.500Z  StatusSynced             mcpservers/default/git  category=written
2000-01-01T00:00:01.500Z  ResourceFailed           mcpservers/team-a/search  attempt=2 duration=1s nextRetry=2000-01-01T00:00:05Z error="refused"
2000-01-01T00:00:01.500Z  StatusSynced             mcpservers/team-a/search  category=written
2000-01-01T00:00:01.500Z  ResourceSynced           mcpservers/team-a/search  attempt=1 duration=0s deleted=true
2000-01-01T00:00:01.500Z  StatusSynced             mcpservers/team-a/search  category=deleted
2000-01-01T00:00:01.500Z  StatusSyncFailed         mcpservers/default/git  category=other attempt=1 error="disk full"
2000-01-01T00:00:01.500Z  ServiceStateChanged      mcpservers/default/git  state=Running previous=Starting
2000-01-01T00:00:01.500Z  BecameLeader             -  identity=pod-1
`}, done())
		assert.Equal(t, 2*time.Second, time.Since(start), "it prints for --for, 2s by default")
	})
}

func TestCLIEventsFollowsWithFiltersUntilInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		ctx, interrupt := context.WithCancel(context.Background())
		done := startCLI(f, ctx, nil, "events", "-f", "--kind", "wf", "--name", "greet", "--type", "ResourceSynced,ResourceFailed")
		synctest.Wait()
		for range 3 {
			time.Sleep(time.Minute)
			f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1})
			f.Publish(events.ResourceFailed{Meta: meta("c1"), Key: gitKey, Attempt: 1, Permanent: true, Error: "bad"})
			f.Publish(events.ResourceFailed{Meta: meta("c1"), Key: greetKey, Attempt: 1, Permanent: true, Error: "bad"})
		}
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		interrupt()
		assert.Equal(t, result{code: 0, stdout: `2000-01-01T00:01:00.000Z  ResourceFailed           workflows/default/greet  attempt=1 duration=0s permanent=true error="bad"
2000-01-01T00:02:00.000Z  ResourceFailed           workflows/default/greet  attempt=1 duration=0s permanent=true error="bad"
2000-01-01T00:03:00.000Z  ResourceFailed           workflows/default/greet  attempt=1 duration=0s permanent=true error="bad"
2000-01-01T00:03:00.000Z  ResourceSynced           workflows/default/greet  attempt=1 duration=0s
`}, done())
	})
}

func TestCLIReconcileTriggersWithTheToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, func(o *api.Options) { o.Token = "t0ken" })
		f.Declare("workflows/greet.yaml", greetWorkflow)
		assert.Equal(t, result{code: 1, stderr: "musterd: a valid bearer token is required to trigger a reconcile\n"},
			runCLI(f, "reconcile", "wf/greet"))
		assert.Empty(t, f.Triggered())

		ok := result{code: 0, stdout: "workflows/default/greet: reconcile triggered\n"}
		assert.Equal(t, ok, runCLI(f, "reconcile", "wf/greet", "--token", "t0ken"))
		assert.Equal(t, ok, startCLI(f, nil, map[string]string{envServer: f.URL, envToken: "t0ken"}, "reconcile", "wf", "greet")())
		assert.Equal(t, []events.Key{greetKey, greetKey}, f.Triggered())

		assert.Equal(t, result{code: 1, stderr: "musterd: workflows/default/nope: not found\n"}, runCLI(f, "reconcile", "wf/nope", "--token", "t0ken"))
	})
}

func TestCLIGetOfAMissingResourceExitsOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		assert.Equal(t, result{code: 1, stderr: "musterd: workflows/team-a/nope: not found\n"}, runCLI(f, "get", "wf/nope", "-n", "team-a"))
	})
}

func TestCLIServerFlagOverridesTheEnvironment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		env := map[string]string{envServer: "ftp://nowhere"}
		assert.Equal(t, 0, startCLI(f, nil, env, "get", "--server", f.URL)().code)
		r := startCLI(f, nil, env, "get")()
		assert.Equal(t, 2, r.code)
		assert.Equal(t, "musterd get: --server: server address \"ftp://nowhere\": want http://host:port or https://host:port\nRun \"musterd get -h\" for usage.\n", r.stderr)
	})
}

func TestCLIUsageErrorsExitTwo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		for _, c := range []struct {
			args []string
			msg  string
		}{
			{[]string{"get", "pods"}, `unknown kind "pods": valid kinds are mcpservers (mcpserver, mcps), workflows (workflow, wf)`},
			{[]string{"get", "-o", "xml"}, `-o must be table, json or yaml, not "xml"`},
			{[]string{"get", "wf", "a", "b"}, `unexpected argument "b"`},
			{[]string{"describe"}, `name a resource: KIND/NAME or KIND NAME`},
			{[]string{"describe", "wf"}, `name a resource: KIND/NAME or KIND NAME`},
			{[]string{"reconcile", "wf/a/b"}, `invalid resource "wf/a/b": want KIND/NAME`},
			{[]string{"reconcile", "wf/"}, `invalid resource "wf/": want KIND/NAME`},
			{[]string{"wait", "wf/greet", "--for", "ready"}, `--for must be synced, error, failed or deleted, not "ready"`},
			{[]string{"wait", "wf/greet", "--timeout", "0s"}, `--timeout must be positive, not 0s`},
			{[]string{"events", "extra"}, `unexpected argument "extra"`},
			{[]string{"events", "--kind", "pods"}, `--kind: unknown kind "pods": valid kinds are mcpservers (mcpserver, mcps), workflows (workflow, wf)`},
			{[]string{"events", "--for", "0s"}, `--for must be positive, not 0s`},
		} {
			want := "musterd " + c.args[0] + ": " + c.msg + "\nRun \"musterd " + c.args[0] + " -h\" for usage.\n"
			assert.Equal(t, result{code: 2, stderr: want}, runCLI(f, c.args...), c.args)
		}

		r := runCLI(f, "get", "--bogus")
		assert.Equal(t, 2, r.code)
		assert.True(t, strings.HasPrefix(r.stderr, "flag provided but not defined: -bogus\nUsage: musterd get [KIND [NAME]]"), r.stderr)

		r = runCLI(f, "wait", "-h")
		assert.Equal(t, 0, r.code)
		assert.True(t, strings.HasPrefix(r.stderr, "Usage: musterd wait KIND/NAME [-n NAMESPACE] [--for synced|error|failed|deleted] [--timeout DURATION]\n"), r.stderr)
	})
}

func TestRunDispatchesTheClientCommands(t *testing.T) {
	for _, name := range []string{"get", "describe", "reconcile", "events", "wait"} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, run([]string{name, "-h"}, &stdout, &stderr), name)
		assert.Contains(t, stderr.String(), "Usage: musterd "+name, name)
		assert.Equal(t, 2, run([]string{name, "pods/x"}, &stdout, &stderr), name)
	}
}

func TestCLIEventsReportsEventsTheDaemonDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		leader, err := events.Marshal(events.BecameLeader{Meta: meta("c1"), Identity: "pod-1"})
		if err != nil {
			t.Fatal(err)
		}
		url, hc := apitest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, ": dropped 3\n\nevent: BecameLeader\ndata: %s\n\n", leader)
		}))
		var stdout, stderr bytes.Buffer
		c := &cli{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }, http: hc}
		assert.Equal(t, 1, c.run(context.Background(), "events", []string{"-f", "--server", url}))
		assert.Equal(t, "2000-01-01T00:00:00.000Z  BecameLeader             -  identity=pod-1\n", stdout.String())
		assert.Equal(t, "musterd: the daemon dropped 3 events of this stream: it was read too slowly\n"+
			"musterd: the daemon ended the event stream\n", stderr.String())
	})
}

// Right after an edit the index holds the new definition while the store,
// which the edit's ResourceChanged has not reached yet, still says Synced:
// of the definition before. wait --for synced must wait for the edit's own
// reconcile.
func TestCLIWaitForSyncedWaitsForTheEditTheIndexHoldsNotAnEarlierSynced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		before, _ := f.Index.Get(greetKey)
		f.Publish(events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1, Hash: before.Hash})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, runCLI(f, "wait", "wf/greet"))

		// The edit reaches the index only, as the watcher's read does first.
		edited := strings.Replace(greetWorkflow, "Say hello", "Say hello again", 1)
		docs, err := v1alpha1.DecodeFile("workflows/greet.yaml", []byte(edited))
		assert.NoError(t, err)
		f.Index.SetFile("workflows/greet.yaml", []resources.Doc{{Key: docs[0].Key(), Object: docs[0].Object, Hash: docs[0].Hash}}, nil, greetKey)
		after, _ := f.Index.Get(greetKey)
		assert.NotEqual(t, before.Hash, after.Hash)

		assert.Equal(t, result{code: 1, stderr: "musterd: timed out after 1s waiting for workflows/default/greet to be Synced; it is Synced with an earlier definition than the one in force\n"},
			runCLI(f, "wait", "wf/greet", "--timeout", "1s"))

		start := time.Now()
		done := startCLI(f, nil, nil, "wait", "wf/greet", "--timeout", "30s")
		synctest.Wait()
		time.Sleep(2 * time.Second)
		f.Publish(events.ReconciliationStarted{Meta: meta("c2"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: meta("c2"), Key: greetKey, Attempt: 1, Hash: after.Hash})
		assert.Equal(t, result{code: 0, stdout: "workflows/default/greet is Synced\n"}, done())
		assert.Equal(t, 2*time.Second, time.Since(start), "it returned on the edit's Synced, not before")
	})
}
