package main

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
)

// A change of a workflow's definition has every workflow that calls it,
// directly or through others, validated again through the pipeline: what
// a workflow needs is what the workflows it calls need, at any depth.
func TestAChangedWorkflowsCallersAtAnyDepthAreValidatedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quiet := slog.New(slog.DiscardHandler)
		b := bus.New(bus.Options{Logger: quiet})
		defer b.Close()
		ix, cat := resources.New(), catalogue.New(catalogue.Options{})
		_, component, err := newWorkflowEngine("", ix, cat, workflow.New(ix, cat), b, nil, nil, quiet)
		require.NoError(t, err)
		var (
			mu  sync.Mutex
			got []events.Key
		)
		_, err = b.Subscribe(bus.SubscriberOptions{Name: "recorder", Delivery: bus.Unbounded(), Handlers: []bus.Handler{
			bus.On(func(e events.ResourceChanged) {
				if e.Source == events.SourceDependency {
					mu.Lock()
					got = append(got, e.Key)
					mu.Unlock()
				}
			}),
		}})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { _ = component.Start(ctx) }()
		<-component.SubscriptionReady()
		b.Start()

		declare := func(name, tool string) events.Key {
			src := "apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: " + name +
				"\nspec:\n  steps:\n    - {id: s, tool: " + tool + "}\n"
			docs, err := v1alpha1.DecodeFile("workflows/"+name+".yaml", []byte(src))
			require.NoError(t, err)
			key := docs[0].Key()
			ix.SetFile("workflows/"+name+".yaml", []resources.Doc{{Key: key, Object: docs[0].Object, Hash: docs[0].Hash}}, nil, key)
			b.Publish(events.ResourceChanged{Meta: events.NewMeta(""), Key: key, Operation: events.OperationCreate, Source: events.SourceFilesystem})
			synctest.Wait()
			return key
		}
		taken := func() []events.Key {
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			out := got
			got = nil
			return out
		}
		// top → mid → deep, and a cycle a → b → a beside them.
		top := declare("top", "workflow_mid")
		mid := declare("mid", "workflow_deep")
		declare("a", "workflow_b")
		b2 := declare("b", "workflow_a")
		taken()

		declare("deep", "x_fake_echo") // declared at last: mid and top may run now
		assert.Equal(t, []events.Key{mid, top}, taken(), "the caller and the caller's caller")

		ix.RemoveFile("workflows/deep.yaml")
		b.Publish(events.ResourceChanged{Meta: events.NewMeta(""), Key: events.NewKey(v1alpha1.KindWorkflow, "default", "deep"),
			Operation: events.OperationDelete, Source: events.SourceFilesystem})
		assert.Equal(t, []events.Key{mid, top}, taken(), "and again when it is gone")

		declare("a", "workflow_b")
		assert.Equal(t, []events.Key{b2}, taken(), "a cycle's closure ends, without the changed workflow itself")
	})
}
