package main

// The live page (/ui/) in a real headless Chromium, against the real
// binary and real servers (bin/mcp-fake): the token prompt, a crash and
// its recovery seen without a reload, a workflow appearing, an execution
// and its steps, the page's own start and stop, and that nothing users
// write runs as markup. The browser is Debian's chromium, which make
// browser installs; without one the test skips, unless
// MUSTERD_REQUIRE_BROWSER=1 (make test sets it once the browser is there).
// With MUSTERD_UI_SCREENSHOTS=DIR it also writes docs/live-page.md's screenshots
// into DIR (make screenshots).

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/musterd/musterd/internal/proctest"
)

const uiToken = "e2e-ui-token"

// xss is markup a user's file or a server could carry: if the page ever
// set it as HTML, the script or the handler would run (CSP aside) and an
// element would appear; as text, it shows as written.
const xss = `<script>window.__xss=1</script>"><img src=x onerror="window.__xss=2">`

// browserPath finds a Chromium: MUSTERD_BROWSER, else the usual names.
func browserPath() string {
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

// browser starts a headless Chromium for the test and returns its
// context; exceptions thrown by the page are collected into errs.
func browser(t *testing.T) (context.Context, *pageErrors) {
	t.Helper()
	path := browserPath()
	if path == "" {
		if os.Getenv("MUSTERD_REQUIRE_BROWSER") == "1" {
			t.Fatal("no Chromium found and MUSTERD_REQUIRE_BROWSER=1: make browser installs one")
		}
		t.Skip("no Chromium found (make browser installs one); skipping the live page's browser test")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // root in a container has no user namespace for the sandbox
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	errs := &pageErrors{}
	// The first action starts the browser, with no deadline of its own:
	// the browser lives as long as the context of that first call.
	require.NoError(t, chromedp.Listen(ctx, func(ev any) {
		if ex, ok := ev.(*runtime.EventExceptionThrown); ok {
			d := ex.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg += " " + d.Exception.Description
			}
			errs.add(fmt.Sprintf("%s:%d: %s", d.URL, d.LineNumber+1, msg))
		}
	}), "start %s", path)
	return ctx, errs
}

type pageErrors struct {
	mu   sync.Mutex
	list []string
}

func (p *pageErrors) add(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.list = append(p.list, s)
}

func (p *pageErrors) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.list...)
}

// uiPage drives one tab.
type uiPage struct {
	t    *testing.T
	ctx  context.Context
	errs *pageErrors
}

// run runs actions within e2eDeadline.
func (p *uiPage) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, e2eDeadline)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		p.fail(what, err)
	}
}

func (p *uiPage) fail(what string, err error) {
	p.t.Helper()
	p.t.Fatalf("%s: %v\npage errors: %v\npage text:\n%s", what, err, p.errs.all(), p.text())
}

// text is the page's visible text, for failure messages.
func (p *uiPage) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// waitFor polls the JavaScript condition expr until it is true.
func (p *uiPage) waitFor(what, expr string) {
	p.t.Helper()
	p.run("wait until "+what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(e2eDeadline)))
}

// eval evaluates expr in the page, awaiting a promise, into out.
func (p *uiPage) eval(expr string, out any) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, e2eDeadline)
	defer cancel()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[[]byte](expr, chromedp.EvalAwaitPromise))
	if err == nil {
		err = json.Unmarshal(raw, out)
	}
	if err != nil {
		p.fail("evaluate "+expr, err)
	}
}

// js quotes s as a JavaScript string.
func js(s string) string { return yamlValue(s) }

func serverState(name string) string {
	return fmt.Sprintf(`((document.querySelector('#servers tr[data-name=%s] .state')||{}).textContent||'')`, js(name))
}

func TestE2EUILivePage(t *testing.T) {
	bctx, errs := browser(t)
	e := startFS(t, "-api-token", uiToken)
	marker := newMarker()
	e.write(t, "mcpservers/victim.yaml", mcpServerYAML("victim", stdioSpec("-tools", marker)...))
	// A server that fails at once with markup on its stderr: the page
	// shows the error and its stderr.
	e.write(t, "mcpservers/broken.yaml", mcpServerYAML("broken", "type: stdio", "autoStart: true", "command: /bin/sh",
		"args: "+yamlValue([]string{"-c", "echo " + shellQuote(xss) + " >&2; exit 3"})))
	e.waitServer(t, "victim", "is Running", running("x_victim_"+marker))
	e.waitServer(t, "broken", "failed with its stderr", func(s serverObject) bool {
		return strings.Contains(s.Status.LastError+s.Status.LastFailure, "window.__xss")
	})
	base := "http://" + e.addr
	p := &uiPage{t: t, ctx: bctx, errs: errs}

	t.Run("without a token the page asks for one, and the API refuses the page", func(t *testing.T) {
		p.t = t
		p.run("open the page", chromedp.Navigate(base+"/ui/"))
		p.waitFor("the token prompt shows", `!document.getElementById('token-prompt').hidden && document.getElementById('main').hidden`)
		// Anything the page's policy blocks from here on is recorded: the
		// page itself needs no exception to it.
		var ignored bool
		p.eval(`(() => { window.__csp = []; document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI)); return true; })()`, &ignored)
		var why string
		p.eval(`document.getElementById('token-why').textContent`, &why)
		assert.Contains(t, why, "needs a bearer token")
		var code int
		p.eval(`fetch('/api/v1/events').then(r => r.status)`, &code)
		assert.Equal(t, http.StatusUnauthorized, code, "the event stream without a token")
		var rows int
		p.eval(`document.querySelectorAll('#servers tbody tr').length`, &rows)
		assert.Zero(t, rows, "nothing is shown before the token")
	})

	t.Run("a wrong token is refused and the prompt shows again; the right one opens the page, never in a URL", func(t *testing.T) {
		p.t = t
		p.run("enter a wrong token", chromedp.SendKeys(chromedp.CSS("#token-input"), "not-the-token"), chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
		p.waitFor("the prompt says the token was refused", `!document.getElementById('token-prompt').hidden && document.getElementById('token-why').textContent.includes('refused')`)
		var stored string
		p.eval(`sessionStorage.getItem('musterd.token') || ''`, &stored)
		assert.Empty(t, stored, "a refused token is not kept")

		p.run("enter the token", chromedp.SendKeys(chromedp.CSS("#token-input"), uiToken), chromedp.Click(chromedp.CSS(`#token-form button[type=submit]`)))
		p.waitFor("the servers show", serverState("victim")+` === 'Running' && `+serverState("broken")+` !== ''`)
		p.waitFor("the overview shows", `(document.querySelector('#overview-list [data-field="Mode"]')||{}).textContent === 'filesystem'`)
		var href, conn string
		p.eval(`location.href`, &href)
		assert.NotContains(t, href, uiToken)
		p.eval(`sessionStorage.getItem('musterd.token')`, &stored)
		assert.Equal(t, uiToken, stored, "kept for the tab")
		p.eval(`document.getElementById('conn').textContent`, &conn)
		assert.Equal(t, "Live", conn)
	})

	t.Run("a killed server turns Failed then Running, without a reload", func(t *testing.T) {
		p.t = t
		first := theServerProc(t, marker)
		pidShown := `((document.querySelector('#servers tr[data-name=victim] .pid')||{}).textContent||'')`
		p.waitFor("the page shows the server's PID", fmt.Sprintf(`%s === 'PID %d'`, pidShown, first.pid))
		// Every state the row shows is recorded, so that a short Failed is
		// seen however quickly it passes.
		var ignored bool
		p.eval(`(() => {
			window.__loaded = performance.timeOrigin;
			window.__states = [];
			const note = () => { const s = `+serverState("victim")+`; if (window.__states[window.__states.length-1] !== s) window.__states.push(s); };
			note();
			new MutationObserver(note).observe(document.querySelector('#servers tbody'), {subtree: true, childList: true, characterData: true});
			return true;
		})()`, &ignored)
		require.NoError(t, proctest.Kill(first.pid))
		p.waitFor("the row showed Failed and then Running", `(() => { const s = window.__states; const f = s.indexOf('Failed'); return f >= 0 && s.lastIndexOf('Running') > f; })()`)
		var sameLoad bool
		p.eval(`window.__loaded === performance.timeOrigin && Array.isArray(window.__states)`, &sameLoad)
		assert.True(t, sameLoad, "the page was not reloaded")
		second := theServerProc(t, marker, first)
		p.waitFor("the page shows the new PID", fmt.Sprintf(`%s === 'PID %d'`, pidShown, second.pid))
		p.waitFor("the restart is counted", `(document.querySelector('#servers tr[data-name=victim] .restarts')||{}).textContent === '1'`)
	})

	t.Run("a workflow file added appears, with its description as text", func(t *testing.T) {
		p.t = t
		e.write(t, "workflows/shout.yaml", fmt.Sprintf(`apiVersion: muster.giantswarm.io/v1alpha1
kind: Workflow
metadata:
  name: shout
spec:
  description: %s
  args:
    msg: {type: string, required: true}
  steps:
    - id: say
      tool: x_victim_%s
      args: {text: "{{ .input.msg }}"}
`, yamlValue("says "+xss), marker))
		p.waitFor("the workflow shows, valid and available", `(() => {
			const r = document.querySelector('#workflows tr[data-name=shout]');
			return r && r.querySelector('.valid').textContent.startsWith('Valid') && r.querySelector('.available').textContent.startsWith('Available');
		})()`)
		var desc string
		p.eval(`document.querySelector('#workflows tr[data-name=shout] .description').textContent`, &desc)
		assert.Equal(t, "says "+xss, desc)

		e.write(t, "workflows/lost.yaml", workflowYAML("lost", "x_nowhere_tool"))
		p.waitFor("a workflow whose tool is missing shows unavailable, naming it", `(() => {
			const r = document.querySelector('#workflows tr[data-name=lost]');
			return r && r.querySelector('.available').textContent.startsWith('Unavailable') && r.querySelector('.missing').textContent === 'x_nowhere_tool';
		})()`)
	})

	t.Run("a workflow run through MCP shows as an execution with its steps", func(t *testing.T) {
		p.t = t
		s := connectMCP(t, base+"/mcp/direct", mcpDial{httpClient: &http.Client{Transport: bearerTransport{uiToken}}})
		text, isError := callTool(t, s, "workflow_shout", map[string]any{"msg": "hello " + xss})
		require.False(t, isError, text)
		p.waitFor("the execution shows, completed", `[...document.querySelectorAll('#executions tr[data-execution]')].some(r =>
			r.querySelector('.workflow').textContent === 'shout' && r.querySelector('.status').textContent.startsWith('completed'))`)
		p.run("open its steps", chromedp.Click(chromedp.CSS(`#executions tr[data-execution] button`)))
		p.waitFor("its step shows, completed, with its result", `(() => {
			const r = document.querySelector('#executions tr[data-execution-steps]:not([hidden]) tr[data-step=say]');
			return r && r.textContent.includes('completed') && r.querySelector('.step-result') && r.querySelector('.step-result').textContent.includes('hello <script>');
		})()`)
	})

	t.Run("nothing users or servers write runs: names, errors, stderr, descriptions and results are text", func(t *testing.T) {
		p.t = t
		p.run("open the broken server's details", chromedp.Click(chromedp.CSS(`#servers tr[data-name=broken] button.toggle`)))
		p.waitFor("its stderr shows as written", `(() => {
			const d = document.querySelector('#servers tr.details:not([hidden])');
			return d && d.querySelector('pre.stderr') && d.querySelector('pre.stderr').textContent.includes(`+js(xss)+`);
		})()`)
		p.waitFor("its command line shows as written", `document.querySelector('#servers tr[data-name=broken] .runs').textContent.includes(`+js(xss)+`)`)
		var injected struct {
			Global   bool `json:"global"`
			Elements int  `json:"elements"`
		}
		// The page itself has no img and no script in its body: any is
		// injected. The global would be set by either, had it run (the
		// page's CSP forbids inline script as a second line).
		p.eval(`({global: window.__xss !== undefined, elements: document.querySelectorAll('body script, body img, body iframe, body [onerror]').length})`, &injected)
		var blocked []string
		p.eval(`window.__csp`, &blocked)
		assert.Empty(t, blocked, "the page's policy blocked something")
		assert.False(t, injected.Global, "an injected script or handler ran")
		assert.Zero(t, injected.Elements, "markup from data became elements")
		assert.Empty(t, errs.all(), "the page threw")
	})

	t.Run("stop and start from the page, and the state follows", func(t *testing.T) {
		p.t = t
		before := theServerProc(t, marker)
		p.run("stop", chromedp.Click(chromedp.CSS(`#servers tr[data-name=victim] button[data-action=stop]`)))
		p.waitFor("the row shows Stopped", serverState("victim")+` === 'Stopped'`)
		p.waitFor("the answer shows", `document.getElementById('action-result').textContent.startsWith('Stop victim: done')`)
		eventually(t, "the server process is gone", func() bool { return !before.alive() })
		p.waitFor("the overview counts it stopped by the operator", `(document.querySelector('#overview-list [data-field="Stopped by operator"]')||{}).textContent === 'victim'`)
		// By keyboard: focus the button, press Enter.
		p.run("start", chromedp.Focus(chromedp.CSS(`#servers tr[data-name=victim] button[data-action=start]`)), chromedp.KeyEvent("\r"))
		p.waitFor("the row shows Running", serverState("victim")+` === 'Running'`)
		theServerProc(t, marker, before)
	})

	t.Run("live events filter by name, and pause while the pointer is on them", func(t *testing.T) {
		p.t = t
		p.run("filter by name", chromedp.SendKeys(chromedp.CSS(`#f-name`), "victim"))
		p.waitFor("only the victim's events show", `(() => {
			const rows = [...document.querySelectorAll('#events tbody tr')];
			return rows.length > 0 && rows.every(r => r.querySelector('.resource').textContent.includes('victim'));
		})()`)
		var box struct{ X, Y float64 }
		p.eval(`(() => { const b = document.getElementById('events'); b.scrollIntoView(); const r = b.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + Math.min(r.height / 2, 40)}; })()`, &box)
		p.run("hover over the events", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, box.X, box.Y))
		p.waitFor("the events are paused", `document.getElementById('events').classList.contains('paused')`)
		var before int
		p.eval(`document.querySelectorAll('#events tbody tr').length`, &before)
		code, body := e.postToken(t, "/api/v1/services/default/victim/restart", uiToken)
		require.Equal(t, http.StatusOK, code, body)
		p.waitFor("the new events are counted, not shown", `/^Paused: \d+ new$/.test(document.getElementById('events-paused').textContent)`)
		var during int
		p.eval(`document.querySelectorAll('#events tbody tr').length`, &during)
		assert.Equal(t, before, during, "no row while paused")
		p.run("move the pointer away", chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 5, 5))
		p.waitFor("the held events show", fmt.Sprintf(`document.querySelectorAll('#events tbody tr').length > %d && document.getElementById('events-paused').textContent === ''`, before))
		p.waitFor("the victim is Running again", serverState("victim")+` === 'Running'`)
	})

	t.Run("a resource's history is drawn, each mark with its correlation", func(t *testing.T) {
		p.t = t
		p.run("open the victim's history", chromedp.Click(chromedp.CSS(`#servers tr[data-name=victim] button[aria-label="History of victim"]`)))
		p.waitFor("the timeline shows the failure and the service requests", `(() => {
			const m = [...document.querySelectorAll('#timeline svg .mark')];
			return m.some(x => x.dataset.type === 'ServiceRequested') && m.some(x => x.dataset.type === 'ResourceSynced') && m.every(x => x.dataset.correlation !== undefined);
		})()`)
		p.run("pick a correlation", chromedp.Click(chromedp.CSS(`#history-list button.corr`)))
		p.waitFor("its marks are picked", `document.querySelectorAll('#timeline svg .mark.selected').length > 0`)

		p.eval(`(() => { const s = document.getElementById('history-select'); s.value = 'Workflow/default/shout'; s.dispatchEvent(new Event('change')); return true; })()`, new(bool))
		p.waitFor("the resource picked in the list is drawn", `(() => {
			const svg = document.querySelector('#timeline svg');
			return svg && svg.getAttribute('aria-label').includes('Workflow/default/shout') && svg.querySelectorAll('.mark').length > 0;
		})()`)
	})

	if dir := os.Getenv("MUSTERD_UI_SCREENSHOTS"); dir != "" {
		screenshots(t, p, dir)
	}
	assert.Empty(t, errs.all(), "the page threw")
}

// screenshots writes docs/live-page.md's pictures: the overview, a server with
// its details, and a resource's timeline.
func screenshots(t *testing.T, p *uiPage, dir string) {
	p.t = t
	require.NoError(t, os.MkdirAll(dir, 0o755))
	shot := func(file, sel string) {
		ctx, cancel := context.WithTimeout(p.ctx, e2eDeadline)
		defer cancel()
		png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
		if err != nil {
			p.fail("screenshot "+sel, err)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, file), png, 0o644))
	}
	// The broken server's details are open (the escaping check opened
	// them): its error and stderr. Its history shows failures and their
	// backoff.
	p.run("open the broken server's history", chromedp.Click(chromedp.CSS(`#servers tr[data-name=broken] button[aria-label="History of broken"]`)))
	p.waitFor("its failures are drawn", `document.querySelectorAll('#timeline svg .mark[data-type=ResourceFailed]').length > 0`)
	p.eval(`(() => { document.activeElement && document.activeElement.blur(); return true; })()`, new(bool))
	shot("ui-overview.png", "#overview")
	shot("ui-server.png", "#servers-section")
	shot("ui-timeline.png", "#history-section")
}

// postToken POSTs to path with the bearer token.
func (d *runningDaemon) postToken(t *testing.T, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+d.addr+path, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Without a token configured the page opens at once: no prompt, the
// servers and the stream live.
func TestE2EUIWithoutATokenOpensAtOnce(t *testing.T) {
	bctx, errs := browser(t)
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/open.yaml", mcpServerYAML("open", stdioSpec("-tools", marker)...))
	e.waitServer(t, "open", "is Running", running("x_open_"+marker))
	p := &uiPage{t: t, ctx: bctx, errs: errs}
	p.run("open the page", chromedp.Navigate("http://"+e.addr+"/ui"))
	p.waitFor("the server shows, live", serverState("open")+` === 'Running' && document.body.dataset.conn === 'live'`)
	var prompt bool
	p.eval(`!document.getElementById('token-prompt').hidden`, &prompt)
	assert.False(t, prompt, "no token is asked for")
	assert.Empty(t, errs.all(), "the page threw")
}

// When the daemon goes, the page says so and reconnects by itself once it
// is back on the same address, reading again what changed meanwhile.
func TestE2EUIReconnectsWhenTheDaemonComesBack(t *testing.T) {
	bctx, errs := browser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	e := startFS(t, "-listen", addr)
	require.Equal(t, addr, e.addr)
	marker := newMarker()
	e.write(t, "mcpservers/before.yaml", mcpServerYAML("before", stdioSpec("-tools", marker)...))
	e.waitServer(t, "before", "is Running", running("x_before_"+marker))

	p := &uiPage{t: t, ctx: bctx, errs: errs}
	p.run("open the page", chromedp.Navigate("http://"+addr+"/ui/"))
	p.waitFor("the server shows, live", serverState("before")+` === 'Running' && document.body.dataset.conn === 'live'`)

	e.stopWith(t, syscall.SIGTERM, e2eDeadline)
	p.waitFor("the page says it lost the daemon", `document.body.dataset.conn !== 'live' && document.getElementById('conn').textContent.includes('reconnecting')`)

	e.write(t, "mcpservers/after.yaml", mcpServerYAML("after", stdioSpec("-tools", marker+"b")...))
	e.runningDaemon = startDaemon(t, "-config-dir", e.config, "-state-dir", e.state, "-debounce", "50ms", "-listen", addr)
	p.waitFor("the page is live again and shows what was added meanwhile", `document.body.dataset.conn === 'live' && `+serverState("after")+` === 'Running' && `+serverState("before")+` === 'Running'`)
	assert.Empty(t, errs.all(), "the page threw")
}
