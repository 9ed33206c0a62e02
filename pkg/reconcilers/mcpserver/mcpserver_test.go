package mcpserver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/mcpserver"
	"github.com/musterd/musterd/pkg/resources"
)

func decode(t *testing.T, path, src string) []resources.Doc {
	t.Helper()
	docs, err := v1alpha1.DecodeFile(path, []byte(src))
	require.NoError(t, err)
	var out []resources.Doc
	for _, d := range docs {
		out = append(out, resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err})
	}
	return out
}

const good = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git
spec:
  type: stdio
  command: git-mcp
`

const invalid = `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: git
spec:
  type: stdio
`

func TestRecordsTheDefinitionInForceAndForgetsDeletedOnes(t *testing.T) {
	ix := resources.New()
	r := mcpserver.New(ix)
	key := events.NewKey(v1alpha1.KindMCPServer, "", "git")
	ctx := context.Background()

	ix.SetFile("mcpservers/git.yaml", decode(t, "mcpservers/git.yaml", good), nil, key)
	res := r.Reconcile(ctx, reconcilers.Request{Key: key, Attempt: 1})
	require.NoError(t, res.Err)
	st, ok := r.Status(key)
	require.True(t, ok)
	assert.Equal(t, v1alpha1.MCPServerStateStopped, st.(v1alpha1.MCPServerStatus).State)

	// An invalid edit: a permanent error naming file, line and field; the
	// last good stays recorded.
	ix.SetFile("mcpservers/git.yaml", decode(t, "mcpservers/git.yaml", invalid), nil, key)
	res = r.Reconcile(ctx, reconcilers.Request{Key: key, Attempt: 1})
	require.Error(t, res.Err)
	assert.True(t, reconcilers.IsPermanent(res.Err))
	assert.Contains(t, res.Err.Error(), "mcpservers/git.yaml:")
	assert.Contains(t, res.Err.Error(), "spec.command")
	_, ok = r.Status(key)
	assert.True(t, ok)

	// Orphans are listed until reconciled away.
	ix.RemoveFile("mcpservers/git.yaml")
	keys, err := r.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []events.Key{key}, keys)
	res = r.Reconcile(ctx, reconcilers.Request{Key: key, Attempt: 1})
	assert.NoError(t, res.Err)
	assert.True(t, res.Deleted)
	keys, err = r.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, keys)
}

func TestAFileThatNeverParsedIsAPermanentErrorWithNoStatus(t *testing.T) {
	ix := resources.New()
	r := mcpserver.New(ix)
	key := events.NewKey(v1alpha1.KindMCPServer, "", "broken")
	ix.SetFile("mcpservers/broken.yaml", nil, errors.New("mcpservers/broken.yaml:1: yaml: bad"), key)
	res := r.Reconcile(context.Background(), reconcilers.Request{Key: key, Attempt: 1})
	assert.True(t, reconcilers.IsPermanent(res.Err))
	_, ok := r.Status(key)
	assert.False(t, ok)
}
