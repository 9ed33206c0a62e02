package services

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// Kubernetes mode keeps a stop in the CR's status.override, where a
// restarted musterd reads it back, on a real API server (envtest).
func TestCRStatusKeepsOverridesInTheCRsStatus(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := context.Background()
	cr := &v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "default"},
		Spec: v1alpha1.MCPServerSpec{Type: "stdio", Command: "mcp-git"}}
	require.NoError(t, cp.Client.Create(ctx, cr))
	k := events.NewKey(v1alpha1.KindMCPServer, "default", "git")
	since := time.Date(2026, 11, 24, 13, 0, 0, 0, time.UTC)

	o, err := New(&CRStatus{Client: cp.Client, Namespace: "default"})
	require.NoError(t, err)
	require.NoError(t, o.Set(Record{Key: k, State: StateStopped, Reason: "maintenance", Hash: "h1", Since: since, CorrelationID: "c1"}))
	// A record of a server that is gone needs no patch, and fails nothing.
	require.NoError(t, o.Set(Record{Key: events.NewKey(v1alpha1.KindMCPServer, "default", "gone"), State: StateStopped, Hash: "h"}))
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr))
	require.NotNil(t, cr.Status.Override)
	assert.Equal(t, "stopped", cr.Status.Override.State)
	assert.Equal(t, "maintenance", cr.Status.Override.Reason)
	assert.Equal(t, "mcp-git", cr.Spec.Command, "the spec is untouched")

	// musterd restarts: the stop is read back.
	o, err = New(&CRStatus{Client: cp.Client})
	require.NoError(t, err)
	ov := o.Override(k, "h1")
	assert.True(t, ov.Stop)
	assert.Equal(t, "maintenance", ov.Reason)
	r, ok := o.Get(k)
	require.True(t, ok)
	assert.Equal(t, since, r.Since)

	// A start drops it from the status.
	require.NoError(t, o.Clear(k))
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(cr), cr))
	assert.Nil(t, cr.Status.Override)
}
