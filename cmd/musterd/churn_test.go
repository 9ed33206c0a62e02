package main

// The randomized churn test: random sequences of file operations on the
// real binary's config dir, checked against a model of what the dir holds.
// Once a sequence settles, what the API reports (every resource, its spec,
// Synced), the files on disk (definitions and status files) and the server
// processes (musterd's children, through /proc) must all be what the model
// says. Each seed is logged and replays its sequence exactly:
//
//	go test ./cmd/musterd -run TestChurn -churn.seed=N    (or MUSTERD_CHURN_SEED=N)
//	make stress                                           (many seeds)

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/pkg/api/types"
	"github.com/musterd/musterd/pkg/apis/muster/v1alpha1"
)

var (
	churnSeed  = flag.Uint64("churn.seed", 0, "run the churn test with this one seed only (also $MUSTERD_CHURN_SEED)")
	churnSeeds = flag.Int("churn.seeds", 3, "number of churn seeds to run")
	churnFirst = flag.Uint64("churn.first", 1, "first churn seed")
	churnOps   = flag.Int("churn.ops", 40, "file operations per churn sequence")
)

// Bounds of the model: few servers, as each is a real process.
const (
	churnServers   = 3
	churnWorkflows = 6
	churnConfigMap = 3
)

// churnModel is what the config dir holds: each definition file, by its
// path relative to the config dir, with its content, and the ConfigMap
// style files (workflows/cm*.yaml, symlinks through ..data).
type churnModel struct {
	files     map[string]churnDef
	configMap map[string]churnDef // by file name under workflows/
	cmVersion int                 // names the timestamped directory of the current ConfigMap data
}

// churnDef is one definition as the model knows it.
type churnDef struct {
	kind, name string
	// Workflow: its single step's tool and its description.
	tool, description string
	// MCPServer: its mcp-fake tools and autoStart.
	tools     []string
	autoStart bool
}

func (d churnDef) yaml() string {
	if d.kind == v1alpha1.KindWorkflow {
		return fmt.Sprintf("apiVersion: muster.giantswarm.io/v1alpha1\nkind: Workflow\nmetadata:\n  name: %s\nspec:\n  description: %s\n  steps:\n    - id: only\n      tool: %s\n",
			d.name, yamlValue(d.description), d.tool)
	}
	spec := stdioSpec("-tools", strings.Join(d.tools, ","))
	spec[1] = "autoStart: " + strconv.FormatBool(d.autoStart)
	return mcpServerYAML(d.name, spec...)
}

// resources returns every definition of the model by "Kind/name".
func (m *churnModel) resources() map[string]churnDef {
	out := map[string]churnDef{}
	for _, d := range m.files {
		out[d.kind+"/"+d.name] = d
	}
	for _, d := range m.configMap {
		out[d.kind+"/"+d.name] = d
	}
	return out
}

// churn is one sequence: a daemon, the model and the random source.
type churn struct {
	*fsEnv
	t     *testing.T
	rnd   *rand.Rand
	model churnModel
	ops   []string // what was done, for the failure message
	n     int      // a counter that makes every content unique
}

func (c *churn) randomDef(kind, name string) churnDef {
	c.n++
	d := churnDef{kind: kind, name: name}
	if kind == v1alpha1.KindWorkflow {
		d.tool = fmt.Sprintf("x_s%d_t%d", c.rnd.IntN(churnServers), c.rnd.IntN(3))
		d.description = fmt.Sprintf("version %d", c.n)
		return d
	}
	for _, tool := range []string{"alpha", "beta", "gamma"} {
		if c.rnd.IntN(2) == 0 {
			d.tools = append(d.tools, tool)
		}
	}
	// Every spec is new, so that each edit is one the server must follow.
	d.tools = append(d.tools, fmt.Sprintf("v%d", c.n))
	d.autoStart = c.rnd.IntN(4) != 0
	return d
}

// pick returns a random path among the model's regular files, or "" if
// there is none.
func (c *churn) pick() string {
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range c.model.files {
			if !yield(p) {
				return
			}
		}
	})
	if len(paths) == 0 {
		return ""
	}
	return paths[c.rnd.IntN(len(paths))]
}

// freePath returns a random path not in the model, or "" if every name is
// taken.
func (c *churn) freePath() (path string, def churnDef) {
	var free []churnDef
	for i := range churnServers {
		name := fmt.Sprintf("s%d", i)
		if _, taken := c.model.files["mcpservers/"+name+".yaml"]; !taken {
			free = append(free, churnDef{kind: v1alpha1.KindMCPServer, name: name})
		}
	}
	for i := range churnWorkflows {
		name := fmt.Sprintf("w%d", i)
		if _, taken := c.model.files["workflows/"+name+".yaml"]; !taken {
			free = append(free, churnDef{kind: v1alpha1.KindWorkflow, name: name})
		}
	}
	if len(free) == 0 {
		return "", churnDef{}
	}
	d := free[c.rnd.IntN(len(free))]
	return kindDir(d.kind) + "/" + d.name + ".yaml", c.randomDef(d.kind, d.name)
}

func kindDir(kind string) string {
	if kind == v1alpha1.KindWorkflow {
		return "workflows"
	}
	return "mcpservers"
}

// step does one random operation on the config dir and the model.
func (c *churn) step() {
	t := c.t
	switch op := c.rnd.IntN(10); {
	case op < 2: // create
		path, d := c.freePath()
		if path == "" {
			return
		}
		c.write(t, path, d.yaml())
		c.model.files[path] = d
		c.ops = append(c.ops, "create "+path)
	case op < 4: // in-place update
		path := c.pick()
		if path == "" {
			return
		}
		d := c.randomDef(c.model.files[path].kind, c.model.files[path].name)
		c.write(t, path, d.yaml())
		c.model.files[path] = d
		c.ops = append(c.ops, "update "+path)
	case op < 5: // rename-save
		path := c.pick()
		if path == "" {
			return
		}
		d := c.randomDef(c.model.files[path].kind, c.model.files[path].name)
		c.renameSave(t, path, d.yaml())
		c.model.files[path] = d
		c.ops = append(c.ops, "rename-save "+path)
	case op < 6: // delete
		path := c.pick()
		if path == "" {
			return
		}
		c.remove(t, path)
		delete(c.model.files, path)
		c.ops = append(c.ops, "delete "+path)
	case op < 7: // delete, then recreate at once
		path := c.pick()
		if path == "" {
			return
		}
		d := c.randomDef(c.model.files[path].kind, c.model.files[path].name)
		c.remove(t, path)
		c.write(t, path, d.yaml())
		c.model.files[path] = d
		c.ops = append(c.ops, "delete-recreate "+path)
	case op < 8: // a ConfigMap update
		c.swapConfigMap()
	default: // a burst of writes to one file, the last one counts
		path := c.pick()
		if path == "" {
			return
		}
		n := 2 + c.rnd.IntN(8)
		for range n {
			d := c.randomDef(c.model.files[path].kind, c.model.files[path].name)
			c.write(t, path, d.yaml())
			c.model.files[path] = d
		}
		c.ops = append(c.ops, fmt.Sprintf("burst of %d writes to %s", n, path))
	}
	// Sometimes no pause at all, sometimes one longer than the debounce.
	// The pause shapes the workload (bursts against spaced writes); it
	// waits for nothing, so it is no sleep-and-hope.
	if pause := c.rnd.IntN(4); pause > 0 {
		time.Sleep(time.Duration(c.rnd.IntN(pause*25)) * time.Millisecond)
	}
}

// swapConfigMap publishes a new version of the ConfigMap as the kubelet
// does: its files in a new timestamped directory, ..data swapped to it
// atomically, top-level symlinks through ..data added for new keys and
// removed for keys gone, the old directory removed.
func (c *churn) swapConfigMap() {
	t := c.t
	dir := filepath.Join(c.config, "workflows")
	next := map[string]churnDef{}
	for i := range churnConfigMap {
		if c.rnd.IntN(3) != 0 {
			file := fmt.Sprintf("cm%d.yaml", i)
			d, ok := c.model.configMap[file]
			if !ok || c.rnd.IntN(2) == 0 {
				d = c.randomDef(v1alpha1.KindWorkflow, fmt.Sprintf("cm%d", i))
			}
			next[file] = d
		}
	}
	old := c.model.cmVersion
	c.model.cmVersion++
	ts := filepath.Join(dir, fmt.Sprintf("..2026_11_21_%06d", c.model.cmVersion))
	require.NoError(t, os.Mkdir(ts, 0o755))
	for file, d := range next {
		require.NoError(t, os.WriteFile(filepath.Join(ts, file), []byte(d.yaml()), 0o644))
	}
	require.NoError(t, os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	for file := range next {
		if _, ok := c.model.configMap[file]; !ok {
			require.NoError(t, os.Symlink(filepath.Join("..data", file), filepath.Join(dir, file)))
		}
	}
	for file := range c.model.configMap {
		if _, ok := next[file]; !ok {
			require.NoError(t, os.Remove(filepath.Join(dir, file)))
		}
	}
	if old > 0 {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, fmt.Sprintf("..2026_11_21_%06d", old))))
	}
	c.model.configMap = next
	c.ops = append(c.ops, fmt.Sprintf("configmap swap to %d keys", len(next)))
}

// churnObject is what the API lists of one resource.
type churnObject struct {
	Kind      string
	Metadata  struct{ Name string }
	Spec      json.RawMessage
	Status    json.RawMessage
	Reconcile types.Reconcile
}

// differences compares the daemon with the model: the API, the files on
// disk and the processes. None once the daemon has caught up.
func (c *churn) differences() []string {
	var diffs []string
	want := c.model.resources()

	// The API: every resource of the model, with its spec, Synced; no other.
	code, body := c.get(c.t, "/api/v1/resources")
	if code != 200 {
		return []string{fmt.Sprintf("GET /api/v1/resources: %d %s", code, body)}
	}
	var list struct{ Items []churnObject }
	require.NoError(c.t, json.Unmarshal([]byte(body), &list))
	seen := map[string]bool{}
	for _, o := range list.Items {
		id := o.Kind + "/" + o.Metadata.Name
		seen[id] = true
		d, ok := want[id]
		if !ok {
			diffs = append(diffs, "API shows "+id+", which the model does not have")
			continue
		}
		if o.Reconcile.State != "Synced" {
			diffs = append(diffs, fmt.Sprintf("API: %s is %s (%s), not Synced", id, o.Reconcile.State, o.Reconcile.LastError))
		}
		diffs = append(diffs, compareSpec(id, d, o)...)
	}
	for id := range want {
		if !seen[id] {
			diffs = append(diffs, "API lacks "+id)
		}
	}

	// The files on disk: the definitions are the model's (musterd never
	// writes one), and each resource has its status file, Synced.
	for path, d := range c.model.files {
		if data, err := os.ReadFile(filepath.Join(c.config, path)); err != nil || string(data) != d.yaml() {
			diffs = append(diffs, fmt.Sprintf("disk: %s is not the model's (%v)", path, err))
		}
	}
	for file, d := range c.model.configMap {
		if data, err := os.ReadFile(filepath.Join(c.config, "workflows", file)); err != nil || string(data) != d.yaml() {
			diffs = append(diffs, fmt.Sprintf("disk: workflows/%s (through ..data) is not the model's (%v)", file, err))
		}
	}
	statusFiles := map[string]bool{}
	for _, kind := range []string{v1alpha1.KindMCPServer, v1alpha1.KindWorkflow} {
		entries, _ := os.ReadDir(filepath.Join(c.state, "status", kindDir(kind), "default"))
		for _, e := range entries {
			if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !strings.HasPrefix(name, ".") {
				statusFiles[kind+"/"+name] = true
			}
		}
	}
	for id := range want {
		kind, name, _ := strings.Cut(id, "/")
		data, err := os.ReadFile(filepath.Join(c.state, "status", kindDir(kind), "default", name+".yaml"))
		if err != nil || !strings.Contains(string(data), "\n    state: Synced\n") {
			diffs = append(diffs, fmt.Sprintf("disk: the status file of %s does not say Synced (%v)", id, err))
		}
	}
	for id := range statusFiles {
		if _, ok := want[id]; !ok {
			diffs = append(diffs, "disk: a status file is left for "+id)
		}
	}

	// The processes: musterd's children are exactly one mcp-fake per
	// server that autoStarts, with its args, each leading its own group.
	children := descendants(c.cmd.Process.Pid)
	expected := map[string]bool{}
	for _, d := range want {
		if d.kind == v1alpha1.KindMCPServer && d.autoStart {
			expected[strings.Join(d.tools, ",")] = true
		}
	}
	for _, p := range children {
		tools := ""
		if len(p.args) == 3 && p.args[0] == fakeServer() && p.args[1] == "-tools" {
			tools = p.args[2]
		}
		switch {
		case !expected[tools]:
			diffs = append(diffs, fmt.Sprintf("process %d %q runs, which no server of the model asks for", p.pid, p.args))
		case p.ppid != c.cmd.Process.Pid || p.pgrp != p.pid:
			diffs = append(diffs, fmt.Sprintf("process %d %q is not musterd's child leading its own group (ppid %d, pgrp %d)", p.pid, p.args, p.ppid, p.pgrp))
		default:
			delete(expected, tools)
		}
	}
	for tools := range expected {
		diffs = append(diffs, "no process runs with -tools "+tools)
	}
	slices.Sort(diffs)
	return diffs
}

// compareSpec compares what the API shows of a resource with the model.
func compareSpec(id string, d churnDef, o churnObject) []string {
	if d.kind == v1alpha1.KindWorkflow {
		var spec v1alpha1.WorkflowSpec
		if err := json.Unmarshal(o.Spec, &spec); err != nil {
			return []string{fmt.Sprintf("API: spec of %s: %v", id, err)}
		}
		if spec.Description != d.description || len(spec.Steps) != 1 || spec.Steps[0].Tool != d.tool {
			return []string{fmt.Sprintf("API: %s has spec %+v, the model %q with tool %s", id, spec, d.description, d.tool)}
		}
		return nil
	}
	var spec v1alpha1.MCPServerSpec
	var status v1alpha1.MCPServerStatus
	if err := json.Unmarshal(o.Spec, &spec); err != nil {
		return []string{fmt.Sprintf("API: spec of %s: %v", id, err)}
	}
	_ = json.Unmarshal(o.Status, &status)
	wantArgs := []string{"-tools", strings.Join(d.tools, ",")}
	if !slices.Equal(spec.Args, wantArgs) || spec.AutoStart != d.autoStart {
		return []string{fmt.Sprintf("API: %s has args %q autoStart %v, the model %q %v", id, spec.Args, spec.AutoStart, wantArgs, d.autoStart)}
	}
	if !d.autoStart {
		if status.State != v1alpha1.MCPServerStateStopped {
			return []string{fmt.Sprintf("API: %s is %s, not Stopped", id, status.State)}
		}
		return nil
	}
	var wantTools []string
	for _, tool := range d.tools {
		wantTools = append(wantTools, "x_"+d.name+"_"+tool)
	}
	slices.Sort(wantTools)
	if status.State != v1alpha1.MCPServerStateRunning || !slices.Equal(status.Tools, wantTools) {
		return []string{fmt.Sprintf("API: %s is %s with tools %v, not Running with %v", id, status.State, status.Tools, wantTools)}
	}
	return nil
}

// churnSeedList is the seeds to run: the one asked for, or a range.
func churnSeedList() []uint64 {
	if *churnSeed != 0 {
		return []uint64{*churnSeed}
	}
	if env := os.Getenv("MUSTERD_CHURN_SEED"); env != "" {
		if seed, err := strconv.ParseUint(env, 10, 64); err == nil {
			return []uint64{seed}
		}
	}
	seeds := make([]uint64, *churnSeeds)
	for i := range seeds {
		seeds[i] = *churnFirst + uint64(i)
	}
	return seeds
}

// TestChurnAgainstTheModel runs a random sequence of file operations per
// seed, each on a daemon of its own, and requires no difference between
// the settled daemon and the model.
func TestChurnAgainstTheModel(t *testing.T) {
	totalOps := 0
	seeds := churnSeedList()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Logf("churn seed %d; replay with: go test ./cmd/musterd -run TestChurn -churn.seed=%d", seed, seed)
			c := &churn{fsEnv: startFS(t), t: t, rnd: rand.New(rand.NewPCG(seed, seed)),
				model: churnModel{files: map[string]churnDef{}, configMap: map[string]churnDef{}}}
			for range *churnOps {
				c.step()
			}
			totalOps += len(c.ops)
			var diffs []string
			settled := func() bool {
				diffs = c.differences()
				return len(diffs) == 0
			}
			deadline := time.Now().Add(e2eDeadline)
			for !settled() && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if len(diffs) == 0 {
				// Caught up; and it stays so: no late event undoes it
				// (several debounce intervals and a periodic rescan later).
				// A fixed real-time window, as staying caught up is an
				// absence of change that no condition can be polled for,
				// and the real binary runs on the real clock.
				time.Sleep(1500 * time.Millisecond)
				settled()
			}
			if len(diffs) > 0 {
				t.Fatalf("seed %d: %d differences from the model after %d operations:\n  %s\noperations:\n  %s",
					seed, len(diffs), len(c.ops), strings.Join(diffs, "\n  "), strings.Join(c.ops, "\n  "))
			}
			t.Logf("seed %d: %d operations, %d resources, 0 differences", seed, len(c.ops), len(c.model.resources()))
		})
	}
	t.Logf("churn: %d operations over %d seeds, 0 differences", totalOps, len(seeds))
}
