package workflow_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
)

// src names tools in a step, a step's condition, parallel sub-steps, a
// forEach body with a condition, and onFailure.
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
    - id: each
      forEach:
        items: "{{ .input.things }}"
        steps:
          - id: body
            tool: x_k8s_apply
            condition:
              tool: x_k8s_get
              expectNot:
                success: false
  onFailure:
    - id: cleanup
      tool: x_k8s_delete
`

var (
	docker = events.NewKey(v1alpha1.KindMCPServer, "", "docker")
	git    = events.NewKey(v1alpha1.KindMCPServer, "", "git")
	k8s    = events.NewKey(v1alpha1.KindMCPServer, "", "k8s")
)

type harness struct {
	ix  *resources.Index
	cat *catalogue.Catalogue
	r   *workflow.Reconciler
}

func newHarness() *harness {
	h := &harness{ix: resources.New(), cat: catalogue.New(catalogue.Options{})}
	h.r = workflow.New(h.ix, h.cat)
	return h
}

func (h *harness) declare(t *testing.T, path, src string, k events.Key) {
	t.Helper()
	docs, err := v1alpha1.DecodeFile(path, []byte(src))
	require.NoError(t, err)
	var out []resources.Doc
	for _, d := range docs {
		out = append(out, resources.Doc{Key: d.Key(), Object: d.Object, Hash: d.Hash, Err: d.Err, Warnings: d.Warnings.Strings()})
	}
	h.ix.SetFile(path, out, nil, k)
}

func (h *harness) reconcile(t *testing.T, k events.Key) (reconcilers.Result, v1alpha1.WorkflowStatus) {
	t.Helper()
	res := h.r.Reconcile(context.Background(), reconcilers.Request{Key: k, Attempt: 1})
	st, ok := h.r.Status(k)
	if !ok {
		return res, v1alpha1.WorkflowStatus{}
	}
	return res, st.(v1alpha1.WorkflowStatus)
}

func TestEveryToolNamedAnywhereIsCheckedAgainstTheCatalogue(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
	h.declare(t, "workflows/deploy.yaml", src, key)
	h.cat.Set(docker, "", []string{"build"})
	h.cat.Set(k8s, "", []string{"apply"})

	res, st := h.reconcile(t, key)
	require.NoError(t, res.Err, "missing tools are no reconcile failure: the state is Synced")
	assert.False(t, st.Valid)
	assert.Equal(t, 3, st.StepCount)
	assert.Equal(t, []string{"x_docker_build", "x_git_status", "x_k8s_apply", "x_k8s_delete", "x_k8s_get"}, st.ReferencedTools)
	assert.Equal(t, []string{"x_git_status", "x_k8s_delete", "x_k8s_get"}, st.MissingTools)
	assert.Equal(t, []string{
		"step build condition: tool x_git_status is not offered by any running server",
		"step each.body condition: tool x_k8s_get is not offered by any running server",
		"onFailure step cleanup: tool x_k8s_delete is not offered by any running server",
	}, st.ValidationErrors)
	require.Len(t, st.Conditions, 1)
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, workflow.ReasonToolsMissing, st.Conditions[0].Reason)
	assert.Equal(t, "tools not offered by any running server: x_git_status, x_k8s_delete, x_k8s_get", st.Conditions[0].Message)

	// Once servers offer them, the same definition is valid.
	h.cat.Set(git, "", []string{"status"})
	h.cat.Set(k8s, "", []string{"apply", "delete", "get"})
	res, st = h.reconcile(t, key)
	require.NoError(t, res.Err)
	assert.True(t, st.Valid)
	assert.Empty(t, st.MissingTools)
	assert.Empty(t, st.ValidationErrors)
	assert.Equal(t, metav1.ConditionTrue, st.Conditions[0].Status)
	assert.Equal(t, workflow.ReasonValid, st.Conditions[0].Reason)

	// And invalid again when one stops: a tool of a parallel sub-step.
	h.cat.Set(k8s, "", []string{"delete", "get"})
	_, st = h.reconcile(t, key)
	assert.False(t, st.Valid)
	assert.Equal(t, []string{"x_k8s_apply"}, st.MissingTools)
	assert.Equal(t, []string{
		"step fan.a: tool x_k8s_apply is not offered by any running server",
		"step each.body: tool x_k8s_apply is not offered by any running server",
	}, st.ValidationErrors)
}

func TestToolsListsEveryToolOnce(t *testing.T) {
	docs, err := v1alpha1.DecodeFile("workflows/deploy.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, []string{"x_docker_build", "x_git_status", "x_k8s_apply", "x_k8s_delete", "x_k8s_get"},
		workflow.Tools(docs[0].Object.(*v1alpha1.Workflow)))
}

func TestInvalidWorkflowListsItsValidationErrors(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "empty")
	h.declare(t, "workflows/empty.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: empty\nspec:\n  steps: []\n", key)

	res, st := h.reconcile(t, key)
	assert.True(t, reconcilers.IsPermanent(res.Err))
	assert.False(t, st.Valid)
	require.NotEmpty(t, st.ValidationErrors)
	assert.Contains(t, st.ValidationErrors[0], "workflows/empty.yaml:6: spec.steps")
	assert.Equal(t, workflow.ReasonInvalid, st.Conditions[0].Reason)
}

func TestAnInvalidEditKeepsTheLastGoodDefinitionInForce(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
	h.declare(t, "workflows/deploy.yaml", src, key)
	h.declare(t, "workflows/deploy.yaml", "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: deploy\nspec:\n  steps: []\n", key)

	res, st := h.reconcile(t, key)
	assert.True(t, reconcilers.IsPermanent(res.Err))
	assert.False(t, st.Valid)
	assert.Contains(t, st.ValidationErrors[0], "workflows/deploy.yaml:6: spec.steps", "the file's error first")
	assert.Equal(t, 3, st.StepCount, "the last good definition is in force")
	assert.Len(t, st.MissingTools, 5)
}

func TestADeletedWorkflowIsForgotten(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
	h.declare(t, "workflows/deploy.yaml", src, key)
	h.reconcile(t, key)
	h.ix.RemoveFile("workflows/deploy.yaml")
	keys, err := h.r.List(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []events.Key{key}, keys)

	res, _ := h.reconcile(t, key)
	require.NoError(t, res.Err)
	assert.True(t, res.Deleted)
	_, ok := h.r.Status(key)
	assert.False(t, ok)
	keys, err = h.r.List(context.Background())
	require.NoError(t, err)
	assert.Empty(t, keys)
}

// A workflow naming tools of a server still starting waits for it: no
// validation error, not invalid, until the start ends. Then it is valid if
// the server offers the tools, and invalid if it failed.
func TestAWorkflowWaitsForAServerStillStarting(t *testing.T) {
	h := newHarness()
	key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
	h.declare(t, "workflows/deploy.yaml", src, key)
	h.cat.Set(docker, "", []string{"build"})
	h.cat.SetStarting(k8s, catalogue.Naming{}, true)
	h.cat.SetStarting(git, catalogue.Naming{}, true)

	res, st := h.reconcile(t, key)
	require.NoError(t, res.Err)
	assert.False(t, st.Valid, "not runnable yet")
	assert.Empty(t, st.ValidationErrors, "not invalid while the servers start")
	assert.Equal(t, []string{"x_git_status", "x_k8s_apply", "x_k8s_delete", "x_k8s_get"}, st.MissingTools)
	assert.Equal(t, metav1.ConditionFalse, st.Conditions[0].Status)
	assert.Equal(t, workflow.ReasonWaitingForServer, st.Conditions[0].Reason)
	assert.Equal(t, "waiting for mcp servers still starting (git, k8s) to offer: x_git_status, x_k8s_apply, x_k8s_delete, x_k8s_get",
		st.Conditions[0].Message)

	// k8s starts with its tools; git fails its start.
	h.cat.SetStarting(k8s, catalogue.Naming{}, false)
	h.cat.Set(k8s, "", []string{"apply", "delete", "get"})
	h.cat.SetStarting(git, catalogue.Naming{}, false)
	_, st = h.reconcile(t, key)
	assert.False(t, st.Valid)
	assert.Equal(t, []string{"x_git_status"}, st.MissingTools)
	assert.Equal(t, []string{"step build condition: tool x_git_status is not offered by any running server"}, st.ValidationErrors)
	assert.Equal(t, workflow.ReasonToolsMissing, st.Conditions[0].Reason)
}

// TestReadyTransitionsWhenItsStatusChanges pins the Ready condition's
// lastTransitionTime: set when the status changes, kept while it does not,
// whatever its reason and message do meanwhile. Recorded holds the verdict
// without the condition, which Status builds.
func TestReadyTransitionsWhenItsStatusChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness()
		key := events.NewKey(v1alpha1.KindWorkflow, "", "deploy")
		h.declare(t, "workflows/deploy.yaml", src, key)
		ready := func() metav1.Condition {
			t.Helper()
			_, st := h.reconcile(t, key)
			require.Len(t, st.Conditions, 1)
			return st.Conditions[0]
		}
		start := time.Now()

		c := ready()
		assert.Equal(t, workflow.ReasonToolsMissing, c.Reason)
		assert.WithinDuration(t, start, c.LastTransitionTime.Time, 0)

		// Other tools missing: another message, the same status.
		time.Sleep(time.Minute)
		h.cat.Set(git, "", []string{"status"})
		c = ready()
		assert.Equal(t, "tools not offered by any running server: x_docker_build, x_k8s_apply, x_k8s_delete, x_k8s_get", c.Message)
		assert.WithinDuration(t, start, c.LastTransitionTime.Time, 0)

		// Every tool offered: True from now.
		time.Sleep(time.Minute)
		h.cat.Set(docker, "", []string{"build"})
		h.cat.Set(k8s, "", []string{"apply", "delete", "get"})
		c = ready()
		assert.Equal(t, metav1.ConditionTrue, c.Status)
		valid := start.Add(2 * time.Minute)
		assert.WithinDuration(t, valid, c.LastTransitionTime.Time, 0)

		time.Sleep(time.Minute)
		assert.WithinDuration(t, valid, ready().LastTransitionTime.Time, 0, "still valid: no transition")

		// A server gone: False again, from now.
		time.Sleep(time.Minute)
		h.cat.Set(docker, "", nil)
		c = ready()
		assert.Equal(t, metav1.ConditionFalse, c.Status)
		assert.WithinDuration(t, start.Add(4*time.Minute), c.LastTransitionTime.Time, 0)

		recorded, ok := h.r.Recorded(key)
		require.True(t, ok)
		assert.Nil(t, recorded.Conditions, "Recorded is the verdict; Status builds the condition")
		assert.Equal(t, []string{"x_docker_build"}, recorded.MissingTools)
	})
}
