package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/musterd/musterd/pkg/api/client"
	"github.com/musterd/musterd/pkg/api/types"
)

// daemonDeadline bounds every wait on the binary; generous, because the
// machine is shared. The waits on a start with many files get more: see
// deadlineFor.
const daemonDeadline = 3 * time.Minute

// deadlineFor bounds a wait on the binary with files workflow files: 3
// minutes, or 5 ms a file if that is more (500 s for 100,000).
func deadlineFor(files int) time.Duration {
	return max(daemonDeadline, time.Duration(files)*5*time.Millisecond)
}

// sampleDeadline bounds the wait for one latency sample.
const sampleDeadline = 30 * time.Second

var listenLine = regexp.MustCompile(`msg="musterd starting".* listen=(\S+)`)

// daemon is a running musterd binary over a temporary config dir.
type daemon struct {
	cmd     *exec.Cmd
	config  string
	state   string
	started time.Time
	addr    string
	api     *client.Client
	exited  chan error
}

// startDaemon writes files workflow files, then starts the binary on them,
// with flags after its own, and returns once it listens.
func startDaemon(cfg config, files int, flags ...string) (*daemon, error) {
	return startDaemonWith(cfg, flags, func(configDir string) error {
		for i := range files {
			name := fmt.Sprintf("wf%05d", i)
			if err := os.WriteFile(filepath.Join(configDir, "workflows", name+".yaml"), workflowFile(name, "initial"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
}

// startDaemonWith lets write fill the config dir (whose workflows
// directory exists), then starts the binary on it, with flags after its
// own, and returns once it listens.
func startDaemonWith(cfg config, flags []string, write func(configDir string) error) (*daemon, error) {
	root, err := os.MkdirTemp("", "musterd-bench-daemon-")
	if err != nil {
		return nil, err
	}
	d := &daemon{config: filepath.Join(root, "config"), state: filepath.Join(root, "state"), exited: make(chan error, 1)}
	if err := os.MkdirAll(filepath.Join(d.config, "workflows"), 0o755); err != nil {
		return nil, err
	}
	if err := write(d.config); err != nil {
		return nil, err
	}
	d.cmd = exec.Command(cfg.musterd, append([]string{"run", "-listen", "127.0.0.1:0", "-config-dir", d.config, "-state-dir", d.state}, flags...)...)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cfg.musterd, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		d.exited <- d.cmd.Wait()
	}()
	select {
	case d.addr = <-found:
	case err := <-d.exited:
		return nil, fmt.Errorf("musterd exited before listening: %v", err)
	case <-time.After(daemonDeadline):
		return nil, errors.Join(errors.New("musterd did not start listening"), d.stop())
	}
	if d.api, err = client.New("http://"+d.addr, "", nil); err != nil {
		return nil, errors.Join(err, d.stop())
	}
	return d, nil
}

func (d *daemon) stop() error {
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	return os.RemoveAll(filepath.Dir(d.config))
}

// allSynced waits until the API shows n workflows, all Synced, checking
// /readyz first (ready once every key of the initial listing has an
// outcome), and returns when the check that succeeded began.
func (d *daemon) allSynced(n int) (time.Time, error) {
	ctx := context.Background()
	deadline := time.Now().Add(deadlineFor(n))
	for time.Now().Before(deadline) {
		at := time.Now()
		if ok, _ := d.api.Ready(ctx); !ok {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		objs, err := d.api.List(ctx, "workflows", "")
		if err != nil {
			return time.Time{}, err
		}
		synced := 0
		for _, o := range objs {
			if o.Reconcile.State == "Synced" {
				synced++
			}
		}
		if synced == n && len(objs) == n {
			return at, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("the %d workflows were not all Synced within %v", n, deadlineFor(n))
}

// statusFilesWritten waits until the status store wrote a file for each of
// the n workflows, so that what is measured next is the daemon at rest.
func (d *daemon) statusFilesWritten(n int) error {
	dir := filepath.Join(d.state, "status", "workflows", "default")
	return pollUntil(deadlineFor(n), 100*time.Millisecond, func() (bool, error) {
		entries, _ := os.ReadDir(dir)
		return len(entries) >= n, nil
	}, fmt.Sprintf("the status files of %d workflows were written", n))
}

// pollUntil calls done every interval until it reports true, and fails if
// it has not within, or if done fails; what names the awaited condition.
func pollUntil(within, every time.Duration, done func() (bool, error), what string) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		time.Sleep(every)
	}
	return fmt.Errorf("not within %v: %s", within, what)
}

// memoryMB is the daemon's resident size (VmRSS), in MiB, and the part
// of it that is pages of mapped files, the binary's own above all
// (RssFile): that part moves with the page cache between runs of one
// binary, by 10 MB and more; the rest is what the daemon's code decides.
func (d *daemon) memoryMB() (rss, file float64, err error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", d.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for line := range strings.SplitSeq(string(data), "\n") {
		for _, f := range []struct {
			prefix string
			into   *float64
		}{{"VmRSS:", &rss}, {"RssFile:", &file}} {
			if v, ok := strings.CutPrefix(line, f.prefix); ok {
				kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
				if err != nil {
					return 0, 0, fmt.Errorf("%s in /proc status: %w", f.prefix, err)
				}
				*f.into = kb / 1024
				found++
			}
		}
	}
	if found != 2 {
		return 0, 0, errors.New("no VmRSS or RssFile in /proc status")
	}
	return rss, file, nil
}

// setMemory records the daemon's resident size under key and, under key
// with rss_file_mb for rss_mb, the part that is mapped files' pages.
func (d *daemon) setMemory(res *results, key string) error {
	rss, file, err := d.memoryMB()
	if err != nil {
		return err
	}
	res.set(key, rss)
	res.set(strings.Replace(key, "rss_mb", "rss_file_mb", 1), file)
	return nil
}

// cpuTime is the user and system CPU time the daemon used so far.
func (d *daemon) cpuTime() (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	// utime and stime are fields 14 and 15 of stat, 12 and 13 here, in
	// clock ticks of 1/100 s (USER_HZ on Linux).
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// reconciles is the sum of musterd_reconcile_total on /metrics.
func (d *daemon) reconciles() (float64, error) {
	resp, err := http.Get("http://" + d.addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "musterd_reconcile_total{") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// measureAPI: one workflow file rewritten apiSamples times, each from just
// before the write until the API shows the new spec Synced by a reconcile
// after the write, polled every millisecond.
func measureAPI(cfg config, res *results) error {
	d, err := startDaemon(cfg, 1)
	if err != nil {
		return err
	}
	file := filepath.Join(d.config, "workflows", "wf00000.yaml")
	ctx := context.Background()
	shows := func(o types.Object, description string, since time.Time) bool {
		r := o.Reconcile
		var spec struct{ Description string }
		return r.State == "Synced" && r.LastReconcileTime != nil && !r.LastReconcileTime.Before(since) &&
			json.Unmarshal(o.Spec, &spec) == nil && spec.Description == description
	}
	var samples []time.Duration
	for i := range cfg.apiSamples {
		time.Sleep(daemonDebounce + 100*time.Millisecond)
		want := fmt.Sprint("api-", i)
		start := time.Now()
		if err := os.WriteFile(file, workflowFile("wf00000", want), 0o644); err != nil {
			return errors.Join(err, d.stop())
		}
		for {
			o, err := d.api.Get(ctx, "workflows", "", "wf00000")
			if err != nil && !client.IsNotFound(err) {
				return errors.Join(err, d.stop())
			}
			if err == nil && shows(o, want, start.Truncate(time.Millisecond)) {
				samples = append(samples, time.Since(start))
				break
			}
			if time.Since(start) > sampleDeadline {
				return errors.Join(fmt.Errorf("sample %d: %q not Synced on the API within %v", i, want, sampleDeadline), d.stop())
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := d.stop(); err != nil {
		return err
	}
	sortDurations(samples)
	res.set("change_to_synced_api_p50_ms", percentile(samples, 0.50))
	return nil
}

// measureColdStart: coldFiles workflow files, from the binary's start until
// the API shows them all Synced; then the resident memory once their status
// files are written.
func measureColdStart(cfg config, res *results) error {
	return coldStart(cfg, res, cfg.coldFiles, "cold_start_10k_ms", "rss_mb_10k_resources", "")
}

// measureColdStartLarge: the same with coldFilesLarge (100,000) files;
// then the resident memory again after restFor at rest, which takes in the
// garbage of the periodic rescans and the runtime's own collections: the
// first figure follows the daemon's release of the start's free heap, so
// it is the low point.
func measureColdStartLarge(cfg config, res *results) error {
	return coldStart(cfg, res, cfg.coldFilesLarge, "cold_start_100k_ms", "rss_mb_100k_resources", "rss_mb_100k_after_2min_at_rest")
}

// coldStart measures a start on files workflow files into startKey and
// rssKey and, unless restKey is empty, the resident memory cfg.restFor
// later into it.
func coldStart(cfg config, res *results, files int, startKey, rssKey, restKey string) error {
	d, err := startDaemon(cfg, files)
	if err != nil {
		return err
	}
	at, err := d.allSynced(files)
	if err != nil {
		return errors.Join(err, d.stop())
	}
	res.set(startKey, float64(at.Sub(d.started).Milliseconds()))
	if err := d.statusFilesWritten(files); err != nil {
		return errors.Join(err, d.stop())
	}
	time.Sleep(2 * time.Second)
	if err := d.setMemory(res, rssKey); err != nil {
		return errors.Join(err, d.stop())
	}
	if restKey != "" {
		time.Sleep(cfg.restFor)
		if err := d.setMemory(res, restKey); err != nil {
			return errors.Join(err, d.stop())
		}
	}
	return d.stop()
}

// measureIdleRSS: the binary with nothing declared, once ready and 2 s
// after: its resident memory, the floor under the per-resource figures.
func measureIdleRSS(cfg config, res *results) error {
	d, err := startDaemon(cfg, 0)
	if err != nil {
		return err
	}
	if _, err := d.allSynced(0); err != nil {
		return errors.Join(err, d.stop())
	}
	time.Sleep(2 * time.Second)
	if err := d.setMemory(res, "rss_mb_idle"); err != nil {
		return errors.Join(err, d.stop())
	}
	return d.stop()
}

// measureIdle: idleFiles workflow files, all Synced and their status
// written; then the CPU time used and the reconciles counted over idleFor.
func measureIdle(cfg config, res *results) error {
	cpu, reconciles, err := idleWindow(cfg, cfg.idleFiles, 0)
	if err != nil {
		return err
	}
	res.set("idle_cpu_pct", cpu)
	res.set("idle_reconciles_60s", reconciles)
	return nil
}

// measureResyncLarge: coldFilesLarge (100,000) workflow files with a
// resync period of a minute; once their status files are written and the
// first paced resync pass has begun, the CPU time used and the reconciles
// counted over idleFor. A pass of 100,000 keys at the default 100 a second
// lasts longer than the default period (10 minutes), so this is what such
// a daemon does most of the time it rests.
func measureResyncLarge(cfg config, res *results) error {
	cpu, reconciles, err := idleWindow(cfg, cfg.coldFilesLarge, time.Minute)
	if err != nil {
		return err
	}
	res.set("resync_100k_cpu_pct", cpu)
	res.set("resync_100k_reconciles_per_sec", reconciles/cfg.idleFor.Seconds())
	return nil
}

// idleWindow starts the binary on files workflow files, with the resync
// period resync unless it is 0, waits until they are all Synced and their
// status written (and, with a resync period, until a resync pass has
// begun: more reconciles than files), then returns the CPU the daemon used
// over idleFor, in percent of one core, and the reconciles it made.
func idleWindow(cfg config, files int, resync time.Duration) (cpuPct, reconciles float64, err error) {
	return idleWindowWith(cfg, files, resync, nil, nil)
}

// idleWindowWith is idleWindow with a client attached to the daemon for
// the window (attach returns what detaches it), and atEnd run on the
// daemon at the window's end, before it stops; either may be nil.
func idleWindowWith(cfg config, files int, resync time.Duration, attach func(*daemon) (func(), error), atEnd func(*daemon) error) (cpuPct, reconciles float64, err error) {
	var flags []string
	if resync > 0 {
		flags = []string{"-resync", resync.String()}
	}
	d, err := startDaemon(cfg, files, flags...)
	if err != nil {
		return 0, 0, err
	}
	if _, err := d.allSynced(files); err != nil {
		return 0, 0, errors.Join(err, d.stop())
	}
	if err := d.statusFilesWritten(files); err != nil {
		return 0, 0, errors.Join(err, d.stop())
	}
	if resync > 0 {
		if err := d.resyncBegun(files, deadlineFor(files)+resync); err != nil {
			return 0, 0, errors.Join(err, d.stop())
		}
	}
	if attach != nil {
		detach, err := attach(d)
		if err != nil {
			return 0, 0, errors.Join(err, d.stop())
		}
		defer detach()
	}
	time.Sleep(2 * time.Second)
	cpu0, err1 := d.cpuTime()
	rec0, err2 := d.reconciles()
	start := time.Now()
	time.Sleep(cfg.idleFor)
	cpu1, err3 := d.cpuTime()
	rec1, err4 := d.reconciles()
	elapsed := time.Since(start)
	var err5 error
	if atEnd != nil {
		err5 = atEnd(d)
	}
	if err := errors.Join(err1, err2, err3, err4, err5, d.stop()); err != nil {
		return 0, 0, err
	}
	return 100 * (cpu1 - cpu0).Seconds() / elapsed.Seconds(), rec1 - rec0, nil
}

// resyncBegun waits until the daemon has made more reconciles than the
// files of its cold start.
func (d *daemon) resyncBegun(files int, within time.Duration) error {
	return pollUntil(within, time.Second, func() (bool, error) {
		n, err := d.reconciles()
		return n > float64(files), err
	}, "a resync pass began")
}
