// The workflows' table and their recent executions, each opening its
// steps (GET /api/v1/executions, /api/v1/executions/{id}). Results are
// shown as the API serves them: redacted by the engine.

import { h, clear, badge, fmtTime, fmtDuration } from './dom.js';
import { keyString } from './api.js';

const rows = new Map(); // keyString -> {row, cells}
const open = new Map(); // execution id -> {row, body}

export function update(page, obj) {
  const key = { kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name };
  const k = keyString(key);
  let r = rows.get(k);
  if (!r) {
    const cells = {
      name: h('th', { scope: 'row', class: 'name' }, key.name, ' ',
        h('button', { type: 'button', 'aria-label': `History of ${key.name}`, onclick: () => page.selectHistory(key) }, 'History')),
      valid: h('td', { class: 'valid' }),
      available: h('td', { class: 'available' }),
      missing: h('td', { class: 'missing' }),
      steps: h('td', { class: 'steps' }),
      description: h('td', { class: 'description' }),
    };
    const row = h('tr', { 'data-key': k, 'data-name': key.name }, Object.values(cells));
    r = { row, cells };
    rows.set(k, r);
    const tbody = document.querySelector('#workflows tbody');
    const next = [...tbody.rows].find((tr) => tr.dataset.name.localeCompare(key.name) > 0);
    tbody.insertBefore(row, next || null);
    document.getElementById('workflows-empty').hidden = true;
  }
  const st = obj.status || {};
  const spec = obj.spec || {};
  const ready = (st.conditions || []).find((c) => c.type === 'Ready');
  const valid = st.valid === true;
  const available = ready ? ready.status === 'True' : valid && !(st.missingTools || []).length;
  clear(r.cells.valid).append(badge(valid ? 'valid' : 'invalid', valid ? 'Valid' : 'Invalid'));
  if (!valid && (st.validationErrors || []).length) r.cells.valid.append(h('ul', {}, st.validationErrors.map((e) => h('li', { text: e }))));
  clear(r.cells.available).append(badge(available ? 'available' : 'unavailable', available ? 'Available' : 'Unavailable'));
  if (ready && ready.message && !available) r.cells.available.append(h('div', { class: 'why', text: ready.message }));
  clear(r.cells.missing).append((st.missingTools || []).length ? h('ul', {}, st.missingTools.map((t) => h('li', { class: 'mono', text: t }))) : 'none');
  r.cells.steps.textContent = String(st.stepCount ?? (spec.steps || []).length);
  r.cells.description.textContent = spec.description || '';
  if (obj.reconcile && obj.reconcile.lastError) r.cells.description.append(h('div', { class: 'reconcile-error', text: obj.reconcile.lastError }));
}

export function remove(key) {
  const k = keyString(key);
  const r = rows.get(k);
  if (!r) return;
  r.row.remove();
  rows.delete(k);
  document.getElementById('workflows-empty').hidden = rows.size > 0;
}

export function isOpen(id) {
  return open.has(id);
}

// executions shows the recent executions, newest first; those open stay
// open.
export function executions(page, list) {
  const tbody = clear(document.querySelector('#executions tbody'));
  document.getElementById('executions-empty').hidden = list.length > 0;
  const listed = new Set();
  for (const x of list) {
    listed.add(x.execution_id);
    const toggle = h('button', { type: 'button', 'aria-expanded': String(open.has(x.execution_id)), 'aria-label': `Steps of execution ${x.execution_id}` },
      `${x.step_count} step${x.step_count === 1 ? '' : 's'}`);
    const row = h('tr', { 'data-execution': x.execution_id },
      h('td', { class: 'mono', text: x.execution_id }),
      h('td', { class: 'workflow', text: x.workflow_name }),
      h('td', { class: 'status' }, badge(x.status), x.error ? h('div', { class: 'exec-error', text: x.error }) : ''),
      h('td', { text: fmtTime(x.started_at) }),
      h('td', { text: x.status === 'inprogress' ? 'running' : fmtDuration(x.duration_ms) }),
      h('td', {}, toggle));
    const body = h('td', { colspan: 6 });
    const details = h('tr', { class: 'details', 'data-execution-steps': x.execution_id, hidden: !open.has(x.execution_id) }, body);
    tbody.append(row, details);
    if (open.has(x.execution_id)) {
      open.set(x.execution_id, { details, body });
      reloadExecution(page, x.execution_id);
    }
    toggle.addEventListener('click', () => {
      const opening = details.hidden;
      details.hidden = !opening;
      toggle.setAttribute('aria-expanded', String(opening));
      if (opening) {
        open.set(x.execution_id, { details, body });
        reloadExecution(page, x.execution_id);
      } else {
        open.delete(x.execution_id);
      }
    });
  }
  for (const id of open.keys()) if (!listed.has(id)) open.delete(id);
}

function show(v) {
  if (v === undefined || v === null) return '';
  const text = typeof v === 'string' ? v : JSON.stringify(v, null, 2);
  return text.length > 4000 ? `${text.slice(0, 4000)}\n… (${text.length - 4000} more characters)` : text;
}

// reloadExecution reads one open execution and shows its steps.
export async function reloadExecution(page, id) {
  const o = open.get(id);
  if (!o) return;
  const res = await page.read(`/api/v1/executions/${encodeURIComponent(id)}`);
  if (!res || !res.ok || !open.has(id)) return;
  const x = res.data;
  const table = h('table', { class: 'steps-table' },
    h('thead', {}, h('tr', {}, ['Step', 'Tool', 'Status', 'Duration', 'Result or error'].map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, (x.steps || []).map((st) => h('tr', { 'data-step': st.step_id },
      h('th', { scope: 'row', class: 'mono', text: st.step_id }),
      h('td', { class: 'mono', text: st.tool }),
      h('td', {}, badge(st.status)),
      h('td', { text: st.status === 'inprogress' ? 'running' : fmtDuration(st.duration_ms) }),
      h('td', {}, st.error ? h('pre', { class: 'step-error', text: st.error }) : '', st.result !== undefined ? h('pre', { class: 'step-result', text: show(st.result) }) : '')))));
  const parts = [table];
  if (x.result !== undefined) parts.push(h('p', { text: 'Result' }), h('pre', { class: 'exec-result', text: show(x.result) }));
  if (x.truncated) parts.push(h('p', { text: 'Some steps are not kept: the execution was truncated.' }));
  clear(o.body).append(...parts);
}
