package router

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/catalogue"
)

// ownSource serves one resource of its own.
type ownSource struct{}

var ownStatus = &mcp.Resource{URI: "auth://status", Name: "status"}

func (ownSource) OwnResources() []*mcp.Resource { return []*mcp.Resource{ownStatus} }
func (ownSource) ReadOwnResource(_ context.Context, uri string) (*mcp.ReadResourceResult, bool, error) {
	if uri != ownStatus.URI {
		return nil, false, nil
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "mine"}}}, true, nil
}

// musterd's own resources are listed after the servers', read by their
// source, and a subscription to one is taken and announces nothing.
func TestOwnResourcesAreListedReadAndSubscribed(t *testing.T) {
	r, err := New(Options{Catalogue: catalogue.New(catalogue.Options{}), Servers: noServers{}, OwnResources: ownSource{}})
	require.NoError(t, err)
	assert.Equal(t, []*mcp.Resource{ownStatus}, r.Resources())
	res, err := r.ReadResource(t.Context(), "auth://status")
	require.NoError(t, err)
	assert.Equal(t, "mine", res.Contents[0].Text)
	assert.NoError(t, r.Subscribe(t.Context(), "auth://status"))
	_, err = r.ReadResource(t.Context(), "auth://other")
	assert.ErrorIs(t, err, ErrUnknownResource)
}
