package workflowrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/mcpfake"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/coretools"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/statusync"
	"github.com/musterd/musterd/pkg/workflowrun"
)

var fakeBin string

func TestMain(m *testing.M) { mcpfake.Main(m, &fakeBin) }

// fakeTools are the tools of the mcp-fake server the tests run, exposed as
// x_fake_<tool>.
const fakeTools = "echo,json,fail,sleep,sleeps,big,gate,gate_waiting,gate_open"

// router is the tests' Caller: what the MCP endpoint's router does, over a
// real Go SDK client session to a real mcp-fake child process. x_fake_…
// goes to the server, workflow_… and the execution tools to the engine.
type router struct {
	engine   *workflowrun.Engine
	core     *coretools.Provider // the execution tools
	session  *mcp.ClientSession
	sessions map[string]*mcp.ClientSession // more servers: x_<name>_ → session

	mu       sync.Mutex
	progress map[string]func(*mcp.ProgressNotificationParams)
	tokens   atomic.Int64
	calls    atomic.Int64 // calls that reached the server
}

func (r *router) CallTool(ctx context.Context, name string, args map[string]any, progress func(*mcp.ProgressNotificationParams)) (*mcp.CallToolResult, error) {
	if strings.HasPrefix(name, workflowrun.ToolPrefix) {
		return r.engine.CallTool(ctx, name, args, progress)
	}
	if strings.HasPrefix(name, "core_workflow_execution") {
		return r.core.CallTool(ctx, name, args, progress)
	}
	session := r.session
	tool, ok := strings.CutPrefix(name, "x_fake_")
	for prefix, s := range r.sessions {
		if t, found := strings.CutPrefix(name, prefix); found {
			session, tool, ok = s, t, true
		}
	}
	if !ok {
		return nil, fmt.Errorf("no such tool %s", name)
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	if progress != nil {
		token := fmt.Sprint("p", r.tokens.Add(1))
		r.mu.Lock()
		r.progress[token] = progress
		r.mu.Unlock()
		defer func() { r.mu.Lock(); delete(r.progress, token); r.mu.Unlock() }()
		params.SetProgressToken(token)
	}
	r.calls.Add(1)
	return session.CallTool(ctx, params)
}

// harness runs an engine over a real index, the real workflow reconciler
// and catalogue, and a real mcp-fake.
type harness struct {
	t      *testing.T
	ix     *resources.Index
	cat    *catalogue.Catalogue
	rec    *workflow.Reconciler
	engine *workflowrun.Engine
	router *router
	events chan events.Event
	server *exec.Cmd
	client *mcp.Client
	// engineOpts are the options the engine was made with; stateDir is
	// for tests to set from them.
	engineOpts workflowrun.Options
	stateDir   string
}

// serve connects the router to one more server, run by cmd, whose tools
// are exposed as x_<name>_<tool>.
func (h *harness) serve(name string, cmd *exec.Cmd) {
	h.t.Helper()
	session, err := h.client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(h.t, err)
	h.t.Cleanup(func() { _ = session.Close() })
	var tools []string
	for tool, err := range session.Tools(context.Background(), nil) {
		require.NoError(h.t, err)
		tools = append(tools, tool.Name)
	}
	h.router.sessions["x_"+name+"_"] = session
	h.cat.Set(events.NewKey(v1alpha1.KindMCPServer, "", name), "", tools)
}

func newHarness(t *testing.T, opts workflowrun.Options) *harness {
	t.Helper()
	h := &harness{t: t, ix: resources.New(), cat: catalogue.New(catalogue.Options{}), events: make(chan events.Event, 100)}
	h.rec = workflow.New(h.ix, h.cat, workflow.WithBuiltinTools(func(tool string) bool { return strings.HasPrefix(tool, "core_workflow_execution") }))
	h.router = &router{progress: map[string]func(*mcp.ProgressNotificationParams){}, sessions: map[string]*mcp.ClientSession{}}
	h.client = mcp.NewClient(&mcp.Implementation{Name: "workflowrun-test", Version: "v1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			h.router.mu.Lock()
			f := h.router.progress[fmt.Sprint(req.Params.ProgressToken)]
			h.router.mu.Unlock()
			if f != nil {
				f(req.Params)
			}
		},
	})
	h.server = exec.Command(fakeBin, "-tools", fakeTools)
	session, err := h.client.Connect(context.Background(), &mcp.CommandTransport{Command: h.server}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = session.Close() })
	h.router.session = session
	h.cat.Set(events.NewKey(v1alpha1.KindMCPServer, "", "fake"), "", strings.Split(fakeTools, ","))

	opts.Index, opts.Status = h.ix, h.rec.Recorded
	if opts.Publish == nil {
		// A long run publishes more step events than a test reads: the
		// excess is dropped rather than holding the run.
		opts.Publish = func(e events.Event) {
			select {
			case h.events <- e:
			default:
			}
		}
	}
	h.engineOpts = opts
	h.engine, err = workflowrun.New(opts)
	require.NoError(t, err)
	h.engine.SetCaller(h.router)
	h.router.engine = h.engine
	h.router.core = executionTools(t, h.engine)
	return h
}

// executionTools is the core tools' provider of e's executions.
func executionTools(t *testing.T, e *workflowrun.Engine) *coretools.Provider {
	t.Helper()
	p, err := coretools.New(coretools.Options{Index: resources.New(), Statuses: noStatuses{}, Executions: e})
	require.NoError(t, err)
	return p
}

// noStatuses is a status store that holds none.
type noStatuses struct{}

func (noStatuses) Get(events.Key) (statusync.Status, bool) { return statusync.Status{}, false }

// declare puts the workflow in src into the index and reconciles it.
func (h *harness) declare(src string) events.Key {
	h.t.Helper()
	docs, err := v1alpha1.DecodeFile("workflows/wf.yaml", []byte(src))
	require.NoError(h.t, err)
	require.Len(h.t, docs, 1)
	d := docs[0]
	require.NoError(h.t, d.Err)
	k := d.Key()
	h.ix.SetFile("workflows/"+k.Name+".yaml", []resources.Doc{{Key: k, Object: d.Object, Hash: d.Hash}}, nil, k)
	h.reconcile(k)
	return k
}

func (h *harness) reconcile(k events.Key) v1alpha1.WorkflowStatus {
	h.t.Helper()
	h.rec.Reconcile(context.Background(), reconcilers.Request{Key: k, Attempt: 1})
	st, ok := h.rec.Status(k)
	require.True(h.t, ok)
	return st.(v1alpha1.WorkflowStatus)
}

// call runs workflow_<name> and returns its result text and isError.
func (h *harness) call(ctx context.Context, name string, args map[string]any) (string, bool) {
	h.t.Helper()
	res, err := h.router.CallTool(ctx, workflowrun.ToolPrefix+name, args, nil)
	require.NoError(h.t, err)
	require.Len(h.t, res.Content, 1)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// run calls the workflow and decodes its JSON result.
func (h *harness) run(name string, args map[string]any) (map[string]any, bool) {
	h.t.Helper()
	text, isError := h.call(context.Background(), name, args)
	var doc map[string]any
	require.NoError(h.t, json.Unmarshal([]byte(text), &doc), text)
	return doc, isError
}

// wf is a workflow document named name with spec.
func wf(name, spec string) string {
	return "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// results maps each step of doc's steps[] to its result.
func stepsOf(t *testing.T, doc map[string]any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	list, ok := doc["steps"].([]any)
	require.True(t, ok, "steps is a list: %v", doc)
	for _, s := range list {
		m := s.(map[string]any)
		out[m["id"].(string)] = m
	}
	return out
}
