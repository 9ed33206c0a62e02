package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// slowServers and slowStart set up servers slow to start: ten that take
// 2 s each, as npx and uvx cold starts do, so that starts run side by
// side, not two at a time on the reconcile workers.
const (
	slowServers = 10
	slowStart   = 2 * time.Second
	// editAfter is when, after the binary's start, the workflow is edited.
	editAfter = 1500 * time.Millisecond
)

// measureSlowStarts: the binary on ten mcp-fake -slow-start 2s servers and
// one workflow naming a tool of the first. start_10_slow_servers_ms runs
// from the binary's start until the API shows all ten Running;
// change_during_starts_ms from an edit of the workflow, made 1.5 s into
// the start-up (not all ten Running yet), until the API
// shows the edit Synced.
func measureSlowStarts(cfg config, res *results) error {
	fake := *mcpFake // the MCP measures' flag (mcp.go)
	if _, err := os.Stat(fake); err != nil {
		return fmt.Errorf("the mcp-fake binary: %w (make build)", err)
	}
	d, err := startDaemonWith(cfg, nil, func(configDir string) error {
		if err := os.MkdirAll(filepath.Join(configDir, "mcpservers"), 0o755); err != nil {
			return err
		}
		for i := range slowServers {
			name := fmt.Sprintf("slow%02d", i)
			if err := os.WriteFile(filepath.Join(configDir, "mcpservers", name+".yaml"), slowServerFile(name, fake), 0o644); err != nil {
				return err
			}
		}
		return os.WriteFile(filepath.Join(configDir, "workflows", "wf.yaml"), workflowFile("wf", "initial"), 0o644)
	})
	if err != nil {
		return err
	}
	ctx := context.Background()
	states := func() (map[string]string, error) {
		objs, err := d.api.List(ctx, "mcpservers", "")
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, o := range objs {
			var st struct{ State string }
			if len(o.Status) > 0 && json.Unmarshal(o.Status, &st) == nil {
				out[o.Metadata.Name] = st.State
			}
		}
		return out, nil
	}
	count := func(m map[string]string, state string) int {
		n := 0
		for _, s := range m {
			if s == state {
				n++
			}
		}
		return n
	}

	// The edit, 1.5 s in, while they start: not all of them run yet.
	deadline := time.Now().Add(daemonDeadline)
	time.Sleep(time.Until(d.started.Add(editAfter)))
	m, err := states()
	if err != nil {
		return errors.Join(err, d.stop())
	}
	if count(m, "Running") == slowServers {
		return errors.Join(fmt.Errorf("all ten servers were Running %v in: no edit made during the starts", editAfter), d.stop())
	}
	file := filepath.Join(d.config, "workflows", "wf.yaml")
	edit := time.Now()
	if err := os.WriteFile(file, workflowFile("wf", "edited"), 0o644); err != nil {
		return errors.Join(err, d.stop())
	}
	var synced time.Duration
	for synced == 0 {
		o, err := d.api.Get(ctx, "workflows", "", "wf")
		if err != nil {
			return errors.Join(err, d.stop())
		}
		var spec struct{ Description string }
		r := o.Reconcile
		if r.State == "Synced" && r.LastReconcileTime != nil && !r.LastReconcileTime.Before(edit.Truncate(time.Millisecond)) &&
			json.Unmarshal(o.Spec, &spec) == nil && spec.Description == "edited" {
			synced = time.Since(edit)
		}
		if time.Since(edit) > sampleDeadline {
			return errors.Join(fmt.Errorf("the edit was not Synced within %v", sampleDeadline), d.stop())
		}
		time.Sleep(time.Millisecond)
	}

	for {
		at := time.Now()
		m, err := states()
		if err != nil {
			return errors.Join(err, d.stop())
		}
		if count(m, "Running") == slowServers {
			res.set("start_10_slow_servers_ms", float64(at.Sub(d.started).Milliseconds()))
			break
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("the ten servers were not all Running within %v: %v", daemonDeadline, m), d.stop())
		}
		time.Sleep(5 * time.Millisecond)
	}
	res.set("change_during_starts_ms", float64(synced.Microseconds())/1000)
	return d.stop()
}

func slowServerFile(name, fake string) []byte {
	return fmt.Appendf(nil, `apiVersion: muster.giantswarm.io/v1alpha1
kind: MCPServer
metadata:
  name: %s
spec:
  type: stdio
  autoStart: true
  command: %s
  args: ["-slow-start", "%s", "-tools", "tool"]
`, name, fake, slowStart)
}
