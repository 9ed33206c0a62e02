package main

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The servers' table draws each server's recent calls: calls made through
// MCP show in its row, with their number in words and a sparkline, an
// erroring call counted as an error, without a reload: the page reads the
// server again when the bus says its calls of an interval were counted,
// and ages them out of the window by its own clock.
func TestE2EUIServersRowShowsItsRecentCalls(t *testing.T) {
	bctx, errs := browser(t)
	e := startFS(t)
	marker := newMarker()
	e.write(t, "mcpservers/busy.yaml", mcpServerYAML("busy", stdioSpec("-tools", "echo,fail,"+marker)...))
	e.write(t, "mcpservers/idle.yaml", mcpServerYAML("idle", stdioSpec("-tools", marker+"i")...))
	e.waitServer(t, "busy", "is Running", running("x_busy_echo", "x_busy_fail", "x_busy_"+marker))
	e.waitServer(t, "idle", "is Running", running("x_idle_"+marker+"i"))
	p := &uiPage{t: t, ctx: bctx, errs: errs}
	p.run("open the page", chromedp.Navigate("http://"+e.addr+"/ui/"))

	cell := func(name string) string {
		return fmt.Sprintf(`(document.querySelector('#servers tr[data-name=%s] td.calls')||{dataset:{}})`, js(name))
	}
	words := func(name string) string {
		return fmt.Sprintf(`((document.querySelector('#servers tr[data-name=%s] td.calls .spark-words')||{}).textContent||'')`, js(name))
	}
	p.waitFor("the servers show, live, without calls", serverState("busy")+` === 'Running' && document.body.dataset.conn === 'live' && `+
		words("busy")+` === 'No calls in 10 min'`)
	var ignored bool
	p.eval(`(() => { window.__loaded = performance.timeOrigin; return true; })()`, &ignored)

	cs := e.directClient(t, nil)
	for range 3 {
		_, isError := callTool(t, cs, "x_busy_echo", map[string]any{"n": 1})
		require.False(t, isError)
	}
	_, isError := callTool(t, cs, "x_busy_fail", nil)
	require.True(t, isError, "the fake's fail tool fails")

	p.waitFor("the row counts the calls and the error", cell("busy")+`.dataset.calls === '4' && `+cell("busy")+`.dataset.errors === '1' && `+
		words("busy")+` === '4 calls, 1 error in 10 min'`)
	var bars struct{ Calls, Errors int }
	p.eval(fmt.Sprintf(`(() => { const c = document.querySelector('#servers tr[data-name=%s] td.calls');
		return {calls: c.querySelectorAll('svg.spark rect.spark-calls').length, errors: c.querySelectorAll('svg.spark rect.spark-errors').length}; })()`, js("busy")), &bars)
	assert.GreaterOrEqual(t, bars.Calls, 1, "a bar for the interval of the calls")
	assert.GreaterOrEqual(t, bars.Errors, 1, "the error drawn over it")
	p.waitFor("the live events show the counted calls", `!!document.querySelector('#events tr[data-type=ToolCallsCounted]')`)

	for range 2 {
		callTool(t, cs, "x_busy_echo", nil)
	}
	p.waitFor("the row counts the later calls too", words("busy")+` === '6 calls, 1 error in 10 min'`)

	var idle string
	p.eval(words("idle"), &idle)
	assert.Equal(t, "No calls in 10 min", idle, "another server's calls are not its")
	// Ten minutes on, by the page's clock, the calls have left the
	// window: the page ages what it read by itself, asking nothing.
	p.eval(`(() => { const real = Date.now.bind(Date); Date.now = () => real() + 11*60*1000; return true; })()`, &ignored)
	p.waitFor("the calls age out of the window", words("busy")+` === 'No calls in 10 min' && `+cell("busy")+`.dataset.calls === '0' && `+
		`!document.querySelector('#servers tr[data-name=busy] td.calls svg')`)
	var sameLoad bool
	p.eval(`window.__loaded === performance.timeOrigin`, &sameLoad)
	assert.True(t, sameLoad, "the page was not reloaded")
	assert.Empty(t, errs.all(), "the page threw")
}
