package fs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

func TestDecodeV1alpha1KeepsIdentityHashAndErrors(t *testing.T) {
	docs, err := DecodeV1alpha1("mcpservers/two.yaml", []byte(`apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata: {name: good}
spec: {type: stdio, command: run}
---
apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata: {name: bad}
spec: {type: stdio}
`))
	require.NoError(t, err)
	require.Len(t, docs, 2)
	assert.Equal(t, events.NewKey("MCPServer", "", "good"), docs[0].Key)
	assert.IsType(t, &v1alpha1.MCPServer{}, docs[0].Object)
	assert.Contains(t, docs[0].Hash, "sha256:")
	assert.NoError(t, docs[0].Err)
	assert.Equal(t, events.NewKey("MCPServer", "", "bad"), docs[1].Key)
	assert.ErrorContains(t, docs[1].Err, "mcpservers/two.yaml:9: spec.command")

	_, err = DecodeV1alpha1("mcpservers/x.yaml", []byte("kind: [\n"))
	assert.ErrorContains(t, err, "mcpservers/x.yaml:")
}
