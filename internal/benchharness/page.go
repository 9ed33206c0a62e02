package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/chromedp/chromedp"
)

// measureIdlePage: the idle measure with one headless Chromium showing the
// live page (/ui/) for the whole window, its 1,000 workflows loaded and its
// event stream open: what a browser looking costs the daemon. The idle rows
// are the same daemon with nobody looking. Skipped without a Chromium
// (make browser installs one).
func measureIdlePage(cfg config, res *results) error {
	path := chromiumPath()
	if path == "" {
		fmt.Fprintln(cfg.log, "bench: idle with the live page open: skipped, no Chromium (make browser installs one)")
		return nil
	}
	cpu, reconciles, err := idleWindowWith(cfg, cfg.idleFiles, 0,
		func(d *daemon) (func(), error) { return openPage(path, "http://"+d.addr+"/ui/", cfg.idleFiles) },
		func(d *daemon) error { return d.setMemory(res, "rss_mb_idle_page_open") })
	if err != nil {
		return err
	}
	res.set("idle_page_open_cpu_pct", cpu)
	res.set("idle_page_open_reconciles_60s", reconciles)
	return nil
}

// chromiumPath finds a Chromium as the browser test does.
func chromiumPath() string {
	if p := os.Getenv("MUSTERD_BROWSER"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// openPage opens url in a headless Chromium and waits until the page
// follows the stream and shows workflows rows; the func it returns closes
// the browser.
func openPage(path, url string, workflows int) (func(), error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	closeAll := func() { cancel(); cancelAlloc() }
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		closeAll()
		return nil, fmt.Errorf("open the live page: %w", err)
	}
	wait, done := context.WithTimeout(ctx, daemonDeadline)
	defer done()
	expr := fmt.Sprintf(`document.body.dataset.conn === 'live' && document.querySelectorAll('#workflows tbody tr').length >= %d`, workflows)
	if _, err := chromedp.Run(wait, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(daemonDeadline))); err != nil {
		closeAll()
		return nil, errors.Join(errors.New("the live page did not show the daemon's workflows"), err)
	}
	return closeAll, nil
}
