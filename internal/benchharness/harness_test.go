package main

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheHarnessRunsAndReportsEveryInProcessKey runs the in-process
// measures once with tiny sizes, to keep the harness compiling and
// working; it asserts no timing. The daemon-level measures need the built
// binary and run only in make bench.
func TestTheHarnessRunsAndReportsEveryInProcessKey(t *testing.T) {
	t.Parallel()
	res, err := run(config{microEvents: 1000, noopKeys: 1000, repeats: 1, samples: 2, burstWrites: 50,
		burstWindow: 50 * time.Millisecond, log: io.Discard})
	require.NoError(t, err)
	for _, k := range []string{"bus_publish_ns", "chan_send_ns", "eventbus_raw_ns", "noop_reconciles_per_sec",
		"controller_runtime_reconciles_per_sec", "noop_per_controller_runtime", "noop_cpu_us_per_reconcile", "controller_runtime_cpu_us_per_reconcile",
		"workqueue_reconciles_per_sec", "change_to_reconcile_p50_ms", "change_to_reconcile_p99_ms",
		"change_floor_fsnotify_p50_ms", "change_floor_fsnotify_p99_ms",
		"trailing_debounce_p50_ms", "burst_10k_writes_one_key_reconciles"} {
		assert.Greater(t, res.values[k], 0.0, k)
	}
	assert.GreaterOrEqual(t, res.values["trailing_debounce_p50_ms"], float64(trailingDebounce/time.Millisecond),
		"the baseline waits out its debounce")

	var table bytes.Buffer
	printTable(&table, res)
	assert.Contains(t, table.String(), "change_to_reconcile_p99_ms")
	assert.Contains(t, table.String(), res.machine.CPU)
	out := filepath.Join(t.TempDir(), "results.json")
	require.NoError(t, writeJSON(out, res))
}
