package tooldef

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func echo() *Tool {
	return &Tool{Name: "echo", Description: "Echo", Args: []Arg{
		{Name: "text", Type: String, Required: true, Description: "What to say"},
		{Name: "times", Type: Number, Description: "How often", Default: 1},
		{Name: "mode", Type: String, Schema: map[string]any{"type": "string", "enum": []string{"a", "b"}}},
	}, Call: func(_ context.Context, a Args) (*mcp.CallToolResult, error) {
		return JSON(map[string]any{"text": a.Str("text"), "times": a.Int("times", 1)})
	}}
}

func TestDefinitionIsTheSchemaTheArgumentsMake(t *testing.T) {
	tool := echo()
	def := tool.Definition()
	assert.Same(t, def, tool.Definition(), "built once")
	raw, err := json.Marshal(def.InputSchema)
	require.NoError(t, err)
	assert.JSONEq(t, `{"type":"object","required":["text"],"properties":{
		"text":{"type":"string","description":"What to say"},
		"times":{"type":"number","description":"How often","default":1},
		"mode":{"type":"string","enum":["a","b"]}}}`, string(raw))
	none := &Tool{Name: "none"}
	raw, _ = json.Marshal(none.Definition().InputSchema)
	assert.JSONEq(t, `{"type":"object","properties":{}}`, string(raw), "no required list when nothing is required")
}

func TestCheckNamesTheToolAndTheArgument(t *testing.T) {
	tool := echo()
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{nil, `echo: argument "text" is required`},
		{map[string]any{"text": nil}, `echo: argument "text" is required`},
		{map[string]any{"text": ""}, `echo: argument "text" must not be empty`},
		{map[string]any{"text": 3.0}, `echo: argument "text" must be a string, not an integer`},
		{map[string]any{"text": "hi", "times": "2"}, `echo: argument "times" must be a number, not a string`},
		{map[string]any{"text": "hi", "mode": []any{}}, `echo: argument "mode" must be a string, not an array`},
	} {
		_, err := tool.Check(c.args)
		assert.EqualError(t, err, c.want, "%v", c.args)
	}
	a, err := tool.Check(map[string]any{"text": "hi", "times": 2.5, "extra": true})
	require.NoError(t, err, "a fraction is a number; undeclared arguments pass")
	assert.Equal(t, true, a["extra"])
}

func TestSelfCheckedToolsLeaveTheCheckToTheirCall(t *testing.T) {
	tool := echo()
	tool.SelfChecked = true
	a, err := tool.Check(nil)
	require.NoError(t, err)
	assert.NotNil(t, a)
}

func TestInvokeAnswersARefusedCallAsTheToolsError(t *testing.T) {
	res, err := echo().Invoke(context.Background(), map[string]any{"text": 1.0})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, `echo: argument "text" must be a string, not an integer`, res.Content[0].(*mcp.TextContent).Text)
	res, err = echo().Invoke(context.Background(), map[string]any{"text": "a&b", "times": 2.0})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Equal(t, `{"text":"a&b","times":2}`, res.Content[0].(*mcp.TextContent).Text, "compact, & kept")
}

func TestPrettyIndents(t *testing.T) {
	res, err := Pretty(map[string]int{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, "{\n  \"a\": 1\n}", res.Content[0].(*mcp.TextContent).Text)
}
