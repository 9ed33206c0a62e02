package router_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/router"
	"github.com/musterd/musterd/pkg/supervisor"
)

// completingServers is fakeServers that complete, as the supervisor does,
// and say what each server answered to initialize.
type completingServers struct {
	fakeServers
	cmu       sync.Mutex
	completes []string            // "key ref-type own-name-or-uri arg=value context"
	plain     map[events.Key]bool // servers without the completions capability
	down      error               // Complete's error, as the supervisor's for a server down
}

func (f *completingServers) Complete(_ context.Context, key events.Key, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	own := p.Ref.Name + p.Ref.URI
	f.completes = append(f.completes, key.Name+" "+p.Ref.Type+" "+own+" "+p.Argument.Name+"="+p.Argument.Value+" "+jsonOf(p.Context))
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{p.Argument.Value + "-done"}, Total: 1}}, nil
}

func (f *completingServers) Get(key events.Key) (supervisor.Observed, bool) {
	caps := &mcp.ServerCapabilities{Prompts: &mcp.PromptCapabilities{}}
	if !f.plain[key] {
		caps.Completions = &mcp.CompletionCapabilities{}
	}
	return supervisor.Observed{State: v1alpha1.MCPServerStateRunning, Init: &mcp.InitializeResult{Capabilities: caps}}, true
}

func (f *completingServers) completed() []string {
	f.cmu.Lock()
	defer f.cmu.Unlock()
	return append([]string(nil), f.completes...)
}

// A completion names a prompt or a resource template as the aggregated
// views show them; it reaches the server that offers it under the
// server's own name or template, its argument and context unchanged.
func TestACompletionGoesToItsServerUnderItsOwnNames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		notes, mem, plain := key("notes"), key("mem"), key("plain")
		f := &completingServers{fakeServers: fakeServers{
			templates: map[events.Key][]*mcp.ResourceTemplate{
				notes: {{URITemplate: "note/{id}", Name: "note"}},
				mem:   {{URITemplate: "mem://{id}", Name: "cell"}},
			},
			prompts: map[events.Key][]*mcp.Prompt{
				notes: {{Name: "summarise"}},
				mem:   {{Name: "summarise"}},
				plain: {{Name: "hello"}},
			},
		}, plain: map[events.Key]bool{plain: true}}
		cat := catalogue.New(catalogue.Options{})
		r, err := router.New(router.Options{Catalogue: cat, Servers: f, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		cat.Update(notes, catalogue.Naming{}, nil, time.Time{})
		cat.Update(mem, catalogue.Naming{ToolPrefix: "m"}, nil, time.Time{})
		cat.Update(plain, catalogue.Naming{}, nil, time.Time{})
		synctest.Wait()

		ask := func(ref *mcp.CompleteReference) (*mcp.CompleteResult, error) {
			return r.Complete(t.Context(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "id", Value: "4"},
				Context: &mcp.CompleteContext{Arguments: map[string]string{"topic": "go"}}})
		}
		res, err := ask(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_m_summarise"})
		require.NoError(t, err)
		assert.Equal(t, []string{"4-done"}, res.Completion.Values, "the server's result, unchanged")
		_, err = ask(&mcp.CompleteReference{Type: "ref/resource", URI: "x_notes_note/{id}"})
		require.NoError(t, err)
		_, err = ask(&mcp.CompleteReference{Type: "ref/resource", URI: "mem://{id}"})
		require.NoError(t, err)
		assert.Equal(t, []string{
			`mem ref/prompt summarise id=4 {"arguments":{"topic":"go"}}`,
			`notes ref/resource note/{id} id=4 {"arguments":{"topic":"go"}}`,
			`mem ref/resource mem://{id} id=4 {"arguments":{"topic":"go"}}`,
		}, f.completed())

		_, err = ask(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_notes_nothing"})
		require.ErrorIs(t, err, router.ErrUnknownPrompt)
		assert.ErrorContains(t, err, "x_notes_nothing")
		_, err = ask(&mcp.CompleteReference{Type: "ref/resource", URI: "note/{id}"})
		require.ErrorIs(t, err, router.ErrUnknownTemplate, "a server's own template is not the exposed one")
		assert.ErrorContains(t, err, "note/{id}")
		_, err = ask(&mcp.CompleteReference{Type: "ref/tool", Name: "x"})
		require.ErrorIs(t, err, router.ErrBadReference)

		_, err = ask(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_plain_hello"})
		require.ErrorIs(t, err, router.ErrNoCompletions)
		assert.EqualError(t, err, "mcp server "+plain.String()+" offers no completions")

		f.cmu.Lock()
		f.down = errors.New("mcp server notes is not running (state Failed)")
		f.cmu.Unlock()
		_, err = ask(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_notes_summarise"})
		assert.EqualError(t, err, "mcp server notes is not running (state Failed)", "the supervisor's error, as a call's")
		assert.Len(t, f.completed(), 3)
	})
}

// A prompt the background listing has not seen yet is found by listing
// every server again, as a get of it is.
func TestACompletionOfAPromptNotYetListedListsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := key("a")
		f := &completingServers{fakeServers: fakeServers{prompts: map[events.Key][]*mcp.Prompt{a: {{Name: "p"}}}}}
		cat := catalogue.New(catalogue.Options{})
		r, err := router.New(router.Options{Catalogue: cat, Servers: f, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		cat.Update(a, catalogue.Naming{}, nil, time.Time{})
		synctest.Wait()

		f.mu.Lock()
		f.prompts[a] = append(f.prompts[a], &mcp.Prompt{Name: "unannounced"})
		f.mu.Unlock()
		_, err = r.Complete(t.Context(), &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "x_a_unannounced"},
			Argument: mcp.CompleteParamsArgument{Name: "n", Value: "v"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"a ref/prompt unannounced n=v null"}, f.completed())
	})
}
