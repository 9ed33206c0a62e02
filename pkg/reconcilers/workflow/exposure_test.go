package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
)

// A tool that an exposure policy hides, renames away or holds back in a
// conflict is missing, and the validation error says which and why.
func TestAToolAPolicyHidesIsMissingNamingThePolicy(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
	h.declare(t, "workflows/deploy.yaml", src, key)
	h.cat.Set(docker, "", []string{"build"})
	h.cat.Set(git, "", []string{"status"})
	h.cat.Set(k8s, "", []string{"apply", "delete", "get"})
	_, st := h.reconcile(t, key)
	require.True(t, st.Valid)

	p, err := catalogue.ParseExposure(`tools: {exclude: [get], overrides: {delete: {name: remove}}}`)
	require.NoError(t, err)
	h.cat.SetExposure(k8s, p)
	other, err := catalogue.ParseExposure(`prefix: x_git`)
	require.NoError(t, err)
	other2 := events.NewKey(v1alpha1.KindMCPServer, "", "other")
	h.cat.SetExposure(other2, other)
	h.cat.Set(other2, "", []string{"status"})

	_, st = h.reconcile(t, key)
	assert.False(t, st.Valid)
	assert.Equal(t, []string{"x_git_status", "x_k8s_delete", "x_k8s_get"}, st.MissingTools)
	assert.Equal(t, []string{
		"step build condition: tool x_git_status is not exposed: held back: exposed by MCPServer default/git and MCPServer default/other at once, a conflict",
		"step each.body condition: tool x_k8s_get is not exposed: MCPServer default/k8s's exposure policy (metadata.annotations[musterd.io/exposure]) leaves it out: tools.exclude[0] \"get\"",
		"onFailure step cleanup: tool x_k8s_delete is not exposed: MCPServer default/k8s's exposure policy (metadata.annotations[musterd.io/exposure]) exposes it as x_k8s_remove",
	}, st.ValidationErrors)
	assert.Equal(t, workflow.ReasonToolsMissing, st.Conditions[0].Reason)
	assert.Contains(t, st.Conditions[0].Message, "x_k8s_get: MCPServer default/k8s's exposure policy")

	h.cat.SetExposure(k8s, nil)
	h.cat.Remove(other2)
	_, st = h.reconcile(t, key)
	assert.True(t, st.Valid, "the policy lifted and the conflict over: valid again")
}
