//lint:file-ignore SA1019 roots, sampling and logging are deprecated as of MCP 2026-07-28 (SEP-2577), and passed through for the clients and servers of 2025-11-25 that use them.

package main

// End-to-end tests of what a managed server asks of its client while it
// handles a call (sampling, elicitation, roots) and what it logs: the real
// binary, mcp-fake's asking tools (as a stdio server shared by every
// client, as a stdio server run per client, and as a remote server), and
// go-sdk clients on /mcp/direct that answer each in its own name.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/supervisor"
)

const askingTools = "sample,elicit,roots,log,ask_later,asked_later,asked,json,url_required,roots_changes"

// olderGeneration makes mcp-fake a server of 2025-11-25 only: its asking
// tools send classic requests, which a go-sdk server may not send on a
// 2026-07-28 session (there a server returns input requests instead:
// e2e_inputrequests_test.go).
const olderGeneration = "2025-11-25"

// askingServers runs mcp-fake's asking tools three ways: "shared" (stdio,
// one process for every client: the default), "lanes" (stdio, one process
// per client session) and "remote" (streamable HTTP, one session per
// client that offers sampling, elicitation or roots: the default).
func askingServers(t *testing.T) *fsEnv {
	t.Helper()
	url := startRemoteServer(t, askingTools)
	e := startFS(t)
	e.write(t, "mcpservers/shared.yaml", mcpServerYAML("shared", stdioSpec("-tools", askingTools, "-protocols", olderGeneration)...))
	e.write(t, "mcpservers/lanes.yaml", annotatedServerYAML("lanes",
		map[string]string{supervisor.ClientSessionsAnnotation: string(supervisor.ClientSessionsPerClient)},
		stdioSpec("-tools", askingTools, "-protocols", olderGeneration)...))
	e.write(t, "mcpservers/remote.yaml", mcpServerYAML("remote", "type: streamable-http", "autoStart: true", "url: "+yamlValue(url), "timeout: 20"))
	for _, name := range []string{"shared", "lanes"} {
		e.waitServer(t, name, "running", func(s serverObject) bool { return s.Status.State == "Running" })
	}
	e.waitServer(t, "remote", "connected", func(s serverObject) bool { return s.Status.State == "Connected" })
	return e
}

// answerer is a client that answers a server's questions in its own name:
// the model says "from <name>", the user gives {"name": <name>}, its root
// is file:///<name>. Each question waits at gate, if set, before it is
// answered.
type answerer struct {
	name              string
	gate              func(ctx context.Context)
	refuse            error  // set: every question is answered with this error
	action            string // the elicitation's answer; "" is accept
	sampled, elicited atomic.Int32

	mu   sync.Mutex
	logs []string // the data of each log message, in order
}

func (a *answerer) wait(ctx context.Context) {
	if a.gate != nil {
		a.gate(ctx)
	}
}

func (a *answerer) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{ListChanged: true}},
		CreateMessageHandler: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			a.sampled.Add(1)
			a.wait(ctx)
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "from " + a.name}}, nil
		},
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.elicited.Add(1)
			a.wait(ctx)
			if a.refuse != nil {
				return nil, a.refuse
			}
			if a.action != "" {
				return &mcp.ElicitResult{Action: a.action}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": a.name}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			a.mu.Lock()
			defer a.mu.Unlock()
			a.logs = append(a.logs, fmt.Sprint(req.Params.Data))
		},
	}
}

func (a *answerer) logged() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.logs)
}

// connect connects a to /mcp/direct, with its root.
func (a *answerer) connect(t *testing.T, e *fsEnv) *mcp.ClientSession {
	t.Helper()
	return a.connectTo(t, e, "/mcp/direct")
}

// connectTo connects a to the daemon's path, with its root.
func (a *answerer) connectTo(t *testing.T, e *fsEnv, path string) *mcp.ClientSession {
	t.Helper()
	opts := a.options()
	client := mcp.NewClient(&mcp.Implementation{Name: a.name, Version: "e2e"}, opts)
	client.AddRoots(&mcp.Root{URI: "file:///" + a.name})
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	// A session of the older generation: its sampling, elicitation, roots
	// and logging are what pass through. (A client of 2026-07-28, the
	// go-sdk's default, is asked by InputRequiredResult instead: the
	// bridge's tests.)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + e.addr + path},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// together is a gate that holds each of n questions until all n are
// pending at once (or the deadline passes), so that they are in flight
// together.
func together(n int) func(ctx context.Context) {
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() {
		arrived.Wait()
		close(all)
	}()
	return func(ctx context.Context) {
		arrived.Done()
		select {
		case <-all:
		case <-ctx.Done():
		case <-time.After(callDeadline / 2):
		}
	}
}

// Two clients call the sampling and the elicitation tool of one server at
// the same time, through /mcp/direct: each question reaches the client
// whose call raised it, and each call gets its own client's answer. With
// a server run per client and with a remote one; the stdio server shared
// by every client refuses, naming why, and asks no one.
func TestE2ETwoClientsEachGetTheirOwnServersQuestions(t *testing.T) {
	e := askingServers(t)
	for _, server := range []string{"lanes", "remote"} {
		t.Run(server, func(t *testing.T) {
			gate := together(2)
			a := &answerer{name: "alice", gate: gate}
			b := &answerer{name: "bob", gate: gate}
			clients := map[*answerer]*mcp.ClientSession{a: a.connect(t, e), b: b.connect(t, e)}
			for _, tool := range []string{"sample", "elicit"} {
				gate = together(2)
				a.gate, b.gate = gate, gate
				var wg sync.WaitGroup
				results := map[string]string{}
				var mu sync.Mutex
				for who, cs := range clients {
					wg.Go(func() {
						ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
						defer cancel()
						res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "x_" + server + "_" + tool, Arguments: map[string]any{"prompt": "who?", "message": "who?"}})
						text := ""
						if err != nil {
							text = "call failed: " + err.Error()
						} else {
							text = res.Content[0].(*mcp.TextContent).Text
						}
						mu.Lock()
						results[who.name] = text
						mu.Unlock()
					})
				}
				wg.Wait()
				for _, who := range []string{"alice", "bob"} {
					want := map[string]string{"sample": "sampled: from " + who, "elicit": `elicited: accept {"name":"` + who + `"}`}[tool]
					assert.Equal(t, want, results[who], "%s's %s call gets %s's answer", who, tool, who)
				}
			}
			for _, who := range []*answerer{a, b} {
				assert.EqualValues(t, 1, who.sampled.Load(), "%s was asked for one sampling: its own", who.name)
				assert.EqualValues(t, 1, who.elicited.Load(), "%s was asked for one elicitation: its own", who.name)
			}
		})
	}

	t.Run("shared", func(t *testing.T) {
		a := &answerer{name: "alice"}
		cs := a.connect(t, e)
		for _, tool := range []string{"sample", "roots"} {
			text, isError := callTool(t, cs, "x_shared_"+tool, map[string]any{"prompt": "who?"})
			assert.True(t, isError, "%s: %s", tool, text)
			assert.Contains(t, text, "refused", tool)
			assert.Contains(t, text, "shared by all of musterd's clients", "the refusal says why: %s", text)
		}
		// The go-sdk's server checks the capability before it asks: a
		// shared session offers none, so it answers for itself.
		text, isError := callTool(t, cs, "x_shared_elicit", map[string]any{"message": "who?"})
		assert.True(t, isError, text)
		assert.Contains(t, text, "client does not support elicitation")
		assert.Zero(t, a.sampled.Load()+a.elicited.Load(), "nobody was asked")
	})
}

// A client's roots reach the server it calls, and a question the server
// asks outside any call reaches the client its session is for; on the
// shared server it is refused, saying why.
func TestE2EAServersRootsAndQuestionsOutsideACall(t *testing.T) {
	e := askingServers(t)
	a := &answerer{name: "alice"}
	cs := a.connect(t, e)
	for _, server := range []string{"lanes", "remote"} {
		text, isError := callTool(t, cs, "x_"+server+"_roots", nil)
		assert.False(t, isError, text)
		assert.Equal(t, "roots: file:///alice", text, server)

		text, isError = callTool(t, cs, "x_"+server+"_ask_later", nil)
		require.False(t, isError, text)
		text, isError = callTool(t, cs, "x_"+server+"_asked_later", nil)
		assert.False(t, isError, text)
		assert.Equal(t, "roots: file:///alice", text, "%s: asked after its call, the client of its session answers", server)
	}
	text, isError := callTool(t, cs, "x_shared_ask_later", nil)
	require.False(t, isError, text)
	text, _ = callTool(t, cs, "x_shared_asked_later", nil)
	assert.Contains(t, text, "error:", "the shared server's question outside a call is refused")
	assert.Contains(t, text, "shared by all of musterd's clients", text)
}

// A client's notifications/roots/list_changed reaches the servers it has
// a session of its own with, and they list its roots anew.
func TestE2EAClientsRootsChangeReachesItsServers(t *testing.T) {
	e := askingServers(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "rita", Version: "e2e"}, nil) // roots with listChanged: the go-sdk's default
	client.AddRoots(&mcp.Root{URI: "file:///first"})
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + e.addr + "/mcp/direct"},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // 2026-07-28 has no roots/list_changed
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	for _, server := range []string{"lanes", "remote"} {
		text, _ := callTool(t, cs, "x_"+server+"_roots", nil)
		require.Equal(t, "roots: file:///first", text, server)
	}
	client.AddRoots(&mcp.Root{URI: "file:///second"})
	for _, server := range []string{"lanes", "remote"} {
		eventually(t, server+" hears that the client's roots changed", func() bool {
			text, _ := callTool(t, cs, "x_"+server+"_roots_changes", nil)
			return text == "1"
		})
		text, _ := callTool(t, cs, "x_"+server+"_roots", nil)
		assert.Equal(t, "roots: file:///first file:///second", text, server)
	}
}

// A client that offered no sampling or elicitation gets the server's own
// answer to that (here: the error it returns), at once; the server was
// never offered what the client lacks.
func TestE2EAClientThatOfferedNothingIsNotAsked(t *testing.T) {
	e := askingServers(t)
	bare := e.mcpClient(t, "/mcp/direct", "2025-11-25", &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	for _, server := range []string{"lanes", "remote"} {
		for _, tool := range []string{"sample", "elicit"} {
			text, isError := callTool(t, bare, "x_"+server+"_"+tool, map[string]any{"prompt": "who?", "message": "who?"})
			assert.True(t, isError, "%s %s: %s", server, tool, text)
			assert.Contains(t, text, "error:", "%s %s: the server's own error", server, tool)
		}
	}
	text, _ := callTool(t, bare, "x_lanes_sample", map[string]any{"prompt": "who?"})
	assert.Contains(t, text, "offered no sampling capability", "a server run for this client says what it lacks")
}

// Each client gets its own level's log messages of its own calls, never
// another's.
func TestE2EAServersLogMessagesReachTheirCaller(t *testing.T) {
	e := askingServers(t)
	a, b := &answerer{name: "alice"}, &answerer{name: "bob"}
	ca, cb := a.connect(t, e), b.connect(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	require.NoError(t, ca.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}))
	require.NoError(t, cb.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}))
	for _, server := range []string{"lanes", "remote"} {
		callTool(t, ca, "x_"+server+"_log", map[string]any{"from": "alice@" + server})
		callTool(t, cb, "x_"+server+"_log", map[string]any{"from": "bob@" + server})
	}
	want := map[*answerer][]string{
		a: {"info from alice@lanes", "error from alice@lanes", "info from alice@remote", "error from alice@remote"},
		b: {"error from bob@lanes", "error from bob@remote"},
	}
	for who, logs := range want {
		var got []string
		eventually(t, who.name+" gets its own messages at its level", func() bool {
			got = sorted(who.logged())
			return slices.Equal(got, sorted(logs))
		}, func() string { return fmt.Sprintf("got %q, want %q", got, sorted(logs)) })
	}
	// Give a stray message of the other's time to arrive, by a call that
	// comes after every message of the calls above.
	callTool(t, ca, "x_lanes_json", nil)
	callTool(t, cb, "x_lanes_json", nil)
	assert.Equal(t, sorted(want[a]), sorted(a.logged()), "alice got only her own")
	assert.Equal(t, sorted(want[b]), sorted(b.logged()), "bob got only his own")
}

// On muster's view too, through call_tool: a server's questions reach the
// calling client, and its log messages at the client's level.
func TestE2EMustersViewPassesQuestionsAndLogsThrough(t *testing.T) {
	e := askingServers(t)
	m := &answerer{name: "muster"}
	cs := m.connectTo(t, e, "/mcp")
	ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
	defer cancel()
	require.NoError(t, cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}))
	for _, server := range []string{"lanes", "remote"} {
		text, isError := musterCall(t, cs, "x_"+server+"_sample", map[string]any{"prompt": "who?"})
		assert.False(t, isError, text)
		assert.Equal(t, "sampled: from muster", text, server)
		text, isError = musterCall(t, cs, "x_"+server+"_elicit", map[string]any{"message": "who?"})
		assert.False(t, isError, text)
		assert.Equal(t, `elicited: accept {"name":"muster"}`, text, server)
		musterCall(t, cs, "x_"+server+"_log", map[string]any{"from": server})
	}
	eventually(t, "its log messages at its level", func() bool {
		return slices.Equal(sorted(m.logged()), []string{"error from lanes", "error from remote"})
	})
}

// A server's "visit this URL first" (-32042) reaches the client as that
// JSON-RPC error, its URL in its data, on /mcp/direct and on the server's
// view: a tool error would hide what the client must do.
func TestE2EAURLElicitationRequiredErrorPassesThrough(t *testing.T) {
	e := askingServers(t)
	for path, tool := range map[string]string{"/mcp/direct": "x_shared_url_required", "/mcp/servers/shared": "url_required"} {
		cs := e.mcpClient(t, path, "2025-11-25", nil)
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
		cancel()
		var rpcErr *jsonrpc.Error
		require.ErrorAs(t, err, &rpcErr, path)
		assert.Equal(t, int64(mcp.CodeURLElicitationRequired), rpcErr.Code, path)
		assert.Contains(t, string(rpcErr.Data), "https://example.com/consent", path)
	}
}

// A client's decline, cancel or refusal reaches the server as the client
// gave it: the action unchanged, the refusal's message kept.
func TestE2EAClientsDeclineOrRefusalReachesTheServer(t *testing.T) {
	e := askingServers(t)
	for _, server := range []string{"lanes", "remote"} {
		for _, action := range []string{"decline", "cancel"} {
			a := &answerer{name: action, action: action}
			text, isError := callTool(t, a.connect(t, e), "x_"+server+"_elicit", map[string]any{"message": "who?"})
			assert.False(t, isError, text)
			assert.Equal(t, "elicited: "+action+" null", text, server)
		}
		r := &answerer{name: "rex", refuse: &jsonrpc.Error{Code: 4321, Message: "rex will not say"}}
		text, isError := callTool(t, r.connect(t, e), "x_"+server+"_elicit", map[string]any{"message": "who?"})
		assert.True(t, isError, text)
		assert.Contains(t, text, "rex will not say", "%s: the client's own refusal", server)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// A client that goes away (it deletes its session, as a client that
// leaves does) while a server waits for its answer: the server gets an
// error, not a hang, and the call ends.
func TestE2EAClientLeavingWhileItsServerWaits(t *testing.T) {
	e := askingServers(t)
	asked := make(chan struct{})
	var once sync.Once
	d := &answerer{name: "dora", gate: func(ctx context.Context) {
		once.Do(func() { close(asked) })
		select {
		case <-ctx.Done():
		case <-time.After(callDeadline): // the client's own Close waits for its handlers
		}
	}}
	cd := d.connect(t, e)
	returned := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		_, err := cd.CallTool(ctx, &mcp.CallToolParams{Name: "x_remote_elicit", Arguments: map[string]any{"message": "wait"}})
		returned <- err
	}()
	select {
	case <-asked:
	case <-time.After(callDeadline):
		t.Fatal("the server's question never reached the client")
	}
	req, err := http.NewRequest(http.MethodDelete, "http://"+e.addr+"/mcp/direct", nil)
	require.NoError(t, err)
	req.Header.Set("Mcp-Session-Id", cd.ID())
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = resp.Body.Close()
	select {
	case <-returned:
	case <-time.After(callDeadline):
		t.Fatal("the call of a client that left did not end")
	}
	other := e.mcpClient(t, "/mcp/direct", "2025-11-25", &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}})
	eventually(t, "the server was told its question has no answer", func() bool {
		text, _ := callTool(t, other, "x_remote_asked", nil)
		return text != ""
	})
}

// A server restarted while its question waits for the client: the call
// ends at once, saying the server was stopped, and the next call reaches
// the new server.
func TestE2EAServerRestartedWhileItsQuestionIsPending(t *testing.T) {
	e := askingServers(t)
	asked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f := &answerer{name: "fred", gate: func(ctx context.Context) {
		once.Do(func() { close(asked) })
		select {
		case <-ctx.Done():
		case <-release:
		}
	}}
	defer close(release) // the client's own Close waits for its handlers
	cf := f.connect(t, e)
	type outcome struct {
		text string
		err  error
	}
	returned := make(chan outcome, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		defer cancel()
		res, err := cf.CallTool(ctx, &mcp.CallToolParams{Name: "x_lanes_elicit", Arguments: map[string]any{"message": "wait"}})
		o := outcome{err: err}
		if err == nil {
			data, _ := json.Marshal(res.Content)
			o.text = string(data)
		}
		returned <- o
	}()
	select {
	case <-asked:
	case <-time.After(callDeadline):
		t.Fatal("the server's question never reached the client")
	}
	out, code := e.cli(t, "restart", "lanes")
	require.Zero(t, code, out)
	select {
	case o := <-returned:
		require.NoError(t, o.err)
		assert.Contains(t, o.text, "was stopped while the call was pending", "the call says its server was stopped")
	case <-time.After(callDeadline):
		t.Fatal("the call whose server restarted did not end")
	}
	e.waitServer(t, "lanes", "running again", func(s serverObject) bool { return s.Status.State == "Running" })
	text, isError := callTool(t, cf, "x_lanes_json", map[string]any{"after": "restart"})
	assert.False(t, isError, text)
	assert.True(t, strings.Contains(text, "restart"), text)
}
