package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/statusync"
)

// These unit tests use controller-runtime's fake client to inject the API
// errors a real server will not produce on demand; the envtest tests write
// to a real API server.

var gitKey = events.NewKey(v1alpha1.KindMCPServer, "team", "git")

func running(gen int64, at time.Time) v1alpha1.MCPServerStatus {
	st := v1alpha1.MCPServerStatus{State: v1alpha1.MCPServerStateRunning, ObservedGeneration: gen,
		Tools: []string{"x_git_log"}, ToolCount: 1, LastConnected: &metav1.Time{Time: at}}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: "Running", Message: "serving 1 tools", ObservedGeneration: gen})
	return st
}

type fixture struct {
	client   client.WithWatch
	writer   *Writer
	observed map[events.Key]any
	defErr   error
	updates  int
}

func newFixture(t *testing.T, funcs interceptor.Funcs, elected <-chan struct{}) *fixture {
	s := runtime.NewScheme()
	require.NoError(t, v1alpha1.AddToScheme(s))
	f := &fixture{observed: map[events.Key]any{}}
	obj := &v1alpha1.MCPServer{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "git", Generation: 2},
		Spec: v1alpha1.MCPServerSpec{Type: v1alpha1.MCPServerTypeStdio, Command: "git-mcp"}}
	countUpdates := funcs.SubResourceUpdate
	funcs.SubResourceUpdate = func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
		f.updates++
		if countUpdates != nil {
			return countUpdates(ctx, c, sub, o, opts...)
		}
		return c.SubResource(sub).Update(ctx, o, opts...)
	}
	f.client = interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).WithObjects(obj).
		WithStatusSubresource(&v1alpha1.MCPServer{}, &v1alpha1.Workflow{}).Build(), funcs)
	var err error
	f.writer, err = New(Options{
		Client:          f.client,
		ResourceStatus:  func(k events.Key) (any, bool) { st, ok := f.observed[k]; return st, ok },
		DefinitionError: func(events.Key) error { return f.defErr },
		Elected:         elected,
	})
	require.NoError(t, err)
	return f
}

func (f *fixture) get(t *testing.T) *v1alpha1.MCPServer {
	var obj v1alpha1.MCPServer
	require.NoError(t, f.client.Get(t.Context(), client.ObjectKey{Namespace: "team", Name: "git"}, &obj))
	return &obj
}

func synced() statusync.Status {
	return statusync.Status{Key: gitKey, State: statusync.StateSynced}
}

func TestTheReconcilersStatusIsWrittenOnceAndThenSkippedUntilItChanges(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC) // sub-second: the API server keeps seconds
	f.observed[gitKey] = running(2, at)

	require.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	got := f.get(t).Status
	assert.Equal(t, v1alpha1.MCPServerStateRunning, got.State)
	assert.Equal(t, int64(2), got.ObservedGeneration)
	assert.Equal(t, 1, got.ToolCount)
	assert.True(t, meta.IsStatusConditionTrue(got.Conditions, v1alpha1.ConditionReady))
	assert.Equal(t, 1, f.updates)

	require.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	require.NoError(t, f.writer.WriteStatus(t.Context(), statusync.Status{Key: gitKey, State: statusync.StateReconciling}))
	assert.Equal(t, 1, f.updates, "nothing changed, nothing written")

	f.observed[gitKey] = running(3, at)
	require.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	assert.Equal(t, 2, f.updates)
	assert.Equal(t, int64(3), f.get(t).Status.ObservedGeneration)
}

func TestAConflictIsRetriedOnTheObjectReadAgain(t *testing.T) {
	conflicts := 2
	f := newFixture(t, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			if conflicts > 0 {
				conflicts--
				// Someone else writes meanwhile: the retry must read
				// their version, or the write would conflict for ever.
				other := &v1alpha1.MCPServer{}
				if err := c.Get(ctx, client.ObjectKeyFromObject(o), other); err != nil {
					return err
				}
				other.Status = &v1alpha1.MCPServerStatus{RestartCount: 7}
				if err := c.SubResource(sub).Update(ctx, other); err != nil {
					return err
				}
				return c.SubResource(sub).Update(ctx, o, opts...) // stale resourceVersion: a real conflict
			}
			return c.SubResource(sub).Update(ctx, o, opts...)
		},
	}, nil)
	f.observed[gitKey] = running(2, time.Now())
	require.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	assert.Equal(t, 3, f.updates, "two conflicts, then the write")
	assert.Equal(t, v1alpha1.MCPServerStateRunning, f.get(t).Status.State)
}

func TestConflictsThatOutlastTheRetriesAreCategorized(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mcpservers"}, "git", errors.New("modified"))
		},
	}, nil)
	f.observed[gitKey] = running(2, time.Now())
	err := f.writer.WriteStatus(t.Context(), synced())
	require.Error(t, err)
	assert.Equal(t, CategoryConflictAfterRetries, statusync.CategoryOf(err))
	assert.Contains(t, err.Error(), "MCPServer/team/git")
}

func TestADeletedResourceIsNoError(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	require.NoError(t, f.client.Delete(t.Context(), f.get(t)))
	f.observed[gitKey] = running(2, time.Now())
	assert.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	assert.NoError(t, f.writer.DeleteStatus(t.Context(), gitKey))
	assert.Zero(t, f.updates)
}

func TestAFollowerWritesNothingUntilElected(t *testing.T) {
	elected := make(chan struct{})
	f := newFixture(t, interceptor.Funcs{}, elected)
	f.observed[gitKey] = running(2, time.Now())
	require.ErrorIs(t, f.writer.WriteStatus(t.Context(), synced()), statusync.ErrSkipped,
		"a follower says it skipped the write, which the store must not count as written")
	assert.Zero(t, f.updates)
	close(elected)
	require.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	assert.Equal(t, 1, f.updates)
}

func TestAnInvalidDefinitionShowsWithTheGenerationRejected(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	f.observed[gitKey] = running(1, time.Now()) // generation 1 runs; 2 was rejected
	f.defErr = errors.New("MCPServer/team/git (generation 2): spec.command: required")
	require.NoError(t, f.writer.WriteStatus(t.Context(), statusync.Status{Key: gitKey, State: statusync.StateError, LastError: f.defErr.Error()}))
	got := f.get(t).Status
	assert.Equal(t, int64(2), got.ObservedGeneration)
	assert.Equal(t, f.defErr.Error(), got.LastError)
	ready := meta.FindStatusCondition(got.Conditions, v1alpha1.ConditionReady)
	require.NotNil(t, ready)
	assert.Equal(t, metav1.ConditionFalse, ready.Status)
	assert.Equal(t, ReasonInvalidDefinition, ready.Reason)
	assert.Equal(t, int64(2), ready.ObservedGeneration)
}

func TestAFailedReconcileWithNoObservationIsShown(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	require.NoError(t, f.writer.WriteStatus(t.Context(), statusync.Status{Key: gitKey, State: statusync.StateFailed, LastError: "exec: git-mcp: not found"}))
	got := f.get(t).Status
	assert.Equal(t, v1alpha1.MCPServerStateFailed, got.State)
	assert.Equal(t, "exec: git-mcp: not found", got.LastError)
	assert.False(t, meta.IsStatusConditionTrue(got.Conditions, v1alpha1.ConditionReady))
}

func TestADisabledKindShowsAsAConditionUntilEnabled(t *testing.T) {
	f := newFixture(t, interceptor.Funcs{}, nil)
	f.observed[gitKey] = running(2, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	disabled := synced()
	disabled.ReconcileDisabled = true
	require.NoError(t, f.writer.WriteStatus(t.Context(), disabled))
	got := f.get(t).Status
	c := meta.FindStatusCondition(got.Conditions, ConditionReconciliationDisabled)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, ReasonDisabledByOperator, c.Reason)
	assert.Contains(t, c.Message, "reconciliation of MCPServer is disabled")
	assert.True(t, meta.IsStatusConditionTrue(got.Conditions, v1alpha1.ConditionReady), "the reconciler's own conditions stay")
	// Disabled since long ago, as the stored condition says: a later write
	// keeps that.
	obj := f.get(t)
	since := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	meta.FindStatusCondition(obj.Status.Conditions, ConditionReconciliationDisabled).LastTransitionTime = since
	require.NoError(t, f.client.Status().Update(t.Context(), obj))
	f.observed[gitKey] = running(3, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	require.NoError(t, f.writer.WriteStatus(t.Context(), disabled))
	c = meta.FindStatusCondition(f.get(t).Status.Conditions, ConditionReconciliationDisabled)
	require.NotNil(t, c)
	assert.True(t, since.Equal(&c.LastTransitionTime), "disabled since: %v", c.LastTransitionTime)

	require.NoError(t, f.writer.WriteStatus(t.Context(), synced()))
	assert.Nil(t, meta.FindStatusCondition(f.get(t).Status.Conditions, ConditionReconciliationDisabled), "enabled again: gone")
}

func TestEveryFailureHasItsCategory(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mcpservers"}
	noCRD := apierrors.NewNotFound(gr, "")
	for want, err := range map[string]error{
		CategoryCRDNotFound:          &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.GroupName, Kind: "MCPServer"}},
		CategoryAuthenticationFailed: apierrors.NewUnauthorized("bad token"),
		CategoryPermissionDenied:     apierrors.NewForbidden(gr, "git", errors.New("rbac")),
		CategoryTimeout:              apierrors.NewTimeoutError("slow", 1),
		CategoryAPIServerUnreachable: &url.Error{Op: "Put", URL: "https://10.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		CategoryOther:                errors.New("something else"),
	} {
		assert.Equal(t, want, Category(err), "%v", err)
		f := newFixture(t, interceptor.Funcs{
			Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
				return err
			},
		}, nil)
		werr := f.writer.WriteStatus(t.Context(), synced())
		require.Error(t, werr, want)
		assert.Equal(t, want, statusync.CategoryOf(werr), "%v", werr)
	}
	assert.Equal(t, CategoryCRDNotFound, Category(noCRD))
	assert.Equal(t, CategoryTimeout, Category(fmt.Errorf("put: %w", context.DeadlineExceeded)))
}
