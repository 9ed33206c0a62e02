package kube

import (
	"context"
	"errors"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/statusync"
)

// The categories are label values of musterd_status_sync_failures_total
// and words in the logs, so dashboards and alerts depend on their
// spelling: these are the seven the Kubernetes-mode issue names, spelled
// out here rather than through the constants, which a rename would carry
// along unnoticed.
func TestFailureCategoriesAreSpelledAsDocumented(t *testing.T) {
	gr := schema.GroupResource{Group: v1alpha1.GroupName, Resource: "mcpservers"}
	for want, err := range map[string]error{
		"crd_not_found":          &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: v1alpha1.GroupName, Kind: "MCPServer"}},
		"api_server_unreachable": &url.Error{Op: "Put", URL: "https://10.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}},
		"timeout":                apierrors.NewTimeoutError("slow", 1),
		"permission_denied":      apierrors.NewForbidden(gr, "git", errors.New("rbac")),
		"authentication_failed":  apierrors.NewUnauthorized("bad token"),
		"other":                  errors.New("something else"),
	} {
		assert.Equal(t, want, Category(err), "%v", err)
	}

	f := newFixture(t, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return apierrors.NewConflict(gr, "git", errors.New("modified"))
		},
	}, nil)
	f.observed[gitKey] = running(2, time.Now())
	assert.Equal(t, "conflict_after_retries", statusync.CategoryOf(f.writer.WriteStatus(t.Context(), synced())))
}
