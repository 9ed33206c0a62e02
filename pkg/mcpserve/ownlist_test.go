package mcpserve

import (
	"fmt"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
)

// On /mcp/direct, a session whose owner connects to a server of its own
// lists that server's tools with the exposed set, paged as the go-sdk
// pages; another session lists the exposed set alone, and cannot call
// them.
func TestTheDirectViewListsTheCallersOwnTools(t *testing.T) {
	_, cat, _, url := ownersSetup(t)
	a, b := connectTo(t, url+PathDirect, nil), connectTo(t, url+PathDirect, nil)
	names := func(cs *mcp.ClientSession) (names []string, pages int) {
		t.Helper()
		params := &mcp.ListToolsParams{}
		for {
			res, err := cs.ListTools(t.Context(), params)
			require.NoError(t, err)
			pages++
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if res.NextCursor == "" {
				return names, pages
			}
			params.Cursor = res.NextCursor
		}
	}
	before, _ := names(a)
	require.Empty(t, before)

	var vault []*mcp.Tool
	for i := range 1500 { // more than a page
		vault = append(vault, echoTool(fmt.Sprintf("t%04d", i)))
	}
	vault = append(vault, echoTool("read"))
	cat.UpdateFor("session:"+a.ID(), events.NewKey("MCPServer", "", "vault"), catalogue.Naming{}, vault, time.Time{})
	got, pages := names(a)
	assert.Len(t, got, 1501)
	assert.Equal(t, 2, pages, "a page of the go-sdk's size, and the rest")
	assert.Contains(t, got, "x_vault_read")
	assert.True(t, isSorted(got), "in name order, each once")
	other, _ := names(b)
	assert.Empty(t, other, "a's tools are not b's")

	_, err := b.CallTool(t.Context(), &mcp.CallToolParams{Name: "x_vault_read"})
	assert.ErrorContains(t, err, "x_vault_read", "nor can b call them")

	// A cursor from before a's own tools came is refused, not misread.
	_, err = a.ListTools(t.Context(), &mcp.ListToolsParams{Cursor: "bm90IG91cnM"})
	assert.ErrorContains(t, err, "list them again from the start")
}

func isSorted(names []string) bool {
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			return false
		}
	}
	return true
}
