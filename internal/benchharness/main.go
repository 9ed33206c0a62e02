package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"
)

// config sizes the measures; the flags default to the sizes the goals are
// stated for (10,000 and 100,000 resources, 10,000 writes a burst), and
// the smoke test runs them tiny.
type config struct {
	// musterd is the binary of the daemon-level measures; without it they
	// are skipped.
	musterd string
	// microEvents is the events per micro-benchmark repetition, and
	// noopKeys the distinct keys per pipeline and workqueue repetition.
	microEvents, noopKeys int
	// repeats of each micro-benchmark; the median is reported.
	repeats int
	// samples of the change-to-reconcile and trailing-debounce measures,
	// apiSamples of the change-to-Synced-on-the-API one.
	samples, apiSamples int
	// burstWrites to one file within burstWindow.
	burstWrites int
	burstWindow time.Duration
	// coldFiles workflow files at start; idleFiles for idleFor.
	coldFiles, coldFilesLarge, idleFiles int
	idleFor                              time.Duration
	// restFor is how long the large cold start's daemon rests before its
	// resident memory is read again.
	restFor time.Duration
	// only, if not nil, names the measures to run (see measures).
	only map[string]bool
	// log receives progress lines.
	log io.Writer
}

func main() {
	cfg := config{log: os.Stderr}
	out := flag.String("out", "bench/results.json", "where the results go as JSON")
	flag.StringVar(&cfg.musterd, "musterd", "bin/musterd", "the musterd binary of the daemon-level measures; empty skips them")
	flag.IntVar(&cfg.microEvents, "micro-events", 200_000, "events per micro-benchmark repetition")
	flag.IntVar(&cfg.noopKeys, "noop-keys", 100_000, "distinct keys per no-op reconcile repetition")
	flag.IntVar(&cfg.repeats, "repeats", 5, "repetitions of each micro-benchmark (the median is reported)")
	flag.IntVar(&cfg.samples, "samples", 200, "samples of change to reconcile, and of the trailing debounce")
	flag.IntVar(&cfg.apiSamples, "api-samples", 100, "samples of change to Synced on the API")
	flag.IntVar(&cfg.burstWrites, "burst-writes", 10_000, "writes to one file in the burst")
	flag.DurationVar(&cfg.burstWindow, "burst-window", time.Second, "the burst's duration")
	flag.IntVar(&cfg.coldFiles, "cold-files", 10_000, "workflow files at the cold start")
	flag.IntVar(&cfg.coldFilesLarge, "cold-files-large", 100_000, "workflow files at the large cold start")
	flag.IntVar(&cfg.idleFiles, "idle-files", 1_000, "workflow files while idle")
	flag.DurationVar(&cfg.idleFor, "idle", time.Minute, "how long the idle measure lasts")
	flag.DurationVar(&cfg.restFor, "rest", 2*time.Minute, "how long the 100,000-file daemon rests before its resident memory is read again")
	only := flag.String("only", "", "comma-separated measures to run, of the names -help lists under measures (delivery, noop, change, trailing, burst, api, cold, cold100k, rssidle, idle, mcp, appears, starts, …); default all")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run here (for the in-process measures, such as noop)")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchharness: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	if *only != "" {
		cfg.only = map[string]bool{}
		for _, name := range strings.Split(*only, ",") {
			if !slices.ContainsFunc(measures, func(m measure) bool { return m.name == name }) {
				fmt.Fprintf(os.Stderr, "benchharness: -only: no measure %q\n", name)
				os.Exit(2)
			}
			cfg.only[name] = true
		}
	}

	if err := runAndWrite(cfg, *out); err != nil {
		fmt.Fprintln(os.Stderr, "benchharness:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// runAndWrite runs the measures, prints their table and writes them to out.
func runAndWrite(cfg config, out string) error {
	res, err := run(cfg)
	if err != nil {
		return err
	}
	printTable(os.Stdout, res)
	return writeJSON(out, res)
}

// results are one run's measures, in the order measured.
type results struct {
	machine machine
	keys    []string
	values  map[string]float64
}

type machine struct {
	CPU   string `json:"cpu"`
	Cores int    `json:"cores"`
	Go    string `json:"go"`
	OS    string `json:"os"`
	// Virtual says the CPU runs under a hypervisor (KVM on the project's
	// machine).
	Virtual bool `json:"virtual"`
	// LoadBefore and LoadAfter are /proc/loadavg's 1, 5 and 15 minute
	// load averages as the run began and ended: the machine is shared, and
	// every figure is to be read beside them.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
}

// loadAverage returns the first three fields of /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(data))
	return strings.Join(f[:min(3, len(f))], " ")
}

func (r *results) set(key string, v float64) {
	if _, ok := r.values[key]; !ok {
		r.keys = append(r.keys, key)
	}
	r.values[key] = v
}

// measures are run's steps, in order: a name for -only, what it measures,
// and whether it needs the binary.
type measure struct {
	name, what string
	binary     bool
	run        func(config, *results) error
}

var measures = []measure{
	{"delivery", "bus, channel and raw EventBus", false, func(c config, r *results) error { measureDelivery(c, r); return nil }},
	{"noop", "no-op reconciles: pipeline, controller-runtime and workqueue", false, measureNoop},
	{"change", "change to reconcile", false, measureChangeToReconcile},
	{"trailing", "trailing 500 ms debounce", false, measureTrailing},
	{"burst", "a burst of writes to one file", false, measureBurst},
	{"api", "the binary: change to Synced on the API", true, measureAPI},
	{"cold", "the binary: cold start and resident memory, 10,000 files", true, measureColdStart},
	{"cold100k", "the binary: cold start and resident memory, 100,000 files", true, measureColdStartLarge},
	{"rssidle", "the binary: resident memory with nothing declared", true, measureIdleRSS},
	{"idle", "the binary: idle", true, measureIdle},
	{"idlepage", "the binary: idle, with the live page open in a browser", true, measureIdlePage},
	{"resync100k", "the binary: 100,000 files during a paced resync pass", true, measureResyncLarge},
	{"starts", "the binary: ten slow servers starting, and a change meanwhile", true, measureSlowStarts},
}

func run(cfg config) (*results, error) {
	res := &results{machine: thisMachine(), values: map[string]float64{}}
	res.machine.LoadBefore = loadAverage()
	defer func() { res.machine.LoadAfter = loadAverage() }()
	for _, m := range measures {
		if cfg.only != nil && !cfg.only[m.name] {
			continue
		}
		if m.binary && cfg.musterd == "" {
			fmt.Fprintf(cfg.log, "bench: %s: skipped, no musterd binary\n", m.what)
			continue
		}
		fmt.Fprintf(cfg.log, "bench: %s (load %s)\n", m.what, loadAverage())
		if err := m.run(cfg, res); err != nil {
			return nil, fmt.Errorf("%s: %w", m.name, err)
		}
	}
	return res, nil
}

func thisMachine() machine {
	m := machine{CPU: "unknown", Cores: runtime.NumCPU(), Go: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "flags" {
				m.Virtual = slices.Contains(strings.Fields(v), "hypervisor")
				break
			}
		}
	}
	return m
}

// goal is a key's target, the figure the daemon is held to.
type goal struct {
	text string
	met  func(v map[string]float64) bool
}

var goals = map[string]goal{
	"change_to_reconcile_p50_ms": {"≤ 0.3", func(v map[string]float64) bool { return v["change_to_reconcile_p50_ms"] <= 0.3 }},
	"change_to_reconcile_p99_ms": {"≤ 2", func(v map[string]float64) bool { return v["change_to_reconcile_p99_ms"] <= 2 }},
	"noop_reconciles_per_sec": {"≥ 235,000 (statedb's figure here)", func(v map[string]float64) bool {
		return v["noop_reconciles_per_sec"] >= 235_000
	}},
	"noop_per_controller_runtime":         {"≥ 1.5", func(v map[string]float64) bool { return v["noop_per_controller_runtime"] >= 1.5 }},
	"bus_publish_ns":                      {"≤ 3 × chan_send_ns", func(v map[string]float64) bool { return v["bus_publish_ns"] <= 3*v["chan_send_ns"] }},
	"rss_mb_10k_resources":                {"≤ 30", func(v map[string]float64) bool { return v["rss_mb_10k_resources"] <= 30 }},
	"rss_mb_100k_resources":               {"≤ 200", func(v map[string]float64) bool { return v["rss_mb_100k_resources"] <= 200 }},
	"burst_10k_writes_one_key_reconciles": {"≤ 11", func(v map[string]float64) bool { return v["burst_10k_writes_one_key_reconciles"] <= 11 }},
	"cold_start_10k_ms":                   {"≤ 500", func(v map[string]float64) bool { return v["cold_start_10k_ms"] <= 500 }},
	"cold_start_100k_ms":                  {"≤ 8000", func(v map[string]float64) bool { return v["cold_start_100k_ms"] <= 8000 }},
	"idle_reconciles_60s":                 {"0", func(v map[string]float64) bool { return v["idle_reconciles_60s"] == 0 }},
	// Server starts must not hold the pipeline.
	"start_10_slow_servers_ms": {"≤ 2500", func(v map[string]float64) bool { return v["start_10_slow_servers_ms"] <= 2500 }},
	"change_during_starts_ms":  {"≤ 50", func(v map[string]float64) bool { return v["change_during_starts_ms"] <= 50 }},
}

func printTable(w io.Writer, r *results) {
	virtual := ""
	if r.machine.Virtual {
		virtual = " (virtual machine)"
	}
	fmt.Fprintf(w, "machine: %s%s, %d cores, %s, %s; load average %s before, %s after\n\n", r.machine.CPU, virtual,
		r.machine.Cores, r.machine.Go, r.machine.OS, r.machine.LoadBefore, r.machine.LoadAfter)
	fmt.Fprintf(w, "| %-37s | %14s | %-37s |\n", "key", "value", "goal")
	fmt.Fprintf(w, "|%s|%s|%s|\n", strings.Repeat("-", 39), strings.Repeat("-", 16), strings.Repeat("-", 39))
	for _, k := range r.keys {
		g := ""
		if gl, ok := goals[k]; ok {
			g = gl.text + map[bool]string{true: " (met)", false: " (NOT met)"}[gl.met(r.values)]
		}
		fmt.Fprintf(w, "| %-37s | %14s | %-37s |\n", k, format(r.values[k]), g)
	}
}

func format(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func writeJSON(path string, r *results) error {
	out := map[string]any{"machine": r.machine, "measured_at": time.Now().UTC().Format(time.RFC3339)}
	for k, v := range r.values {
		out[k] = v
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
