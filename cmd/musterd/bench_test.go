package main

// Benchmarks of the real binary: the latency from a change to a file to
// its result visible on the HTTP API, reported as p50_ms and p99_ms. Run
// them with go test -run '^$' -bench . -benchtime 20x ./cmd/musterd/.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
	"github.com/musterd/musterd/pkg/events"
)

// benchDebounce is the daemon's -debounce in the benchmarks. Changes are
// spaced beyond it, so that each is a leading edge that reconciles at once.
const benchDebounce = 50 * time.Millisecond

// benchDaemon runs musterd on a config dir holding files until b ends, and
// returns the config dir and a client of its API.
func benchDaemon(b *testing.B, files map[string]string) (string, *client.Client) {
	b.Helper()
	config := b.TempDir()
	for rel, content := range files {
		path := filepath.Join(config, rel)
		require.NoError(b, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(b, os.WriteFile(path, []byte(content), 0o644))
	}
	d := startDaemon(b, "-config-dir", config, "-state-dir", b.TempDir(), "-debounce", benchDebounce.String())
	c, err := client.New(d.addr, "", nil)
	require.NoError(b, err)
	return config, c
}

// measureChanges makes b.N changes, change(i) for i in [0, b.N), each
// measured from just before change(i) until done(i, start) holds, and
// reports the p50 and p99 of those latencies. done is checked whenever the
// daemon publishes an event matching wakeOn, then every millisecond until
// it holds, and every 20 ms should no event come. Between changes, outside
// the measure, it waits out the debounce. done(-1, zero time) must hold
// before the first change.
func measureChanges(b *testing.B, c *client.Client, wakeOn types.EventFilter, change func(i int), done func(i int, start time.Time) bool) {
	b.Helper()
	wait := func(i int, start time.Time, wake <-chan struct{}) {
		poll := 20 * time.Millisecond
		deadline := time.After(e2eDeadline)
		for !done(i, start) {
			select {
			case <-wake:
				// The daemon moved; its status store shows it in a moment.
				poll = time.Millisecond
			case <-time.After(poll):
			case <-deadline:
				b.Fatalf("change %d: timed out", i)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.Events(ctx, wakeOn)
	require.NoError(b, err)
	defer stream.Close()
	wake := make(chan struct{}, 1)
	go func() {
		for {
			if _, err := stream.Next(); err != nil {
				return
			}
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	}()
	wait(-1, time.Time{}, wake)

	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		time.Sleep(benchDebounce + 10*time.Millisecond)
		select {
		case <-wake: // from the change before
		default:
		}
		b.StartTimer()
		start := time.Now()
		change(i)
		wait(i, start, wake)
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(samples)
	percentile := func(p float64) float64 {
		return float64(samples[max(0, int(p*float64(len(samples))+0.999999)-1)]) / float64(time.Millisecond)
	}
	b.ReportMetric(percentile(0.50), "p50_ms")
	b.ReportMetric(percentile(0.99), "p99_ms")
}

// syncedSince holds for an object whose last reconcile succeeded after
// start.
func syncedSince(o types.Object, start time.Time) bool {
	r := o.Reconcile
	return r.State == "Synced" && r.LastReconcileTime != nil && r.LastReconcileTime.After(start)
}

// BenchmarkFileChangeToSynced: a workflow's file is rewritten (its step's
// tool alternating between two values) until the API shows the new spec
// in force, its status computed from it, and a reconcile Synced after the
// write.
func BenchmarkFileChangeToSynced(b *testing.B) {
	tools := [2]string{"x_bench_a", "x_bench_b"}
	rel := filepath.Join("workflows", "bench.yaml")
	config, c := benchDaemon(b, map[string]string{rel: workflowYAML("bench", tools[0])})
	toolOf := func(i int) string { return tools[(i+1)%2] } // i = -1 is the initial file

	measureChanges(b, c, types.EventFilter{Kind: v1alpha1.KindWorkflow, Name: "bench", Types: []string{events.TypeResourceSynced}},
		func(i int) {
			require.NoError(b, os.WriteFile(filepath.Join(config, rel), []byte(workflowYAML("bench", toolOf(i))), 0o644))
		},
		func(i int, start time.Time) bool {
			o, err := c.Get(context.Background(), "workflows", "", "bench")
			if client.IsNotFound(err) {
				return false
			}
			require.NoError(b, err)
			var spec struct{ Steps []struct{ Tool string } }
			var status v1alpha1.WorkflowStatus
			require.NoError(b, json.Unmarshal(o.Spec, &spec))
			if len(o.Status) > 0 {
				require.NoError(b, json.Unmarshal(o.Status, &status))
			}
			want := []string{toolOf(i)}
			return syncedSince(o, start) && len(spec.Steps) == 1 && spec.Steps[0].Tool == want[0] && slices.Equal(status.ReferencedTools, want)
		})
}

// BenchmarkSpecChangeToToolsList: an MCPServer's args change its tools
// (alternating between two lists), until the API shows the restarted
// server Running with the new tools, which it lists only once the new
// process answered tools/list.
func BenchmarkSpecChangeToToolsList(b *testing.B) {
	lists := [2]string{"echo,alpha", "echo,beta"}
	exposed := [2][]string{{"x_bench_alpha", "x_bench_echo"}, {"x_bench_beta", "x_bench_echo"}}
	declare := func(i int) string {
		return mcpServerYAML("bench", stdioSpec("-tools", lists[(i+1)%2])...)
	}
	rel := filepath.Join("mcpservers", "bench.yaml")
	config, c := benchDaemon(b, map[string]string{rel: declare(-1)})

	measureChanges(b, c, types.EventFilter{Kind: v1alpha1.KindMCPServer, Name: "bench", Types: []string{events.TypeResourceSynced}},
		func(i int) {
			require.NoError(b, os.WriteFile(filepath.Join(config, rel), []byte(declare(i)), 0o644))
		},
		func(i int, start time.Time) bool {
			o, err := c.Get(context.Background(), "mcpservers", "", "bench")
			if client.IsNotFound(err) {
				return false
			}
			require.NoError(b, err)
			var status v1alpha1.MCPServerStatus
			if len(o.Status) > 0 {
				require.NoError(b, json.Unmarshal(o.Status, &status))
			}
			return syncedSince(o, start) && status.State == v1alpha1.MCPServerStateRunning && slices.Equal(status.Tools, exposed[(i+1)%2])
		})
}
