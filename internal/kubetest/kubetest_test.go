package kubetest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/musterd/musterd/internal/kubetest"
	musterv1alpha1 "github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

// TestControlPlaneStartsRestartsAndStops runs one control plane through the
// life the Kubernetes tests need: CRDs installed, an outage of the API
// server with etcd kept, and the same client working again afterwards.
func TestControlPlaneStartsRestartsAndStops(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	t.Logf("control plane (etcd, kube-apiserver, CRDs) started in %s", cp.StartDuration.Round(time.Millisecond))
	ctx := t.Context()

	version, err := discovery.NewDiscoveryClientForConfigOrDie(cp.Config).ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, kubetest.KubeVersion, version.GitVersion, "the build stamps the server's version")

	server := &musterv1alpha1.MCPServer{
		ObjectMeta: metav1.ObjectMeta{Name: "git", Namespace: "default"},
		Spec:       musterv1alpha1.MCPServerSpec{Type: musterv1alpha1.MCPServerTypeStdio, Command: "git-mcp"},
	}
	require.NoError(t, cp.Client.Create(ctx, server), "the MCPServer CRD is installed")

	// An informer holds a watch open through the stop, as musterd's do.
	informerCtx, stopInformer := context.WithCancel(ctx)
	defer stopInformer()
	factory := informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(cp.Config), 0)
	factory.Core().V1().ConfigMaps().Informer()
	factory.Start(informerCtx.Done())
	for typ, synced := range factory.WaitForCacheSync(informerCtx.Done()) {
		require.True(t, synced, "informer for %v", typ)
	}
	stopping := time.Now()
	cp.StopAPIServer(t)
	t.Logf("kube-apiserver stopped in %s with a watch open", time.Since(stopping).Round(time.Millisecond))
	err = cp.Client.Get(ctx, client.ObjectKeyFromObject(server), &musterv1alpha1.MCPServer{})
	require.Error(t, err, "with the API server stopped, requests fail")

	began := time.Now()
	cp.StartAPIServer(t)
	t.Logf("kube-apiserver restarted in %s", time.Since(began).Round(time.Millisecond))

	var got musterv1alpha1.MCPServer
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKeyFromObject(server), &got),
		"the client made before the outage works after it, and etcd kept the object")
	assert.Equal(t, server.UID, got.UID)
	assert.Equal(t, "git-mcp", got.Spec.Command)
	assert.Equal(t, musterv1alpha1.DefaultMCPServerTimeout, got.Spec.Timeout, "the CRD's defaults apply")
}

func TestUsersAndKubectl(t *testing.T) {
	cp := kubetest.Start(t, kubetest.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	out, err := cp.Kubectl(ctx, t, nil, "version", "-o", "yaml")
	require.NoError(t, err)
	assert.Contains(t, out, "gitVersion: "+kubetest.KubeVersion, "kubectl and the server both report the stamped version")

	out, err = cp.Kubectl(ctx, t, nil, "api-resources", "--api-group", musterv1alpha1.GroupName, "--no-headers")
	require.NoError(t, err)
	assert.Contains(t, out, "mcps")
	assert.Contains(t, out, "wf")

	nobody := cp.AddUser(t, "nobody", "some-group")
	err = (func() error {
		c, err := client.New(nobody.Config(), client.Options{Scheme: kubetest.Scheme()})
		require.NoError(t, err)
		return c.List(ctx, &corev1.NamespaceList{})
	})()
	assert.True(t, apierrors.IsForbidden(err), "a user outside system:masters has no rights without RBAC: %v", err)

	_, err = cp.Kubectl(ctx, t, nobody, "get", "mcps")
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), `User "nobody" cannot list resource "mcpservers"`), err.Error())
}
