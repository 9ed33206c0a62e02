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

// The Done-when item "Kubernetes mode": create, update and delete act on
// the custom resources of a real API server (envtest), and a stale
// resourceVersion is a conflict that changes nothing.
func TestKubeStoreActsOnCRsUnderOptimisticConcurrency(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	s, err := NewKube(KubeOptions{Client: cp.Client})
	require.NoError(t, err)
	assert.Equal(t, ModeKubernetes, s.Mode())
	key := events.NewKey(v1alpha1.KindMCPServer, "default", "git")

	_, err = s.Update(ctx, key, map[string]any{"command": "x"}, "")
	var nf *NotFoundError
	require.ErrorAs(t, err, &nf, "an update of a name that does not exist")
	require.ErrorAs(t, s.Delete(ctx, key, ""), &nf, "a delete of a name that does not exist")

	created, err := s.Create(ctx, key, gitSpec())
	require.NoError(t, err)
	var cr v1alpha1.MCPServer
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "git"}, &cr))
	assert.Equal(t, "mcp-git", cr.Spec.Command)
	assert.Equal(t, map[string]string{"GIT_TOKEN": "s3cr3t-value"}, cr.Spec.Env, "written as asked")
	assert.Equal(t, created.Version, cr.ResourceVersion)
	assert.Equal(t, string(cr.UID), created.UID)

	_, err = s.Create(ctx, key, gitSpec())
	var exists *ExistsError
	require.ErrorAs(t, err, &exists, "a create of a name that exists")

	_, err = s.Create(ctx, events.NewKey(v1alpha1.KindMCPServer, "default", "bad"), map[string]any{"type": "stdio", "command": "x", "timeout": "soon"})
	var invalid *InvalidError
	require.ErrorAs(t, err, &invalid, "validated before anything is sent")
	assert.Contains(t, err.Error(), "spec.timeout:")

	// Someone else updates the CR after it was read: an update or delete
	// based on the read is a conflict, and their edit stays.
	read, err := s.Get(ctx, key)
	require.NoError(t, err)
	cr.Spec.Command = "edited-by-kubectl"
	require.NoError(t, cp.Client.Update(ctx, &cr))
	_, err = s.Update(ctx, key, map[string]any{"command": "mine"}, read.Version)
	var conflict *ConflictError
	require.ErrorAs(t, err, &conflict)
	require.ErrorAs(t, s.Delete(ctx, key, read.Version), &conflict)
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "git"}, &cr))
	assert.Equal(t, "edited-by-kubectl", cr.Spec.Command, "the edit survives")

	// The update sent with a stale resourceVersion is refused by the API
	// server itself.
	stale := read
	stale.Object = read.Object.DeepCopyObject().(v1alpha1.Object)
	stale.Object.(*v1alpha1.MCPServer).Spec.Command = "mine"
	err = cp.Client.Update(ctx, stale.Object)
	require.Error(t, err, "the API server refuses a stale resourceVersion")

	updated, err := s.Update(ctx, key, map[string]any{"args": []any{"--verbose"}}, "")
	require.NoError(t, err)
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "git"}, &cr))
	assert.Equal(t, []string{"--verbose"}, cr.Spec.Args)
	assert.Equal(t, "edited-by-kubectl", cr.Spec.Command, "fields not named are kept")
	assert.Greater(t, updated.Generation, created.Generation)

	require.NoError(t, s.Delete(ctx, key, updated.Version))
	_, err = s.Get(ctx, key)
	require.ErrorAs(t, err, &nf)

	wf := events.NewKey(v1alpha1.KindWorkflow, "default", "flow")
	_, err = s.Create(ctx, wf, map[string]any{"steps": []any{map[string]any{"id": "a", "tool": "x_git_status"}}})
	require.NoError(t, err)
	var w v1alpha1.Workflow
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "flow"}, &w))
	assert.Equal(t, "x_git_status", w.Spec.Steps[0].Tool)
}
