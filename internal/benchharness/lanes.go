package main

// What a client's own session with a server (a lane) costs, through the
// real binary: a stdio mcp-fake annotated musterd.io/client-sessions:
// per-client, called through /mcp/direct by mcpLaneClients go-sdk
// clients, one after the other, each keeping its session open.
//
//   - mcp_lane_open_p50_ms: a client's first call, which starts its lane
//     (the server's process, initialize, tools/list) and is then served
//     there; p50 over the clients.
//   - mcp_lane_call_p50_us: the calls after it, on the lane; p50 of
//     mcpLaneCalls calls per client.
//   - mcp_lane_process_rss_mb: the resident size of one lane's process
//     (the median of theirs), which a stdio lane costs on top of musterd.
//   - mcp_lane_musterd_kb: what musterd's own resident size grew by per
//     lane open, over all of them.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	mcpLaneClients = 20
	mcpLaneCalls   = 50
	// laneMarker is in every lane's command line, so that its processes
	// can be found.
	laneMarker = "echo,lanebench"
)

func init() {
	measures = append(measures, struct {
		name, what string
		binary     bool
		run        func(config, *results) error
	}{"lanes", "the binary: a client's own session with a stdio server (per-client): its start, its calls, its memory", true, measureLanes})
}

func measureLanes(cfg config, res *results) error {
	m, err := startMCPDaemon(cfg)
	if err != nil {
		return err
	}
	defer func() { _ = m.stop() }()
	fake, err := filepath.Abs(*mcpFake)
	if err != nil {
		return err
	}
	spec := fmt.Sprintf("apiVersion: muster.giantswarm.io/v1alpha1\nkind: MCPServer\nmetadata:\n  name: lanes\n  annotations:\n    musterd.io/client-sessions: per-client\nspec:\n  type: stdio\n  autoStart: true\n  command: %q\n  args: [\"-tools\", %q]\n", fake, laneMarker)
	tmp := filepath.Join(m.servers, ".lanes.yaml.tmp")
	if err := os.WriteFile(tmp, []byte(spec), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(m.servers, "lanes.yaml")); err != nil {
		return err
	}
	if err := m.waitTool("x_lanes_echo", true); err != nil {
		return err
	}
	before, _, err := m.memoryMB()
	if err != nil {
		return err
	}
	var opens, calls []time.Duration
	var sessions []*mcp.ClientSession
	defer func() {
		for _, cs := range sessions {
			_ = cs.Close()
		}
	}()
	for range mcpLaneClients {
		client := mcp.NewClient(&mcp.Implementation{Name: "benchharness", Version: "v1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + m.addr + "/mcp/direct", HTTPClient: &http.Client{}}, nil)
		if err != nil {
			return fmt.Errorf("connect to /mcp/direct: %w", err)
		}
		sessions = append(sessions, cs)
		took, err := timeCalls(cs, "x_lanes_echo", 1+mcpLaneCalls)
		if err != nil {
			return err
		}
		opens = append(opens, took[0])
		calls = append(calls, took[1:]...)
	}
	after, _, err := m.memoryMB()
	if err != nil {
		return err
	}
	rss, err := processesRSSMB(laneMarker)
	if err != nil {
		return err
	}
	// The shared instance is one of them; the others are the lanes.
	if len(rss) != mcpLaneClients+1 {
		return fmt.Errorf("%d processes of the server run, not %d (one shared, one per client)", len(rss), mcpLaneClients+1)
	}
	slices.Sort(opens)
	slices.Sort(calls)
	slices.Sort(rss)
	res.set("mcp_lane_open_p50_ms", microseconds(opens, 0.50)/1000)
	res.set("mcp_lane_call_p50_us", microseconds(calls, 0.50))
	res.set("mcp_lane_process_rss_mb", rss[len(rss)/2])
	res.set("mcp_lane_musterd_kb", (after-before)*1024/mcpLaneClients)
	return nil
}

// processesRSSMB returns the resident size, in MiB, of every process one
// of whose arguments is marker.
func processesRSSMB(marker string) ([]float64, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), marker) {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue // gone meanwhile
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				if err != nil {
					return nil, errors.New("VmRSS in /proc status: " + err.Error())
				}
				out = append(out, kb/1024)
			}
		}
	}
	return out, nil
}
