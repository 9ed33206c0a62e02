package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/router"
)

// completingBackend is a fakeBackend that completes, answering for the
// exposed prompt x_notes_greet and template x_notes_note/{id} as the
// router does, and failing otherwise with the router's errors.
type completingBackend struct {
	*fakeBackend
	mu    sync.Mutex
	asked []*mcp.CompleteParams
}

func (b *completingBackend) Complete(_ context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	b.mu.Lock()
	b.asked = append(b.asked, p)
	b.mu.Unlock()
	switch {
	case p.Ref.Name == "x_notes_greet" || p.Ref.URI == "x_notes_note/{id}":
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{p.Argument.Value + "ice"}, Total: 7, HasMore: true}}, nil
	case p.Ref.Name == "x_plain_hello":
		return nil, fmt.Errorf("mcp server MCPServer/default/plain %w", router.ErrNoCompletions)
	case p.Ref.Name == "x_down_hello":
		return nil, errors.New("mcp server MCPServer/default/down is not running (state Failed): token=s3cr3t-value")
	case p.Ref.Type == "ref/resource":
		return nil, fmt.Errorf("resource template %q: %w", p.Ref.URI, router.ErrUnknownTemplate)
	}
	return nil, fmt.Errorf("prompt %q: %w", p.Ref.Name, router.ErrUnknownPrompt)
}

// Both aggregated views advertise completions and pass completion/complete
// to the Backend, its argument and context unchanged; what fails is a
// JSON-RPC error with a code that says why.
func TestTheAggregatedViewsCompleteThroughTheBackend(t *testing.T) {
	var cb *completingBackend
	h := newHarness(t, func(o *setup) {
		cb = &completingBackend{fakeBackend: o.Backend.(*fakeBackend)}
		o.Backend = cb
	})
	for _, path := range []string{PathMCP, PathDirect} {
		t.Run(path, func(t *testing.T) {
			cs := h.connect(path, "2025-06-18", nil)
			assert.NotNil(t, cs.InitializeResult().Capabilities.Completions, "completions advertised")

			ctx := context.Background()
			res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "x_notes_greet"},
				Argument: mcp.CompleteParamsArgument{Name: "who", Value: "al"},
				Context:  &mcp.CompleteContext{Arguments: map[string]string{"lang": "en"}}})
			require.NoError(t, err)
			assert.Equal(t, mcp.CompletionResultDetails{Values: []string{"alice"}, Total: 7, HasMore: true}, res.Completion)
			cb.mu.Lock()
			last := cb.asked[len(cb.asked)-1]
			cb.mu.Unlock()
			assert.Equal(t, map[string]string{"lang": "en"}, last.Context.Arguments, "context.arguments pass unchanged")

			res, err = cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/resource", URI: "x_notes_note/{id}"},
				Argument: mcp.CompleteParamsArgument{Name: "id", Value: "1"}})
			require.NoError(t, err)
			assert.Equal(t, []string{"1ice"}, res.Completion.Values)

			code := func(ref *mcp.CompleteReference) (int64, string) {
				_, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "b"}})
				require.Error(t, err)
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) {
					return 0, err.Error()
				}
				return rpc.Code, rpc.Message
			}
			c, msg := code(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_nobody_p"})
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), c)
			assert.Contains(t, msg, `prompt "x_nobody_p"`)
			c, msg = code(&mcp.CompleteReference{Type: "ref/resource", URI: "nobody://{x}"})
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), c)
			assert.Contains(t, msg, `resource template "nobody://{x}"`)
			c, msg = code(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_plain_hello"})
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), c)
			assert.Contains(t, msg, "plain offers no completions")
			_, msg = code(&mcp.CompleteReference{Type: "ref/prompt", Name: "x_down_hello"})
			assert.Contains(t, msg, "is not running (state Failed)")
			assert.NotContains(t, msg, "s3cr3t-value", "redacted")
		})
	}
}
