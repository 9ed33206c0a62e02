package main

// End to end: completion/complete on /mcp and /mcp/direct, by the exposed
// names, reaching npm's server-everything under its own.

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/npmtest"
)

// A completion names a prompt or a resource template as the view lists
// them; musterd asks the server that offers it under its own name, the
// context's arguments passed on; an unknown prompt is invalid params
// naming it.
func TestE2ECompletionsReachTheServerByTheExposedNames(t *testing.T) {
	everything := npmtest.ServerEverything(t)
	e := startFS(t)
	e.write(t, "mcpservers/everything.yaml", mcpServerYAML("everything", "type: stdio", "autoStart: true", "command: "+yamlValue(everything), `args: ["stdio"]`, "timeout: 60"))
	e.waitServer(t, "everything", "running", func(s serverObject) bool { return s.Status.State == "Running" })

	const prompt, template = "x_everything_completable-prompt", "demo://resource/dynamic/text/{resourceId}"
	for _, path := range []string{"/mcp/direct", "/mcp"} {
		t.Run(path, func(t *testing.T) {
			cs := e.mcpClient(t, path, "2025-06-18", nil)
			require.NotNil(t, cs.InitializeResult().Capabilities.Completions, "completions advertised")
			eventually(t, "the prompt and the template are listed", func() bool {
				var hasPrompt, hasTemplate bool
				for p, err := range cs.Prompts(context.Background(), nil) {
					require.NoError(t, err)
					hasPrompt = hasPrompt || p.Name == prompt
				}
				for rt, err := range cs.ResourceTemplates(context.Background(), nil) {
					require.NoError(t, err)
					hasTemplate = hasTemplate || rt.URITemplate == template
				}
				return hasPrompt && hasTemplate
			})
			complete := func(ref *mcp.CompleteReference, arg, value string, context map[string]string) ([]string, error) {
				p := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}}
				if context != nil {
					p.Context = &mcp.CompleteContext{Arguments: context}
				}
				res, err := cs.Complete(t.Context(), p)
				if err != nil {
					return nil, err
				}
				return res.Completion.Values, nil
			}
			promptRef := &mcp.CompleteReference{Type: "ref/prompt", Name: prompt}
			got, err := complete(promptRef, "department", "Eng", nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"Engineering"}, got)
			got, err = complete(promptRef, "name", "", map[string]string{"department": "Sales"})
			require.NoError(t, err)
			assert.Equal(t, []string{"David", "Eve", "Frank"}, got, "the context's arguments reach the server")
			got, err = complete(&mcp.CompleteReference{Type: "ref/resource", URI: template}, "resourceId", "7", nil)
			require.NoError(t, err)
			assert.Equal(t, []string{"7"}, got)

			_, err = complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "completable-prompt"}, "department", "E", nil)
			var rpc *jsonrpc.Error
			require.True(t, errors.As(err, &rpc), "a JSON-RPC error: %v", err)
			assert.Equal(t, int64(jsonrpc.CodeInvalidParams), rpc.Code)
			assert.Contains(t, rpc.Message, `prompt "completable-prompt"`, "the server's own name is not the view's")
		})
	}
}
