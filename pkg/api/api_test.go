package api_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api"
	"github.com/musterd/musterd/pkg/api/apitest"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/lifecycle"
	"github.com/musterd/musterd/pkg/resources"
)

const gitServer = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git
  labels: {team: tools}
spec:
  type: stdio
  command: mcp-git
  env:
    GITHUB_TOKEN: ghp_0123456789abcdef
`

const greetWorkflow = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: greet
  namespace: team-a
spec:
  steps:
    - id: hello
      tool: echo
`

var (
	gitKey   = events.NewKey(v1alpha1.KindMCPServer, "", "git")
	greetKey = events.NewKey(v1alpha1.KindWorkflow, "team-a", "greet")
)

func meta(correlationID string) events.Meta {
	return events.Meta{Time: events.Now(), CorrelationID: correlationID}
}

// call makes one request and returns the status code, headers and body.
func call(t *testing.T, f *apitest.Fixture, method, path string, header http.Header) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, f.URL+path, nil)
	require.NoError(t, err)
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := f.HTTP.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, string(body)
}

func get(t *testing.T, f *apitest.Fixture, path string) (int, string) {
	t.Helper()
	code, _, body := call(t, f, http.MethodGet, path, nil)
	return code, body
}

func TestNewHandlerNamesMissingOptions(t *testing.T) {
	_, err := api.NewHandler(api.Options{Index: resources.New()})
	assert.EqualError(t, err, "api: options Bus, Ready, Statuses, Trigger are required")
}

func TestObjectShowsSpecStatusReconcileStateAndFiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		f.SetResourceStatus(greetKey, v1alpha1.WorkflowStatus{Valid: true, StepCount: 1, ReferencedTools: []string{"echo"}})
		time.Sleep(3 * time.Second)
		f.Publish(
			events.ReconciliationStarted{Meta: meta("c1"), Key: greetKey, Attempt: 1},
			events.ResourceSynced{Meta: meta("c1"), Key: greetKey, Attempt: 1, Duration: time.Millisecond, Hash: "sha256:observed"},
		)

		code, body := get(t, f, "/api/v1/resources/workflows/team-a/greet")
		assert.Equal(t, http.StatusOK, code)
		entry, _ := f.Index.Get(greetKey)
		assert.Equal(t, `{
  "apiVersion": "muster.giantswarm.io/v1alpha1",
  "kind": "Workflow",
  "metadata": {
    "name": "greet",
    "namespace": "team-a",
    "hash": "`+entry.Hash+`"
  },
  "spec": {
    "steps": [
      {
        "id": "hello",
        "tool": "echo"
      }
    ]
  },
  "status": {
    "valid": true,
    "referencedTools": [
      "echo"
    ],
    "stepCount": 1
  },
  "reconcile": {
    "state": "Synced",
    "lastReconcileTime": "2000-01-01T00:00:03Z",
    "retryCount": 0,
    "correlationID": "c1",
    "observedHash": "sha256:observed"
  },
  "files": [
    "workflows/greet.yaml"
  ]
}
`, body)
	})
}

func TestObjectBeforeItsFirstReconcileIsPendingWithoutStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		code, body := get(t, f, "/api/v1/resources/workflows/team-a/greet")
		assert.Equal(t, http.StatusOK, code)
		entry, _ := f.Index.Get(greetKey)
		assert.JSONEq(t, `{"apiVersion":"muster.giantswarm.io/v1alpha1","kind":"Workflow",
			"metadata":{"name":"greet","namespace":"team-a","hash":"`+entry.Hash+`"},
			"spec":{"steps":[{"id":"hello","tool":"echo"}]},
			"reconcile":{"state":"Pending","retryCount":0,"correlationID":"change-1"},
			"files":["workflows/greet.yaml"]}`, body)
	})
}

func TestSecretsOfMCPServersNeverReachTheAPI(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("mcpservers/git.yaml", gitServer)
		f.Declare("mcpservers/remote.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata: {name: remote}
spec:
  type: streamable-http
  url: https://deploy:hunter2@mcp.example.com/mcp?api_key=k3y
  headers:
    Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0
    X-Tenant: acme
`)
		f.Declare("mcpservers/cli.yaml", `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata: {name: cli}
spec:
  type: stdio
  command: mcp-cli
  args: ["--token", "sk-argtoken-1", "--api-key=argkey-2", "--port", "8080"]
`)
		for _, path := range []string{"/api/v1/resources", "/api/v1/resources/mcps/default/git", "/api/v1/resources/mcps/default/remote", "/api/v1/resources/mcps/default/cli"} {
			code, body := get(t, f, path)
			require.Equal(t, http.StatusOK, code, path)
			for _, secret := range []string{"ghp_0123456789abcdef", "hunter2", "k3y", "eyJhbGciOiJIUzI1NiJ9", "acme", "sk-argtoken-1", "argkey-2"} {
				assert.NotContains(t, body, secret, path)
			}
		}
		_, body := get(t, f, "/api/v1/resources/mcps/default/remote")
		assert.Contains(t, body, `"headers": {
      "Authorization": "[redacted]",
      "X-Tenant": "[redacted]"
    }`)
		assert.Contains(t, body, `"url": "https://[redacted]@mcp.example.com/mcp?api_key=[redacted]"`)
		_, body = get(t, f, "/api/v1/resources/mcps/default/git")
		assert.Contains(t, body, `"env": {
      "GITHUB_TOKEN": "[redacted]"
    }`)
		assert.Contains(t, body, `"command": "mcp-git"`, "what is not secret is shown")
		_, body = get(t, f, "/api/v1/resources/mcps/default/cli")
		assert.Contains(t, body, `"args": [
      "--token",
      "[redacted]",
      "--api-key=[redacted]",
      "--port",
      "8080"
    ]`)

		entry, _ := f.Index.Get(gitKey)
		assert.Equal(t, "ghp_0123456789abcdef", entry.Object.(*v1alpha1.MCPServer).Spec.Env["GITHUB_TOKEN"],
			"redaction works on a copy; the definition in force is untouched")
	})
}

func TestAMalformedEditKeepsTheLastGoodSpecAndShowsTheError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		lastGood, _ := f.Index.Get(greetKey)
		f.Declare("workflows/greet.yaml", strings.Replace(greetWorkflow, "tool: echo", "tool: echo\n      parallel: []", 1))

		_, body := get(t, f, "/api/v1/resources/wf/team-a/greet")
		assert.JSONEq(t, `{"apiVersion":"muster.giantswarm.io/v1alpha1","kind":"Workflow",
			"metadata":{"name":"greet","namespace":"team-a","hash":"`+lastGood.Hash+`"},
			"spec":{"steps":[{"id":"hello","tool":"echo"}]},
			"reconcile":{"state":"Pending","retryCount":0,"correlationID":"change-2",
				"lastError":"workflows/greet.yaml:8: spec.steps[0]: exactly one of tool, forEach, or parallel must be set, got tool and parallel\nworkflows/greet.yaml:10: spec.steps[0].parallel: must have at least one step"},
			"files":["workflows/greet.yaml"]}`, body)

		f.Publish(events.ResourceFailed{Meta: meta("c3"), Key: greetKey, Attempt: 1, Permanent: true,
			Error: "workflows/greet.yaml:9: invalid; token=abc"})
		_, body = get(t, f, "/api/v1/resources/wf/team-a/greet")
		assert.Contains(t, body, `"lastError": "workflows/greet.yaml:9: invalid; token=[redacted]"`,
			"the reconcile error, as the store redacted it, takes precedence")
	})
}

func TestAFileThatNeverParsedShowsNoSpecAndItsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/broken.yaml", "kind: Workflow\nspec: [\n")
		_, body := get(t, f, "/api/v1/resources/workflows/default/broken")
		assert.JSONEq(t, `{"apiVersion":"muster.giantswarm.io/v1alpha1","kind":"Workflow",
			"metadata":{"name":"broken","namespace":"default"},
			"reconcile":{"state":"Pending","retryCount":0,"correlationID":"change-1",
				"lastError":"workflows/broken.yaml:3: invalid YAML: did not find expected node content"},
			"files":["workflows/broken.yaml"]}`, body)
	})
}

func TestListingIsSortedByKindNamespaceAndNameAndFilters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		workflow := func(ns, name string) string {
			return strings.NewReplacer("greet", name, "team-a", ns).Replace(greetWorkflow)
		}
		f.Declare("workflows/x-in-a-b.yaml", workflow("a-b", "x"))
		f.Declare("workflows/x-in-a.yaml", workflow("a", "x"))
		f.Declare("workflows/w-in-a.yaml", workflow("a", "w"))
		f.Declare("mcpservers/git.yaml", gitServer)

		keys := func(query string) []string {
			code, body := get(t, f, "/api/v1/resources"+query)
			require.Equal(t, http.StatusOK, code, body)
			var list types.List
			require.NoError(t, json.Unmarshal([]byte(body), &list))
			out := []string{}
			for _, o := range list.Items {
				out = append(out, o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name)
			}
			return out
		}
		assert.Equal(t, []string{"MCPServer/default/git", "Workflow/a/w", "Workflow/a/x", "Workflow/a-b/x"}, keys(""))
		assert.Equal(t, []string{"Workflow/a/w", "Workflow/a/x", "Workflow/a-b/x"}, keys("?kind=wf"))
		assert.Equal(t, []string{"Workflow/a/w", "Workflow/a/x", "Workflow/a-b/x"}, keys("?kind=Workflow"))
		assert.Equal(t, []string{"MCPServer/default/git"}, keys("?kind=mcpservers"))
		assert.Equal(t, []string{"Workflow/a/w", "Workflow/a/x"}, keys("?namespace=a"))
		assert.Equal(t, []string{}, keys("?kind=mcps&namespace=a"))
	})
}

// The listing is written one object at a time; it must still be exactly
// what encoding the whole list does (indented, HTML not escaped).
func TestListingIsTheWholeListIndented(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("mcpservers/git.yaml", strings.Replace(gitServer, "team: tools", "team: a&b<c>", 1))
		f.Declare("workflows/greet.yaml", greetWorkflow)
		for query, want := range map[string]int{"": 2, "?kind=wf": 1, "?namespace=none": 0} {
			code, body := get(t, f, "/api/v1/resources"+query)
			require.Equal(t, http.StatusOK, code, body)
			var list types.List
			require.NoError(t, json.Unmarshal([]byte(body), &list))
			require.Len(t, list.Items, want, query)
			var whole strings.Builder
			enc := json.NewEncoder(&whole)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			require.NoError(t, enc.Encode(list))
			assert.Equal(t, whole.String(), body, query)
		}
	})
}

func TestAStatusOfAnUndeclaredResourceIsNotShown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Publish(events.ResourceSynced{Meta: meta("c1"), Key: gitKey, Attempt: 1})
		_, ok := f.Store.Get(gitKey)
		require.True(t, ok, "the store knows the key")

		code, body := get(t, f, "/api/v1/resources")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{"items":[]}`, body)
		code, body = get(t, f, "/api/v1/resources/mcpservers/default/git")
		assert.Equal(t, http.StatusNotFound, code)
		assert.JSONEq(t, `{"error":"mcpservers/default/git: not found"}`, body)
	})
}

func TestKindsGoByTheirAliasesAndAnUnknownKindNamesTheValidOnes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("mcpservers/git.yaml", gitServer)
		_, want := get(t, f, "/api/v1/resources/mcpservers/default/git")
		for _, kind := range []string{"mcpserver", "mcps", "MCPServer", "MCPSERVERS", "Mcps"} {
			code, body := get(t, f, "/api/v1/resources/"+kind+"/default/git")
			assert.Equal(t, http.StatusOK, code, kind)
			assert.Equal(t, want, body, kind)
		}
		const unknown = `{"error":"unknown kind \"pods\": valid kinds are mcpservers (mcpserver, mcps), workflows (workflow, wf)"}`
		for _, path := range []string{"/api/v1/resources/pods/default/git", "/api/v1/resources?kind=pods", "/api/v1/events?kind=pods"} {
			code, body := get(t, f, path)
			assert.Equal(t, http.StatusNotFound, code, path)
			assert.JSONEq(t, unknown, body, path)
		}
		code, _, body := call(t, f, http.MethodPost, "/api/v1/resources/pods/default/git/reconcile", nil)
		assert.Equal(t, http.StatusNotFound, code)
		assert.JSONEq(t, unknown, body)
	})
}

func TestInvalidNamesAreRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		for path, msg := range map[string]string{
			"/api/v1/resources/wf/default/Greet":        `invalid name \"Greet\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			"/api/v1/resources/wf/a.b/greet":            `invalid namespace \"a.b\": must not contain dots`,
			"/api/v1/resources/wf/default/%2E%2E%2Fetc": `invalid name \"../etc\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		} {
			code, body := get(t, f, path)
			assert.Equal(t, http.StatusBadRequest, code, path)
			assert.JSONEq(t, `{"error":"`+msg+`"}`, body, path)
		}
	})
}

func TestOnlyGETHEADAndTheReconcilePOSTAreAllowed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("mcpservers/git.yaml", gitServer)
		for _, c := range []struct{ method, path, allow string }{
			{http.MethodDelete, "/api/v1/resources/mcps/default/git", "GET, HEAD"},
			{http.MethodPut, "/api/v1/resources/mcps/default/git", "GET, HEAD"},
			{http.MethodPost, "/api/v1/resources/mcps/default/git", "GET, HEAD"},
			{http.MethodPost, "/api/v1/resources", "GET, HEAD"},
			{http.MethodPost, "/healthz", "GET, HEAD"},
			{http.MethodPatch, "/metrics", "GET, HEAD"},
			{http.MethodPost, "/api/v1/events", "GET, HEAD"},
			{http.MethodGet, "/api/v1/resources/mcps/default/git/reconcile", "POST"},
		} {
			code, header, body := call(t, f, c.method, c.path, nil)
			assert.Equal(t, http.StatusMethodNotAllowed, code, c)
			assert.Equal(t, c.allow, header.Get("Allow"), c)
			assert.JSONEq(t, `{"error":"method `+c.method+` not allowed on `+c.path+`: use `+c.allow+`"}`, body, c)
		}
		assert.Empty(t, f.Triggered())

		code, header, body := call(t, f, http.MethodHead, "/api/v1/resources/mcps/default/git", nil)
		assert.Equal(t, http.StatusOK, code)
		assert.Equal(t, "application/json", header.Get("Content-Type"))
		assert.Empty(t, body)

		for _, path := range []string{"/", "/api/v1", "/api/v1/resources/mcps/default", "/api/v1/resources/mcps/default/git/x", "/api/v1/status"} {
			code, body := get(t, f, path)
			assert.Equal(t, http.StatusNotFound, code, path)
			assert.JSONEq(t, `{"error":"no such endpoint: `+path+`"}`, body, path)
		}
	})
}

func TestReconcileTriggersADeclaredResource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		code, _, body := call(t, f, http.MethodPost, "/api/v1/resources/wf/team-a/greet/reconcile", nil)
		assert.Equal(t, http.StatusAccepted, code)
		assert.JSONEq(t, `{"key":{"kind":"Workflow","namespace":"team-a","name":"greet"}}`, body)
		assert.Equal(t, []events.Key{greetKey}, f.Triggered())

		code, _, body = call(t, f, http.MethodPost, "/api/v1/resources/wf/default/greet/reconcile", nil)
		assert.Equal(t, http.StatusNotFound, code)
		assert.JSONEq(t, `{"error":"workflows/default/greet: not found"}`, body)
		assert.Equal(t, []events.Key{greetKey}, f.Triggered(), "an undeclared resource is not triggered")
	})
}

func TestRecentEventsOfADeclaredResourceOldestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		f.Declare("workflows/greet.yaml", greetWorkflow)
		f.Publish(events.ReconciliationStarted{Meta: events.NewMeta("c1"), Key: greetKey, Attempt: 1})
		f.Publish(events.ResourceSynced{Meta: events.NewMeta("c1"), Key: greetKey, Attempt: 1})

		code, _, body := call(t, f, http.MethodGet, "/api/v1/resources/wf/team-a/greet/events", nil)
		require.Equal(t, http.StatusOK, code, body)
		var list types.EventList
		require.NoError(t, json.Unmarshal([]byte(body), &list))
		var got []string
		for _, item := range list.Items {
			e, err := events.Unmarshal(item)
			require.NoError(t, err)
			got = append(got, e.EventType())
		}
		assert.Equal(t, []string{"ResourceChanged", "StatusSynced", "ReconciliationStarted", "StatusSynced", "ResourceSynced", "StatusSynced"}, got)

		code, _, body = call(t, f, http.MethodGet, "/api/v1/resources/wf/default/greet/events", nil)
		assert.Equal(t, http.StatusNotFound, code)
		assert.JSONEq(t, `{"error":"workflows/default/greet: not found"}`, body)
	})
}

func TestReconcileRequiresTheTokenWhenOneIsSet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, func(o *api.Options) { o.Token = "s3cret" })
		f.Declare("workflows/greet.yaml", greetWorkflow)
		const path = "/api/v1/resources/wf/team-a/greet/reconcile"
		for _, auth := range []string{"", "Bearer", "Bearer ", "Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret", "Bearer S3CRET"} {
			header := http.Header{}
			if auth != "" {
				header.Set("Authorization", auth)
			}
			code, h, body := call(t, f, http.MethodPost, path, header)
			assert.Equal(t, http.StatusUnauthorized, code, auth)
			assert.Equal(t, `Bearer realm="musterd"`, h.Get("WWW-Authenticate"), auth)
			assert.JSONEq(t, `{"error":"a valid bearer token is required to trigger a reconcile"}`, body, auth)
		}
		assert.Empty(t, f.Triggered())

		code, _, _ := call(t, f, http.MethodPost, "/api/v1/resources/wf/team-a/nope/reconcile", nil)
		assert.Equal(t, http.StatusUnauthorized, code, "whether a resource exists is not told without the token")

		for _, auth := range []string{"Bearer s3cret", "bearer s3cret"} {
			code, _, _ := call(t, f, http.MethodPost, path, http.Header{"Authorization": {auth}})
			assert.Equal(t, http.StatusAccepted, code, auth)
		}
		assert.Equal(t, []events.Key{greetKey, greetKey}, f.Triggered())

		code, _ = get(t, f, "/api/v1/resources/wf/team-a/greet")
		assert.Equal(t, http.StatusOK, code, "reading needs no token")
	})
}

func TestHealthzReportsComponentsWithRedactedErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		code, body := get(t, f, "/healthz")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{"healthy":true,"components":[]}`, body)

		f.SetHealth(
			lifecycle.ComponentHealth{Name: "coordinator", State: lifecycle.StateRunning, Healthy: true},
			lifecycle.ComponentHealth{Name: "watcher", State: lifecycle.StateFailed, Healthy: false,
				Err: errors.New("open /home/alice/.config/muster/x.yaml: password=hunter2")},
		)
		code, body = get(t, f, "/healthz")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.JSONEq(t, `{"healthy":false,"components":[
			{"name":"coordinator","state":"running","healthy":true},
			{"name":"watcher","state":"failed","healthy":false,"error":"open …/x.yaml: password=[redacted]"}]}`, body)
	})
}

func TestReadyzTurnsReadyWithTheFirstFullReconcile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		code, body := get(t, f, "/readyz")
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.JSONEq(t, `{"ready":false}`, body)
		f.SetReady(true)
		code, body = get(t, f, "/readyz")
		assert.Equal(t, http.StatusOK, code)
		assert.JSONEq(t, `{"ready":true}`, body)
	})
}

func TestMetricsServesTheGatherer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, nil)
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: "musterd_test_total", Help: "A test counter."})
		f.Metrics.MustRegister(c)
		c.Add(3)
		code, body := get(t, f, "/metrics")
		assert.Equal(t, http.StatusOK, code)
		assert.Contains(t, body, "# TYPE musterd_test_total counter\nmusterd_test_total 3\n")
	})
}

// With a token, every mutating request and every event endpoint answers 401
// without it, whatever the credentials' near misses; reads of resources,
// health and metrics stay open.
func TestATokenGuardsEveryMutatingEndpointAndTheEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := apitest.New(t, func(o *api.Options) { o.Token = "s3cret" })
		f.Declare("workflows/greet.yaml", greetWorkflow)
		guarded := []struct{ method, path string }{
			{http.MethodPost, "/api/v1/resources/wf/team-a/greet/reconcile"},
			{http.MethodGet, "/api/v1/events"},
			{http.MethodHead, "/api/v1/events"},
			{http.MethodGet, "/api/v1/events?format=trace"},
			{http.MethodGet, "/api/v1/events?kind=wf&name=greet"},
			{http.MethodGet, "/api/v1/resources/wf/team-a/greet/events"},
		}
		for _, g := range guarded {
			for _, auth := range []string{"", "Bearer", "Bearer s3cre", "Basic s3cret", "s3cret"} {
				header := http.Header{}
				if auth != "" {
					header.Set("Authorization", auth)
				}
				code, h, _ := call(t, f, g.method, g.path, header)
				assert.Equal(t, http.StatusUnauthorized, code, "%s %s with %q", g.method, g.path, auth)
				assert.Equal(t, `Bearer realm="musterd"`, h.Get("WWW-Authenticate"), "%s %s", g.method, g.path)
			}
		}
		assert.Empty(t, f.Triggered())

		withToken := http.Header{"Authorization": {"Bearer s3cret"}}
		code, _, _ := call(t, f, http.MethodHead, "/api/v1/events", withToken)
		assert.Equal(t, http.StatusOK, code)
		code, _, body := call(t, f, http.MethodGet, "/api/v1/resources/wf/team-a/greet/events", withToken)
		assert.Equal(t, http.StatusOK, code, body)
		for _, open := range []string{"/healthz", "/readyz", "/metrics", "/api/v1/resources", "/api/v1/resources/wf/team-a/greet"} {
			code, _ := get(t, f, open)
			assert.NotEqual(t, http.StatusUnauthorized, code, open)
		}
	})
}

// A follower reconciles nothing: a reconcile asked of it is refused at
// once, naming the leader, not accepted and left waiting until this replica
// leads.
func TestReconcileOnAFollowerIsRefusedNamingTheLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		leader, leading := "", false
		f := apitest.New(t, func(o *api.Options) {
			o.Leader = func() (string, bool) {
				mu.Lock()
				defer mu.Unlock()
				return leader, leading
			}
		})
		f.Declare("workflows/greet.yaml", greetWorkflow)
		const path = "/api/v1/resources/wf/team-a/greet/reconcile"

		code, _, body := call(t, f, http.MethodPost, path, nil)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.JSONEq(t, `{"error":"this replica is not the leader and reconciles nothing; no leader is known yet: retry shortly"}`, body)

		mu.Lock()
		leader = "musterd-7d9f-abcde_4f1c"
		mu.Unlock()
		code, _, body = call(t, f, http.MethodPost, path, nil)
		assert.Equal(t, http.StatusServiceUnavailable, code)
		assert.JSONEq(t, `{"error":"this replica is not the leader and reconciles nothing; the leader is musterd-7d9f-abcde_4f1c: ask it"}`, body)
		assert.Empty(t, f.Triggered(), "a follower triggers nothing")

		mu.Lock()
		leading = true
		mu.Unlock()
		code, _, _ = call(t, f, http.MethodPost, path, nil)
		assert.Equal(t, http.StatusAccepted, code, "the leader accepts")
		assert.Equal(t, []events.Key{greetKey}, f.Triggered())
	})
}
