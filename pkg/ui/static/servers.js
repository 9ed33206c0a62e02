// The servers' table: one row per MCPServer, a row of details below it,
// and the start, stop and restart controls the CLI sends.

import { h, clear, badge, fmtTime } from './dom.js';
import { keyString } from './api.js';
import { sparkline, aged, nextChange } from './sparkline.js';

const rows = new Map(); // keyString -> {row, details, cells, open}

// The supervisor appends a crashed server's stderr to its error after
// this separator.
const STDERR_SEP = '; stderr:';

function splitStderr(msg) {
  if (!msg) return ['', ''];
  const i = msg.indexOf(STDERR_SEP);
  if (i < 0) return [msg, ''];
  return [msg.slice(0, i), msg.slice(i + STDERR_SEP.length).replace(/^\n/, '')];
}

function readyCondition(status) {
  return (status.conditions || []).find((c) => c.type === 'Ready');
}

function cellsFor(page, key) {
  const name = key.name;
  const cells = {
    name: h('th', { scope: 'row', class: 'name', text: name }),
    state: h('td', { class: 'state' }),
    since: h('td', { class: 'since' }),
    restarts: h('td', { class: 'restarts' }),
    failures: h('td', { class: 'failures' }),
    retry: h('td', { class: 'retry' }),
    tools: h('td', { class: 'tools' }),
    protocol: h('td', { class: 'protocol' }),
    calls: h('td', { class: 'calls' }),
    runs: h('td', { class: 'runs mono' }),
  };
  const path = (action) => `/api/v1/services/${encodeURIComponent(key.namespace)}/${encodeURIComponent(name)}/${action}`;
  const button = (action, label) =>
    h('button', { type: 'button', 'data-action': action, 'aria-label': `${label} ${name}`, onclick: async (ev) => {
      const b = ev.currentTarget;
      b.disabled = true;
      try {
        await page.act(path(action), `${label} ${name}`);
      } finally {
        b.disabled = false;
      }
    } }, label);
  const toggle = h('button', { type: 'button', class: 'toggle', 'aria-expanded': 'false', 'aria-label': `Details of ${name}` }, 'Details');
  const hist = h('button', { type: 'button', 'aria-label': `History of ${name}`, onclick: () => page.selectHistory(key) }, 'History');
  cells.actions = h('td', { class: 'actions' }, button('start', 'Start'), button('stop', 'Stop'), button('restart', 'Restart'), toggle, hist);
  cells.toggle = toggle;
  return cells;
}

export function update(page, obj) {
  const key = { kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name };
  const k = keyString(key);
  let r = rows.get(k);
  if (!r) {
    const cells = cellsFor(page, key);
    const row = h('tr', { 'data-key': k, 'data-name': key.name },
      cells.name, cells.state, cells.since, cells.restarts, cells.failures, cells.retry, cells.tools, cells.protocol, cells.calls, cells.runs, cells.actions);
    const body = h('td', { colspan: 11 });
    const details = h('tr', { class: 'details', 'data-details': k, hidden: true }, body);
    r = { row, details, cells, body };
    cells.toggle.addEventListener('click', () => {
      const open = details.hidden;
      details.hidden = !open;
      cells.toggle.setAttribute('aria-expanded', String(open));
    });
    rows.set(k, r);
    insertSorted(r, key.name);
  }
  const st = obj.status || {};
  const spec = obj.spec || {};
  const state = st.state || 'Unknown';
  clear(r.cells.state).append(badge(state));
  const ready = readyCondition(st);
  r.cells.since.textContent = fmtTime(ready ? ready.lastTransitionTime : st.lastAttempt);
  r.cells.restarts.textContent = String(st.restartCount || 0);
  r.cells.failures.textContent = String(st.consecutiveFailures || 0);
  r.cells.retry.textContent = st.nextRetryAfter ? fmtTime(st.nextRetryAfter) : '—';
  r.cells.tools.textContent = String(st.toolCount || (st.tools || []).length || 0);
  r.cells.protocol.textContent = st.protocolVersion || '—';
  r.calls = obj.calls;
  drawCalls(r);
  clear(r.cells.runs);
  if (obj.process && obj.process.pid) r.cells.runs.append(h('div', { class: 'pid', text: `PID ${obj.process.pid}` }));
  r.cells.runs.append(spec.url ? spec.url : [spec.command, ...(spec.args || [])].filter(Boolean).join(' ') || '—');

  const [lastError, stderr] = splitStderr(st.lastError);
  const [lastFailure, failureStderr] = splitStderr(st.lastFailure);
  const dl = h('dl');
  const item = (term, ...value) => dl.append(h('dt', { text: term }), h('dd', {}, ...value));
  if (spec.description) item('Description', spec.description);
  item('Type', spec.type || '—');
  item('Reconcile', badge(obj.reconcile && obj.reconcile.state), obj.reconcile && obj.reconcile.note ? ` (${obj.reconcile.note})` : '');
  if (ready) item('Ready', `${ready.status}: ${ready.reason || ''}${ready.message ? ` — ${ready.message}` : ''}`);
  item('Last error', lastError ? h('span', { class: 'last-error', text: lastError }) : 'none');
  if (stderr) item('Stderr', h('pre', { class: 'stderr', text: stderr }));
  if (lastFailure && lastFailure !== lastError) item('Last failure', h('span', { class: 'last-failure', text: `${lastFailure} (${fmtTime(st.lastFailureTime)})` }));
  if (failureStderr && failureStderr !== stderr) item('Its stderr', h('pre', { class: 'stderr', text: failureStderr }));
  if (obj.reconcile && obj.reconcile.lastError && obj.reconcile.lastError !== st.lastError) {
    item('Reconcile error', h('span', { class: 'reconcile-error', text: obj.reconcile.lastError }));
  }
  item('Last connected', fmtTime(st.lastConnected));
  item('Tools', (st.tools || []).length ? h('ul', { class: 'tool-list' }, st.tools.map((t) => h('li', { class: 'mono', text: t }))) : 'none');
  item('Files', (obj.files || []).join(', ') || '—');
  clear(r.body).append(dl);
}

// drawCalls draws a row's calls as they stand now, and has them drawn
// again when the oldest of them leave the window.
function drawCalls(r) {
  const now = Date.now();
  const calls = aged(r.calls, now) || { totalCalls: 0, totalErrors: 0 };
  r.cells.calls.dataset.calls = String(calls.totalCalls || 0);
  r.cells.calls.dataset.errors = String(calls.totalErrors || 0);
  clear(r.cells.calls).append(...sparkline(calls));
  scheduleAging(nextChange(r.calls, now));
}

// One timer ages every row's calls: it runs only while a row shows calls,
// and asks nothing of the API.
let agingAt = 0;
let agingTimer = 0;

function scheduleAging(at) {
  if (!at || (agingTimer && agingAt <= at)) return;
  clearTimeout(agingTimer);
  agingAt = at;
  agingTimer = setTimeout(() => {
    agingTimer = 0;
    agingAt = 0;
    for (const r of rows.values()) drawCalls(r);
  }, Math.max(0, at - Date.now()) + 50);
}

function insertSorted(r, name) {
  const tbody = document.querySelector('#servers tbody');
  const next = [...tbody.querySelectorAll('tr[data-name]')].find((tr) => tr.dataset.name.localeCompare(name) > 0);
  tbody.insertBefore(r.row, next || null);
  tbody.insertBefore(r.details, next || null);
  document.getElementById('servers-empty').hidden = true;
}

// showState shows a state an event reported, before the re-read.
export function showState(key, state) {
  const r = rows.get(keyString(key));
  if (r && state) clear(r.cells.state).append(badge(state));
}

export function remove(key) {
  const k = keyString(key);
  const r = rows.get(k);
  if (!r) return;
  r.row.remove();
  r.details.remove();
  rows.delete(k);
  document.getElementById('servers-empty').hidden = rows.size > 0;
}
