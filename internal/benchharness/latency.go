package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/bus"
	"github.com/musterd/musterd/pkg/catalogue"
	"github.com/musterd/musterd/pkg/coordinator"
	"github.com/musterd/musterd/pkg/debouncer"
	"github.com/musterd/musterd/pkg/events"
	"github.com/musterd/musterd/pkg/pipeline"
	"github.com/musterd/musterd/pkg/reconcilers"
	"github.com/musterd/musterd/pkg/reconcilers/workflow"
	"github.com/musterd/musterd/pkg/resources"
	"github.com/musterd/musterd/pkg/watchers/fs"
)

// daemonDebounce is musterd run's default -debounce, the refractory period
// of the change-to-reconcile measure.
const daemonDebounce = 100 * time.Millisecond

// trailingDebounce is muster's design: a change reconciles once its key has
// been quiet this long.
const trailingDebounce = 500 * time.Millisecond

// workflowFile is a workflow definition whose description tells the
// reconciler which write it sees.
func workflowFile(name, description string) []byte {
	return fmt.Appendf(nil, `apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: %s
spec:
  description: %s
  steps:
    - id: only
      tool: x_bench_tool
`, name, description)
}

// call is one reconcile the recorder saw: when it was called and the
// description of the definition in force then.
type call struct {
	at          time.Time
	description string
}

// recorder is the real workflow reconciler, noting every call of one key
// before it runs.
type recorder struct {
	reconcilers.Reconciler
	index *resources.Index
	key   events.Key

	mu    sync.Mutex
	calls []call
	wake  chan struct{}
}

func newRecorder(index *resources.Index, key events.Key) *recorder {
	return &recorder{Reconciler: workflow.New(index, catalogue.New(catalogue.Options{})), index: index, key: key, wake: make(chan struct{}, 1)}
}

func (r *recorder) Reconcile(ctx context.Context, req reconcilers.Request) reconcilers.Result {
	if req.Key == r.key {
		c := call{at: time.Now()}
		if e, ok := r.index.Get(req.Key); ok {
			if wf, ok := e.Object.(*v1alpha1.Workflow); ok {
				c.description = wf.Spec.Description
			}
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
	return r.Reconciler.Reconcile(ctx, req)
}

// since returns the calls from the i-th on.
func (r *recorder) since(i int) []call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls[min(i, len(r.calls)):])
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// waitFor waits until a call from the i-th on saw description, and returns
// it.
func (r *recorder) waitFor(i int, description string, deadline time.Duration) (call, error) {
	timeout := time.After(deadline)
	for {
		for _, c := range r.since(i) {
			if c.description == description {
				return c, nil
			}
		}
		select {
		case <-r.wake:
		case <-timeout:
			return call{}, fmt.Errorf("no reconcile saw %q within %v", description, deadline)
		}
	}
}

// watched is the real filesystem watcher on a temporary config dir,
// publishing on a bus that either the pipeline or the trailing debouncer
// consumes.
type watched struct {
	dir  string
	file string // the one workflow file the measures change
	rec  *recorder
	stop func() error
}

const sampleName = "sample"

// startWatched starts the watcher over a config dir holding the sample
// workflow, and behind it the pipeline (debounce > 0) or a trailing
// debouncer of trailingDebounce (debounce == 0). It returns once the
// initial definition has been reconciled.
func startWatched(debounce time.Duration) (*watched, error) {
	dir, err := os.MkdirTemp("", "musterd-bench-")
	if err != nil {
		return nil, err
	}
	w := &watched{dir: dir, file: filepath.Join(dir, "workflows", sampleName+".yaml")}
	if err := os.MkdirAll(filepath.Dir(w.file), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(w.file, workflowFile(sampleName, "initial"), 0o644); err != nil {
		return nil, err
	}
	log := slog.New(slog.DiscardHandler)
	index := resources.New()
	w.rec = newRecorder(index, events.NewKey(v1alpha1.KindWorkflow, "", sampleName))
	b := bus.New(bus.Options{Logger: log})
	watcher, err := fs.New(b, fs.Options{ConfigDir: dir, Index: index, Logger: log})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	if debounce > 0 {
		p, err := pipeline.New(pipeline.Options{Logger: log, Bus: b, Reconcilers: []reconcilers.Reconciler{w.rec},
			Debouncer: debouncer.Options{Interval: debounce}, Coordinator: coordinator.Options{ResyncPeriod: -1}})
		if err != nil {
			cancel()
			return nil, err
		}
		if err := p.Add(watcher); err != nil {
			cancel()
			return nil, err
		}
		go func() { stopped <- p.Run(ctx) }()
	} else {
		t := newTrailing(b, trailingDebounce, w.rec)
		b.Start()
		go func() {
			err := watcher.Start(ctx)
			t.stop()
			b.Close()
			stopped <- err
		}()
	}
	w.stop = func() error {
		cancel()
		err := <-stopped
		return errors.Join(err, os.RemoveAll(dir))
	}
	if _, err := w.rec.waitFor(0, "initial", 30*time.Second); err != nil {
		return nil, errors.Join(err, w.stop())
	}
	return w, nil
}

// trailing is the baseline's debouncer: a key reconciles once it has been
// quiet for its delay, every change restarting the wait.
type trailing struct {
	mu     sync.Mutex
	delay  time.Duration
	timers map[events.Key]*time.Timer
	rec    reconcilers.Reconciler
}

func newTrailing(b *bus.Bus, delay time.Duration, rec reconcilers.Reconciler) *trailing {
	t := &trailing{delay: delay, timers: map[events.Key]*time.Timer{}, rec: rec}
	if _, err := bus.Subscribe(b, "trailing-debouncer", bus.Unbounded(), t.changed); err != nil {
		panic(err)
	}
	return t
}

func (t *trailing) changed(e events.ResourceChanged) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if timer, ok := t.timers[e.Key]; ok {
		timer.Reset(t.delay)
		return
	}
	key := e.Key
	t.timers[key] = time.AfterFunc(t.delay, func() {
		t.rec.Reconcile(context.Background(), reconcilers.Request{Key: key, Attempt: 1})
	})
}

func (t *trailing) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, timer := range t.timers {
		timer.Stop()
	}
}

// changeLatencies writes the sample file n times, gap apart (beyond the
// refractory period and the watcher's settle, so that each write is a
// leading edge), and measures from just before each write to the first
// reconcile that sees it.
func changeLatencies(w *watched, n int, gap time.Duration) ([]time.Duration, error) {
	samples := make([]time.Duration, 0, n)
	for i := range n {
		time.Sleep(gap)
		want := fmt.Sprint("sample-", i)
		mark := w.rec.count()
		start := time.Now()
		if err := os.WriteFile(w.file, workflowFile(sampleName, want), 0o644); err != nil {
			return nil, err
		}
		c, err := w.rec.waitFor(mark, want, 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("sample %d: %w", i, err)
		}
		samples = append(samples, c.at.Sub(start))
	}
	slices.Sort(samples)
	return samples, nil
}

// percentile of sorted samples, in milliseconds (nearest rank).
func percentile(sorted []time.Duration, p float64) float64 {
	i := max(0, int(p*float64(len(sorted))+0.999999)-1)
	return float64(sorted[i]) / float64(time.Millisecond)
}

func measureChangeToReconcile(cfg config, res *results) error {
	w, err := startWatched(daemonDebounce)
	if err != nil {
		return err
	}
	samples, err := changeLatencies(w, cfg.samples, daemonDebounce+100*time.Millisecond)
	if err := errors.Join(err, w.stop()); err != nil {
		return err
	}
	res.set("change_to_reconcile_p50_ms", percentile(samples, 0.50))
	res.set("change_to_reconcile_p99_ms", percentile(samples, 0.99))
	floor, err := changeFloor(cfg.samples, daemonDebounce+100*time.Millisecond)
	if err != nil {
		return err
	}
	res.set("change_floor_fsnotify_p50_ms", percentile(floor, 0.50))
	res.set("change_floor_fsnotify_p99_ms", percentile(floor, 0.99))
	return nil
}

// changeFloor measures, as changeLatencies does and right after it, the
// same writes seen by a bare fsnotify watcher that reads the file at each
// of its events until it holds the new text: no decoding, no index, no
// pipeline. It is the floor of change to reconcile on this machine and
// file system: most of it is the writer's truncate and write.
func changeFloor(n int, gap time.Duration) ([]time.Duration, error) {
	dir, err := os.MkdirTemp("", "musterd-bench-floor-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, sampleName+".yaml")
	if err := os.WriteFile(file, workflowFile(sampleName, "initial"), 0o644); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return nil, err
	}
	var want atomic.Pointer[[]byte] // the text the current sample waits for
	seen := make(chan time.Time, 1)
	go func() {
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Name != file {
					continue
				}
				data, err := os.ReadFile(file)
				if text := want.Load(); err == nil && text != nil && bytes.Contains(data, *text) {
					want.Store(nil)
					seen <- time.Now()
				}
			case _, ok := <-w.Errors: // an overflow: the sample's next event still comes
				if !ok {
					return
				}
			}
		}
	}()
	samples := make([]time.Duration, 0, n)
	for i := range n {
		time.Sleep(gap)
		text := fmt.Appendf(nil, "description: floor-%d\n", i)
		want.Store(&text)
		start := time.Now()
		if err := os.WriteFile(file, workflowFile(sampleName, fmt.Sprint("floor-", i)), 0o644); err != nil {
			return nil, err
		}
		select {
		case at := <-seen:
			samples = append(samples, at.Sub(start))
		case <-time.After(30 * time.Second):
			return nil, fmt.Errorf("floor sample %d: fsnotify reported no write within 30s", i)
		}
	}
	slices.Sort(samples)
	return samples, nil
}

func measureTrailing(cfg config, res *results) error {
	w, err := startWatched(0)
	if err != nil {
		return err
	}
	samples, err := changeLatencies(w, cfg.samples, 100*time.Millisecond)
	if err := errors.Join(err, w.stop()); err != nil {
		return err
	}
	res.set("trailing_debounce_p50_ms", percentile(samples, 0.50))
	return nil
}

// burstRefractory is the refractory period of the burst measure.
const burstRefractory = 100 * time.Millisecond

// measureBurst writes the sample file cfg.burstWrites times, paced evenly
// over cfg.burstWindow, and counts the reconciles of its key until one has
// seen the last write and the key has then stayed quiet for a second.
func measureBurst(cfg config, res *results) error {
	w, err := startWatched(burstRefractory)
	if err != nil {
		return err
	}
	// The writes rewrite the file in place, every version the same length,
	// as a program that keeps its file open does: a truncate and write per
	// version (os.WriteFile) costs ext4 half a millisecond, too slow for
	// 10,000 in a second.
	const start0 = "burst-start"
	if err := os.WriteFile(w.file, workflowFile(sampleName, start0), 0o644); err != nil {
		return errors.Join(err, w.stop())
	}
	if _, err := w.rec.waitFor(0, start0, 30*time.Second); err != nil {
		return errors.Join(err, w.stop())
	}
	f, err := os.OpenFile(w.file, os.O_WRONLY, 0)
	if err != nil {
		return errors.Join(err, w.stop())
	}
	defer f.Close()
	time.Sleep(time.Second) // the last reconcile's refractory period ends
	mark := w.rec.count()
	start := time.Now()
	last := ""
	for i := range cfg.burstWrites {
		if ahead := time.Until(start.Add(cfg.burstWindow * time.Duration(i) / time.Duration(cfg.burstWrites))); ahead > 0 {
			time.Sleep(ahead)
		}
		last = fmt.Sprintf("burst-%05d", i)
		if _, err := f.WriteAt(workflowFile(sampleName, last), 0); err != nil {
			return errors.Join(err, w.stop())
		}
	}
	// On a busy machine the writes may take longer than the window; the
	// table shows how long they took.
	res.set("burst_writes_took_ms", float64(time.Since(start).Milliseconds()))
	if _, err := w.rec.waitFor(mark, last, 30*time.Second); err != nil {
		return errors.Join(fmt.Errorf("the final state is not the last write: %w", err), w.stop())
	}
	for n := w.rec.count(); ; n = w.rec.count() {
		time.Sleep(time.Second)
		if w.rec.count() == n {
			break
		}
	}
	calls := w.rec.since(mark)
	if err := w.stop(); err != nil {
		return err
	}
	if got := calls[len(calls)-1].description; got != last {
		return fmt.Errorf("the last reconcile saw %q, not the last write %q", got, last)
	}
	res.set("burst_10k_writes_one_key_reconciles", float64(len(calls)))
	return nil
}

func sortDurations(ds []time.Duration) { slices.Sort(ds) }
