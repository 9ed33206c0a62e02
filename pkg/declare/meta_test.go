package declare

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

const stamp = "ui.giantswarm.io/registered-by"

// A create's metadata is written with the definition, in a file and on a
// custom resource, and an update keeps it.
func TestCreateWritesItsMetadataAndUpdatesKeepIt(t *testing.T) {
	ctx := context.Background()
	meta := Meta{Annotations: map[string]string{stamp: "alice"}}

	files, _ := newFiles(t)
	created, err := files.Create(ctx, gitKey, gitSpec(), meta)
	require.NoError(t, err)
	assert.Equal(t, "alice", created.Object.GetAnnotations()[stamp])
	got, err := files.Get(ctx, gitKey)
	require.NoError(t, err)
	assert.Equal(t, "alice", got.Object.GetAnnotations()[stamp])
	updated, err := files.Update(ctx, gitKey, map[string]any{"command": "other"}, "")
	require.NoError(t, err)
	assert.Equal(t, "alice", updated.Object.GetAnnotations()[stamp])

	cp := kubetest.Start(t, kubetest.Options{})
	kube, err := NewKube(KubeOptions{Client: cp.Client})
	require.NoError(t, err)
	key := events.NewKey(v1alpha1.KindMCPServer, "default", "git")
	_, err = kube.Create(ctx, key, gitSpec(), meta)
	require.NoError(t, err)
	var cr v1alpha1.MCPServer
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "git"}, &cr))
	assert.Equal(t, map[string]string{stamp: "alice"}, cr.Annotations)
	_, err = kube.Update(ctx, key, map[string]any{"command": "other"}, "")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "git"}, &cr))
	assert.Equal(t, "alice", cr.Annotations[stamp])
}
