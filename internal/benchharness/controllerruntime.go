package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/musterd/musterd/pkg/events"
)

// crRuns names each controller uniquely: controller-runtime's metrics are
// labelled by controller name, and name validation is skipped only for
// reuse, not for distinct runs.
var crRuns atomic.Int64

// noopControllerRuntime: the same keys through a controller-runtime
// controller (controller.NewUnmanaged, its defaults: priority queue, the
// default rate limiter, panic recovery and its default metrics, which its
// package registers on init) with the same workers and a no-op reconciler
// that counts as noop does. Each key is one event on a source.TypedChannel
// whose handler enqueues the key's request, as a controller fed by an
// external source is wired. Reconciles per second, from the first event
// sent until the last key is reconciled.
func noopControllerRuntime(keys []events.Key) (noopRun, error) {
	var n atomic.Int64
	target := int64(len(keys))
	done := make(chan struct{})
	rec := reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		if n.Add(1) == target {
			close(done)
		}
		return reconcile.Result{}, nil
	})
	skip := true
	ctrl, err := controller.NewUnmanaged(fmt.Sprint("bench-", crRuns.Add(1)), controller.Options{
		Reconciler:              rec,
		MaxConcurrentReconciles: noopWorkers,
		SkipNameValidation:      &skip,
		Logger:                  logr.Discard(),
	})
	if err != nil {
		return noopRun{}, err
	}
	ch := make(chan event.TypedGenericEvent[events.Key], 1024)
	enqueue := handler.TypedFuncs[events.Key, reconcile.Request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[events.Key], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(reconcile.Request{NamespacedName: k8stypes.NamespacedName{Namespace: e.Object.Namespace, Name: e.Object.Name}})
		},
	}
	if err := ctrl.Watch(source.TypedChannel[events.Key, reconcile.Request](ch, enqueue)); err != nil {
		return noopRun{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- ctrl.Start(ctx) }()
	// The controller has started its sources once it takes an event; the
	// clock starts after that warm-up event is reconciled.
	warm := events.NewKey(noopKind, "", "warm-up")
	target++
	ch <- event.TypedGenericEvent[events.Key]{Object: warm}
	for n.Load() == 0 {
		select {
		case err := <-stopped:
			return noopRun{}, fmt.Errorf("controller-runtime controller stopped: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	watch := startStopwatch()
	for _, k := range keys {
		ch <- event.TypedGenericEvent[events.Key]{Object: k}
	}
	<-done
	run := watch.stop(len(keys))
	cancel()
	if err := <-stopped; err != nil {
		return noopRun{}, err
	}
	return run, nil
}
