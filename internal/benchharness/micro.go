package main

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	evbus "github.com/asaskevich/EventBus"
	"k8s.io/client-go/util/workqueue"

	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/reconcilers"
)

// median returns the median of vs, which it sorts.
func median(vs []float64) float64 {
	slices.Sort(vs)
	return vs[len(vs)/2]
}

var deliveryEvent = events.ResourceChanged{Key: events.NewKey("Workflow", "default", "bench")}

// measureDelivery: n events from one publisher to a handler on another
// goroutine, until the handler has seen them all; ns per event.
func measureDelivery(cfg config, res *results) {
	n := cfg.microEvents
	perEvent := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	bus1 := func() float64 {
		b := bus.New(bus.Options{Logger: slog.New(slog.DiscardHandler)})
		b.Start()
		defer b.Close()
		var wg sync.WaitGroup
		wg.Add(n)
		if _, err := bus.Subscribe(b, "bench", bus.Lossy(n+1), func(events.ResourceChanged) { wg.Done() }); err != nil {
			panic(err)
		}
		start := time.Now()
		for range n {
			bus.Publish(b, deliveryEvent)
		}
		wg.Wait()
		return perEvent(time.Since(start))
	}
	chan1 := func() float64 {
		ch := make(chan events.Event, 1024)
		done := make(chan struct{})
		go func() {
			for range n {
				<-ch
			}
			close(done)
		}()
		start := time.Now()
		for range n {
			ch <- deliveryEvent
		}
		<-done
		return perEvent(time.Since(start))
	}
	eventbus1 := func() float64 {
		eb := evbus.New()
		var seen atomic.Int64
		if err := eb.SubscribeAsync("t", func(events.ResourceChanged) { seen.Add(1) }, true); err != nil {
			panic(err)
		}
		start := time.Now()
		for range n {
			eb.Publish("t", deliveryEvent)
		}
		eb.WaitAsync()
		if seen.Load() != int64(n) {
			panic(fmt.Sprintf("raw EventBus delivered %d of %d events", seen.Load(), n))
		}
		return perEvent(time.Since(start))
	}
	// The three take turns, so that all see the same load on a shared
	// machine.
	var busNs, chanNs, eventbusNs []float64
	for range max(1, cfg.repeats) {
		busNs = append(busNs, bus1())
		chanNs = append(chanNs, chan1())
		eventbusNs = append(eventbusNs, eventbus1())
	}
	res.set("bus_publish_ns", median(busNs))
	res.set("chan_send_ns", median(chanNs))
	res.set("eventbus_raw_ns", median(eventbusNs))
}

// noopKind is the kind of the no-op reconciles.
const noopKind = "Bench"

// noop is the handler of both no-op measures: it counts, and says when it
// reached its target.
type noop struct {
	n      atomic.Int64
	target int64
	done   chan struct{}
}

func newNoop(target int) *noop { return &noop{target: int64(target), done: make(chan struct{})} }

func (r *noop) Kind() string                               { return noopKind }
func (r *noop) List(context.Context) ([]events.Key, error) { return nil, nil }
func (r *noop) Reconcile(context.Context, reconcilers.Request) reconcilers.Result {
	if r.n.Add(1) == r.target {
		close(r.done)
	}
	return reconcilers.Result{}
}

// noopWorkers is the coordinator's default, which both measures use.
const noopWorkers = 2

// measureNoop: a change of each of n distinct keys published on the bus,
// through debouncer, coordinator, status store and metrics; the same keys
// through a controller-runtime controller (noopControllerRuntime); and the
// same keys added to a plain rate-limiting workqueue drained by the same
// handler with the same workers, the floor of any pipeline that contains
// that queue. Reconciles per second, the three taking turns so that all
// see the same machine; the ratio of the pipeline to controller-runtime is
// the median of each round's ratio, so that a load that changes between
// rounds moves both sides of it. Beside the rates, the process's CPU time
// per reconcile on either side: on a shared machine, where other work
// takes turns on the cores, it tells what each side costs apart from how
// much of the machine it got.
func measureNoop(cfg config, res *results) error {
	n := cfg.noopKeys
	keys := make([]events.Key, n)
	for i := range keys {
		keys[i] = events.NewKey(noopKind, "", fmt.Sprint("k", i))
	}
	var pipe, cr, queue, ratio, pipeCPU, crCPU []float64
	for range max(1, cfg.repeats) {
		v, err := noopPipeline(keys)
		if err != nil {
			return err
		}
		w, err := noopControllerRuntime(keys)
		if err != nil {
			return err
		}
		pipe, cr, ratio = append(pipe, v.perSec), append(cr, w.perSec), append(ratio, v.perSec/w.perSec)
		pipeCPU, crCPU = append(pipeCPU, v.cpuMicros), append(crCPU, w.cpuMicros)
		queue = append(queue, noopWorkqueue(keys))
	}
	res.set("noop_reconciles_per_sec", median(pipe))
	res.set("controller_runtime_reconciles_per_sec", median(cr))
	res.set("noop_per_controller_runtime", median(ratio))
	res.set("noop_cpu_us_per_reconcile", median(pipeCPU))
	res.set("controller_runtime_cpu_us_per_reconcile", median(crCPU))
	res.set("workqueue_reconciles_per_sec", median(queue))
	return nil
}

// noopRun is one no-op run's rate, and the process's CPU time per
// reconcile over it.
type noopRun struct{ perSec, cpuMicros float64 }

// stopwatch times a run by the wall clock and by the process's CPU time
// (user and system, every thread: the collector's too).
type stopwatch struct {
	wall time.Time
	cpu  time.Duration
}

func startStopwatch() stopwatch { return stopwatch{wall: time.Now(), cpu: processCPU()} }

// stop ends a run of n reconciles.
func (s stopwatch) stop(n int) noopRun {
	wall, cpu := time.Since(s.wall), processCPU()-s.cpu
	return noopRun{perSec: float64(n) / wall.Seconds(), cpuMicros: float64(cpu.Microseconds()) / float64(n)}
}

func noopPipeline(keys []events.Key) (noopRun, error) {
	rec := newNoop(len(keys))
	p, err := pipeline.New(pipeline.Options{Logger: slog.New(slog.DiscardHandler), Reconcilers: []reconcilers.Reconciler{rec},
		Coordinator: coordinator.Options{Workers: noopWorkers}})
	if err != nil {
		return noopRun{}, err
	}
	changes := make([]events.ResourceChanged, len(keys))
	for i, k := range keys {
		changes[i] = events.ResourceChanged{Meta: events.NewMeta(""), Key: k, Operation: events.OperationCreate, Source: events.SourceManual}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- p.Run(ctx) }()
	for !p.Components.Ready() {
		select {
		case err := <-stopped:
			return noopRun{}, fmt.Errorf("pipeline: %w", err)
		case <-time.After(time.Millisecond): // before the clock starts
		}
	}
	watch := startStopwatch()
	for i := range changes {
		bus.Publish(p.Bus, changes[i])
	}
	<-rec.done
	run := watch.stop(len(keys))
	cancel()
	if err := <-stopped; err != nil {
		return noopRun{}, err
	}
	return run, nil
}

func noopWorkqueue(keys []events.Key) float64 {
	rec := newNoop(len(keys))
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[events.Key]())
	var wg sync.WaitGroup
	for range noopWorkers {
		wg.Go(func() {
			for {
				key, shutdown := q.Get()
				if shutdown {
					return
				}
				if r := rec.Reconcile(context.Background(), reconcilers.Request{Key: key, Attempt: 1}); r.Err != nil {
					q.AddRateLimited(key)
				} else {
					q.Forget(key)
				}
				q.Done(key)
			}
		})
	}
	start := time.Now()
	for _, k := range keys {
		q.Add(k)
	}
	<-rec.done
	elapsed := time.Since(start)
	q.ShutDown()
	wg.Wait()
	return float64(len(keys)) / elapsed.Seconds()
}
