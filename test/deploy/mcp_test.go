package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// config/mcp serves the MCP endpoint to the cluster through a Service that
// selects the leader's pod alone, by the label musterd keeps on it
// (cmd/musterd's TestE2EKubeMCPIsRoutedToTheLeader shows the label
// follows the lease).
func TestMCPOverlayRoutesMCPToTheLeader(t *testing.T) {
	r := renderDir(t, "mcp")
	d := only[*appsv1.Deployment](t, r, "musterd")
	c := d.Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "--mcp-listen=:8090")
	assert.Contains(t, c.Args, "--leader-elect", "the label follows the lease")
	envs := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		envs[e.Name] = e
	}
	require.NotNil(t, envs["POD_NAME"].ValueFrom)
	assert.Equal(t, "metadata.name", envs["POD_NAME"].ValueFrom.FieldRef.FieldPath)
	token := envs["MUSTERD_TOKEN"].ValueFrom.SecretKeyRef
	require.NotNil(t, token)
	assert.False(t, *token.Optional, "the MCP listener refuses to start off loopback without a token")
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	assert.Equal(t, map[string]int32{"health": healthPort, "mcp": 8090}, ports)

	svc := only[*corev1.Service](t, r, "musterd-mcp")
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "musterd", "musterd.giantswarm.io/mcp": "leader"}, svc.Spec.Selector)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, "mcp", svc.Spec.Ports[0].TargetPort.String())
	assert.Equal(t, namespace, svc.Namespace)

	assert.Equal(t, []string{"/pods patch"}, grants(t, only[*rbacv1.Role](t, r, "musterd-mcp-role").Rules), "its own pod's label, nothing read")
	rb := only[*rbacv1.RoleBinding](t, r, "musterd-mcp-role")
	assert.Equal(t, []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}}, rb.Subjects)

	// config/default is all there, unchanged but for the Deployment.
	only[*corev1.Service](t, r, "musterd-metrics")
	only[*rbacv1.Role](t, r, "musterd-leader-election")
}
