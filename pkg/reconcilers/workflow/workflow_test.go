package workflow_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
)

const src = `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: deploy
spec:
  steps:
    - id: build
      tool: x_docker_build
      condition:
        tool: x_git_status
        expect:
          success: true
    - id: fan
      parallel:
        - id: a
          tool: x_k8s_apply
        - id: b
          tool: x_docker_build
  onFailure:
    - id: cleanup
      tool: x_k8s_delete
`

func TestValidWorkflowRecordsStepsAndTools(t *testing.T) {
	ix := resources.New()
	r := workflow.New(ix)
	key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
	docs, err := v1alpha1.DecodeFile("workflows/deploy.yaml", []byte(src))
	require.NoError(t, err)
	require.Len(t, docs, 1)
	require.NoError(t, docs[0].Err)
	ix.SetFile("workflows/deploy.yaml", []resources.Doc{{Key: docs[0].Key(), Object: docs[0].Object, Hash: docs[0].Hash}}, nil, key)

	res := r.Reconcile(context.Background(), reconcilers.Request{Key: key, Attempt: 1})
	require.NoError(t, res.Err)
	st, ok := r.Status(key)
	require.True(t, ok)
	assert.Equal(t, v1alpha1.WorkflowStatus{Valid: true, StepCount: 2,
		ReferencedTools: []string{"x_docker_build", "x_git_status", "x_k8s_apply", "x_k8s_delete"}}, st)
}

func TestInvalidWorkflowListsItsValidationErrors(t *testing.T) {
	ix := resources.New()
	r := workflow.New(ix)
	key := events.NewKey(v1alpha1.KindWorkflow, "", "empty")
	docs, err := v1alpha1.DecodeFile("workflows/empty.yaml", []byte("apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: empty\nspec:\n  steps: []\n"))
	require.NoError(t, err)
	require.Error(t, docs[0].Err)
	ix.SetFile("workflows/empty.yaml", []resources.Doc{{Key: docs[0].Key(), Err: docs[0].Err}}, nil, key)

	res := r.Reconcile(context.Background(), reconcilers.Request{Key: key, Attempt: 1})
	assert.True(t, reconcilers.IsPermanent(res.Err))
	st, _ := r.Status(key)
	ws := st.(v1alpha1.WorkflowStatus)
	assert.False(t, ws.Valid)
	require.NotEmpty(t, ws.ValidationErrors)
	assert.Contains(t, ws.ValidationErrors[0], "workflows/empty.yaml:6: spec.steps")
}
