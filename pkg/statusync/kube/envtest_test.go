package kube

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// A real kube-apiserver answers a write made on a stale object with 409
// Conflict; the writer reads the object again and succeeds.
func TestEnvtestAConflictOnARealAPIServerIsRetried(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := t.Context()
	obj := &v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "git"},
		Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "git-mcp"}}
	require.NoError(t, cp.Client.Create(ctx, obj))

	var attempts, conflicts int
	c, err := client.NewWithWatch(cp.Config, client.Options{Scheme: kubetest.Scheme()})
	require.NoError(t, err)
	intercepted := interceptor.NewClient(c, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			attempts++
			if attempts == 1 {
				// Another writer gets in between this read and this write.
				other := &v1alpha1.MCPServer{}
				require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(o), other))
				other.Status = &v1alpha1.MCPServerStatus{RestartCount: 7}
				require.NoError(t, cp.Client.Status().Update(ctx, other))
			}
			err := c.SubResource(sub).Update(ctx, o, opts...)
			if err != nil {
				conflicts++
			}
			return err
		},
	})
	key := events.NewKey(v1alpha1.KindMCPServer, "default", "git")
	connected := time.Now()
	w, err := New(Options{Client: intercepted, ResourceStatus: func(events.Key) (any, bool) {
		return running(1, connected), true
	}})
	require.NoError(t, err)
	require.NoError(t, w.WriteStatus(ctx, statusync.Status{Key: key, State: statusync.StateSynced}))
	assert.Equal(t, 2, attempts)
	assert.Equal(t, 1, conflicts, "the API server refused the stale write")

	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
	assert.Equal(t, v1alpha1.MCPServerStateRunning, obj.Status.State)
	assert.Equal(t, int64(1), obj.Status.ObservedGeneration)
	assert.Equal(t, []string{"x_git_log"}, obj.Status.Tools)

	// Written once, the same status is not written again.
	require.NoError(t, w.WriteStatus(ctx, statusync.Status{Key: key, State: statusync.StateSynced}))
	assert.Equal(t, 2, attempts, "nothing changed, nothing written")
}
