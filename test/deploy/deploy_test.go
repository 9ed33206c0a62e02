package deploy_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/musterd/musterd/internal/kubetest"
	"github.com/musterd/musterd/internal/modroot"
)

// The names config/default gives musterd's objects.
const (
	namespace      = "musterd-system"
	serviceAccount = "musterd"
	healthPort     = 8081
)

// rendered is config/default as `kubectl apply -k` sends it: each object
// decoded strictly (unknown or duplicate fields fail) into its Go type.
type rendered struct {
	objects []runtime.Object
	// raw holds the same objects as kustomize rendered them, for applying.
	raw []*unstructured.Unstructured
}

func render(t *testing.T) rendered { return renderDir(t, "default") }

// renderDir renders config/<dir>.
func renderDir(t *testing.T, dir string) rendered {
	t.Helper()
	root, err := modroot.Dir()
	require.NoError(t, err)
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "config", dir))
	require.NoError(t, err, "kustomize build config/"+dir)

	scheme := kubetest.Scheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
	strict := json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme, scheme, json.SerializerOptions{Yaml: true, Strict: true})
	var r rendered
	for _, res := range resMap.Resources() {
		data, err := res.AsYAML()
		require.NoError(t, err)
		obj, _, err := strict.Decode(data, nil, nil)
		require.NoError(t, err, "%s:\n%s", res.CurId(), data)
		r.objects = append(r.objects, obj)
		m, err := res.Map()
		require.NoError(t, err)
		r.raw = append(r.raw, &unstructured.Unstructured{Object: m})
	}
	return r
}

// only returns the one object of type T named name.
func only[T client.Object](t *testing.T, r rendered, name string) T {
	t.Helper()
	var found []T
	for _, obj := range r.objects {
		if o, ok := obj.(T); ok && o.GetName() == name {
			found = append(found, o)
		}
	}
	require.Len(t, found, 1, "%T %s", *new(T), name)
	return found[0]
}

func TestDefaultRendersTheExpectedObjects(t *testing.T) {
	r := render(t)
	var got []string
	for _, obj := range r.objects {
		o := obj.(client.Object)
		got = append(got, fmt.Sprintf("%s %s/%s", obj.GetObjectKind().GroupVersionKind().Kind, o.GetNamespace(), o.GetName()))
	}
	assert.ElementsMatch(t, []string{
		"Namespace /musterd-system",
		"CustomResourceDefinition /mcpservers.muster.giantswarm.io",
		"CustomResourceDefinition /workflows.muster.giantswarm.io",
		"ServiceAccount musterd-system/musterd",
		"ClusterRole /musterd",
		"ClusterRoleBinding /musterd",
		"Role musterd-system/musterd-leader-election",
		"RoleBinding musterd-system/musterd-leader-election",
		"Role musterd-system/musterd-secrets",
		"RoleBinding musterd-system/musterd-secrets",
		"Deployment musterd-system/musterd",
		"Service musterd-system/musterd-metrics",
	}, got)
}

// grants flattens rules into "group/resource verb" lines, failing on
// anything broader than a plain list: wildcards, resource names,
// non-resource URLs.
func grants(t *testing.T, rules []rbacv1.PolicyRule) []string {
	t.Helper()
	var out []string
	for _, rule := range rules {
		assert.Empty(t, rule.ResourceNames)
		assert.Empty(t, rule.NonResourceURLs)
		for _, group := range rule.APIGroups {
			for _, resource := range rule.Resources {
				for _, verb := range rule.Verbs {
					for _, s := range []string{group, resource, verb} {
						assert.NotContains(t, s, "*", "no wildcard in RBAC")
					}
					out = append(out, fmt.Sprintf("%s/%s %s", group, resource, verb))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestRBACGrantsExactlyWhatMusterdNeeds(t *testing.T) {
	r := render(t)
	assert.Equal(t, []string{
		"events.k8s.io/events create",
		"events.k8s.io/events patch",
		"muster.giantswarm.io/mcpservers create",
		"muster.giantswarm.io/mcpservers delete",
		"muster.giantswarm.io/mcpservers get",
		"muster.giantswarm.io/mcpservers list",
		"muster.giantswarm.io/mcpservers update",
		"muster.giantswarm.io/mcpservers watch",
		"muster.giantswarm.io/mcpservers/status patch",
		"muster.giantswarm.io/mcpservers/status update",
		"muster.giantswarm.io/workflows create",
		"muster.giantswarm.io/workflows delete",
		"muster.giantswarm.io/workflows get",
		"muster.giantswarm.io/workflows list",
		"muster.giantswarm.io/workflows update",
		"muster.giantswarm.io/workflows watch",
		"muster.giantswarm.io/workflows/status patch",
		"muster.giantswarm.io/workflows/status update",
	}, grants(t, only[*rbacv1.ClusterRole](t, r, "musterd").Rules), "ClusterRole: read the resources, write their status, change them when the core tools ask, record events")
	assert.Equal(t, []string{
		"coordination.k8s.io/leases create",
		"coordination.k8s.io/leases get",
		"coordination.k8s.io/leases update",
	}, grants(t, only[*rbacv1.Role](t, r, "musterd-leader-election").Rules), "Role, in musterd's namespace only: the leader election Lease")
	assert.Equal(t, []string{"/secrets get"}, grants(t, only[*rbacv1.Role](t, r, "musterd-secrets").Rules),
		"Role, in musterd's namespace only: token exchange's client credentials")

	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}}
	crb := only[*rbacv1.ClusterRoleBinding](t, r, "musterd")
	assert.Equal(t, subject, crb.Subjects)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "musterd"}, crb.RoleRef)
	for _, name := range []string{"musterd-leader-election", "musterd-secrets"} {
		rb := only[*rbacv1.RoleBinding](t, r, name)
		assert.Equal(t, subject, rb.Subjects)
		assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}, rb.RoleRef)
	}
}

func TestDeploymentRunsKubernetesModeLockedDown(t *testing.T) {
	r := render(t)
	d := only[*appsv1.Deployment](t, r, "musterd")
	require.NotNil(t, d.Spec.Replicas)
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	assert.Equal(t, serviceAccount, pod.ServiceAccountName)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]

	assert.Equal(t, "run", c.Args[0])
	for _, arg := range []string{"--kubernetes", "--leader-elect", fmt.Sprintf("--health-listen=:%d", healthPort), "--leader-election-namespace=$(POD_NAMESPACE)"} {
		assert.Contains(t, c.Args, arg)
	}
	for _, arg := range c.Args {
		assert.False(t, strings.HasPrefix(arg, "--listen") || strings.HasPrefix(arg, "--allow-remote"), "the API stays on loopback: %s", arg)
	}
	require.Len(t, c.Ports, 1)
	assert.Equal(t, corev1.ContainerPort{Name: "health", ContainerPort: healthPort, Protocol: corev1.ProtocolTCP}, c.Ports[0], "the port --health-listen serves")
	require.NotNil(t, c.LivenessProbe)
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "health", c.LivenessProbe.HTTPGet.Port.String())
	assert.Equal(t, "health", c.ReadinessProbe.HTTPGet.Port.String())

	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.True(t, *sc.RunAsNonRoot)
	assert.NotZero(t, *sc.RunAsUser)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.True(t, *pod.SecurityContext.RunAsNonRoot)

	envs := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		envs[e.Name] = e
	}
	assert.Equal(t, "metadata.namespace", envs["POD_NAMESPACE"].ValueFrom.FieldRef.FieldPath)
	token := envs["MUSTERD_TOKEN"].ValueFrom.SecretKeyRef
	require.NotNil(t, token, "the API token comes from a Secret, never from the manifest")
	assert.True(t, *token.Optional)

	svc := only[*corev1.Service](t, r, "musterd-metrics")
	assert.Equal(t, d.Spec.Selector.MatchLabels, svc.Spec.Selector, "the Service selects musterd's pods")
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, d.Spec.Template.Labels[k])
	}
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, "health", svc.Spec.Ports[0].TargetPort.String())

	for _, obj := range r.objects {
		o := obj.(client.Object)
		switch obj.(type) {
		case *corev1.Namespace, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding, *apiextensionsv1.CustomResourceDefinition:
			assert.Empty(t, o.GetNamespace(), o.GetName())
		default:
			assert.Equal(t, namespace, o.GetNamespace(), "%T %s", obj, o.GetName())
		}
	}
}

// TestManifestsApplyAndGrantLeastPrivilege applies everything config/default
// renders to a real API server, then asks its authorizer (SubjectAccessReview)
// what musterd's ServiceAccount may do.
func TestManifestsApplyAndGrantLeastPrivilege(t *testing.T) {
	r := render(t)
	cp := kubetest.Start(t, kubetest.Options{})
	ctx := t.Context()
	for _, obj := range r.raw {
		// Server-side apply, as `kubectl apply --server-side` would; the
		// CRDs are installed already and apply unchanged over themselves.
		require.NoError(t, cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership),
			"%s %s", obj.GetKind(), obj.GetName())
	}

	user := fmt.Sprintf("system:serviceaccount:%s:%s", namespace, serviceAccount)
	can := func(verb, group, resource, subresource, ns string) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   user,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: group, Resource: resource, Subresource: subresource, Namespace: ns,
			},
		}}
		require.NoError(t, cp.Client.Create(ctx, review))
		return review.Status.Allowed
	}
	const group = "muster.giantswarm.io"
	for _, allowed := range []struct{ verb, group, resource, sub, ns string }{
		{"list", group, "mcpservers", "", ""},
		{"watch", group, "workflows", "", ""},
		{"get", group, "mcpservers", "", "team-a"},
		{"update", group, "mcpservers", "status", "team-a"},
		{"patch", group, "workflows", "status", "team-b"},
		{"create", "events.k8s.io", "events", "", "team-a"},
		{"patch", "events.k8s.io", "events", "", "team-a"},
		{"create", "coordination.k8s.io", "leases", "", namespace},
		{"update", "coordination.k8s.io", "leases", "", namespace},
		{"get", "", "secrets", "", namespace}, // token exchange's client credentials
		// The core tools create, update and delete definitions when asked.
		{"update", group, "mcpservers", "", "team-a"},
		{"create", group, "workflows", "", "team-a"},
		{"delete", group, "mcpservers", "", "team-a"},
	} {
		assert.True(t, can(allowed.verb, allowed.group, allowed.resource, allowed.sub, allowed.ns), "%+v", allowed)
	}
	for _, denied := range []struct{ verb, group, resource, sub, ns string }{
		{"patch", group, "mcpservers", "", "team-a"}, // the core tools update, never patch
		{"deletecollection", group, "workflows", "", "team-a"},
		{"get", "", "secrets", "", "team-a"}, // Secrets at home only
		{"list", "", "secrets", "", namespace},
		{"create", "", "events", "", "team-a"},                    // the recorder writes events.k8s.io Events only
		{"create", "coordination.k8s.io", "leases", "", "team-a"}, // Leases only at home
		{"delete", "coordination.k8s.io", "leases", "", namespace},
		{"update", "apiextensions.k8s.io", "customresourcedefinitions", "", ""},
	} {
		assert.False(t, can(denied.verb, denied.group, denied.resource, denied.sub, denied.ns), "%+v", denied)
	}

	var d appsv1.Deployment
	require.NoError(t, cp.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "musterd"}, &d), "the Deployment is stored")
	assert.Equal(t, int32(2), *d.Spec.Replicas)
}
