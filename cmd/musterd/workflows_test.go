package main

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
)

// The workflow-tools component refreshes a workflow's tool when the
// workflow is reconciled, and drops it when the workflow is deleted even
// if no reconcile follows, as while Workflow reconciles are disabled.
func TestWorkflowToolsFollowReconcilesAndDeletes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quiet := slog.New(slog.DiscardHandler)
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		ix, cat := resources.New(), catalogue.New(catalogue.Options{})
		cat.Set(events.NewKey(v1alpha1.KindMCPServer, "", "fake"), "", []string{"echo"})
		verdicts := workflow.New(ix, cat)
		engine, component, err := newWorkflowEngine("", ix, cat, verdicts, b, nil, nil, quiet)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = component.Start(ctx) }()
		<-component.SubscriptionReady()
		b.Start()

		src := "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: greet\nspec:\n  steps:\n    - {id: s, tool: x_fake_echo}\n"
		docs, err := v1alpha1.DecodeFile("workflows/greet.yaml", []byte(src))
		require.NoError(t, err)
		key := docs[0].Key()
		ix.SetFile("workflows/greet.yaml", []resources.Doc{{Key: key, Object: docs[0].Object, Hash: docs[0].Hash}}, nil, key)
		verdicts.Reconcile(ctx, reconcilers.Request{Key: key, Attempt: 1})
		synctest.Wait()
		assert.NotContains(t, toolNamesOf(engine.Tools()), "workflow_greet", "not reconciled as far as the bus says")

		b.Publish(events.ResourceSynced{Meta: events.NewMeta(""), Key: key})
		synctest.Wait()
		assert.Contains(t, toolNamesOf(engine.Tools()), "workflow_greet")

		ix.RemoveFile("workflows/greet.yaml")
		b.Publish(events.ResourceChanged{Meta: events.NewMeta(""), Key: key, Operation: events.OperationDelete, Source: events.SourceFilesystem})
		synctest.Wait()
		assert.NotContains(t, toolNamesOf(engine.Tools()), "workflow_greet", "deleted, with no reconcile after")
	})
}

func toolNamesOf(tools []*mcp.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}
