// A resource's history: its recent events (GET
// /api/v1/resources/{kind}/{namespace}/{name}/events, what `musterd
// describe` lists) and those that follow live, drawn as a timeline in
// lanes (changes, triggers, reconciles, outcomes, status), each mark
// linked to its correlation ID.

import { h, s, clear, fmtTime } from './dom.js';
import { keyString, keysOf, resourcePath } from './api.js';
import { summary } from './events.js';

const MAX = 80;
let selected = ''; // keyString
let items = [];
let corr = ''; // the correlation ID picked
let pageRef = null; // the page's API access, for the picker

const picker = document.getElementById('history-select');
const box = document.getElementById('timeline');
const list = document.getElementById('history-list');

const lanes = [
  { name: 'Changes', types: ['ResourceChanged'] },
  { name: 'Triggers', types: ['ReconciliationTriggered'] },
  { name: 'Reconciles', types: ['ReconciliationStarted'] },
  { name: 'Outcomes', types: ['ResourceSynced', 'ResourceFailed', 'DefinitionValidated'] },
  { name: 'Service', types: ['ServiceRequested', 'ServiceStateChanged'] },
  { name: 'Status', types: ['StatusSynced', 'StatusSyncFailed'] },
  { name: 'Runs', types: ['WorkflowExecutionStarted', 'WorkflowExecutionFinished', 'WorkflowStepStarted', 'WorkflowStepFinished'] },
];

function laneOf(type) {
  const i = lanes.findIndex((l) => l.types.includes(type));
  return i < 0 ? lanes.length : i;
}

// tone is a mark's colour class; its shape and label say the same.
function tone(ev) {
  const e = ev.event || {};
  if (ev.type === 'ResourceFailed' || ev.type === 'StatusSyncFailed' || e.error || e.status === 'failed' || e.state === 'Failed') return 'bad';
  if (ev.type === 'ResourceSynced' || e.state === 'Running' || e.status === 'completed') return 'good';
  if (ev.type === 'ReconciliationStarted' || ev.type === 'ReconciliationTriggered') return 'busy';
  return 'idle';
}

function label(ev) {
  const e = ev.event || {};
  if (ev.type === 'ResourceFailed' && e.nextRetry) {
    const wait = (new Date(e.nextRetry) - new Date(e.time)) / 1000;
    return `${ev.type}: retry in ${wait.toFixed(1)} s (attempt ${e.attempt || '?'})`;
  }
  return `${ev.type} ${summary(ev)}`.trim();
}

export function resourcesChanged(page) {
  pageRef = page;
  const keys = [...page.resources.values()].map((o) => keyString({ kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name })).sort();
  picker.replaceChildren(h('option', { value: '', text: 'Choose a resource' }), ...keys.map((k) => h('option', { value: k, text: k })));
  picker.value = keys.includes(selected) ? selected : '';
}

picker.addEventListener('change', () => {
  if (!picker.value) return;
  const [kind, namespace, name] = picker.value.split('/');
  load(pageRef, { kind, namespace, name });
});

// select shows key's history and brings it into view.
export function select(page, key) {
  picker.value = keyString(key);
  load(page, key);
  document.getElementById('history-section').scrollIntoView();
  picker.focus();
}

async function load(page, key) {
  pageRef = page;
  selected = keyString(key);
  corr = '';
  items = [];
  const res = await page.read(`${resourcePath(key)}/events`);
  if (selected !== keyString(key)) return;
  if (res && res.ok) items = (res.data.items || []).slice(-MAX);
  draw();
}

// event takes a live event: the selected resource's join its history.
export function event(page, ev) {
  pageRef = page;
  // A server's counted calls are not part of its reconcile history (the
  // API's keeps none): they are drawn in its row.
  if (ev.type === 'ToolCallsCounted') return;
  if (!selected || !keysOf(ev).some((k) => keyString(k) === selected)) return;
  items.push(ev);
  if (items.length > MAX) items.shift();
  draw();
}

function pick(id) {
  corr = corr === id ? '' : id;
  draw();
}

function draw() {
  clear(box);
  clear(list);
  if (!selected) return;
  if (items.length === 0) {
    box.append(h('p', { class: 'empty', text: `No recent events of ${selected}.` }));
    return;
  }
  const left = 90;
  const step = 26;
  const laneH = 24;
  const width = left + step * (items.length + 1);
  const height = laneH * (lanes.length + 1) + 20;
  const w = Math.max(width, 600);
  const svg = s('svg', { viewBox: `0 0 ${w} ${height}`, width: w, height, role: 'img', 'aria-label': `Reconcile timeline of ${selected}: ${items.length} events, oldest on the left` });
  svg.append(s('title', { text: `Reconcile timeline of ${selected}` }));
  lanes.forEach((l, i) => {
    const y = 16 + i * laneH;
    svg.append(s('text', { x: 4, y: y + 4, class: 'lane', text: l.name }), s('line', { x1: left - 6, x2: width, y1: y, y2: y, stroke: '#d0d7de' }));
  });
  // Events of one correlation are joined by a line: one change's path
  // through the pipeline.
  const last = new Map();
  const marks = [];
  items.forEach((ev, i) => {
    const e = ev.event || {};
    const x = left + step * (i + 0.5);
    const y = 16 + Math.min(laneOf(ev.type), lanes.length - 1) * laneH;
    const c = e.correlationId || '';
    if (c && last.has(c)) {
      const [px, py] = last.get(c);
      svg.append(s('line', { x1: px, y1: py, x2: x, y2: y, class: 'link', stroke: c === corr ? '#0550ae' : '#8c959f', 'stroke-width': c === corr ? 2 : 1 }));
    }
    if (c) last.set(c, [x, y]);
    const t = tone(ev);
    const fill = { good: '#1a7f37', bad: '#cf222e', busy: '#9a6700', idle: '#6e7781' }[t];
    const attrs = { class: `mark ${c && c === corr ? 'selected' : ''}`, fill, tabindex: 0, 'data-type': ev.type, 'data-correlation': c, role: 'button', 'aria-label': `${fmtTime(e.time)} ${label(ev)}` };
    const mark = t === 'bad'
      ? s('rect', { ...attrs, x: x - 6, y: y - 6, width: 12, height: 12, transform: `rotate(45 ${x} ${y})` })
      : s('circle', { ...attrs, cx: x, cy: y, r: 6 });
    mark.append(s('title', { text: `${fmtTime(e.time)}\n${label(ev)}\ncorrelation ${c || 'none'}` }));
    mark.addEventListener('click', () => pick(c));
    mark.addEventListener('keydown', (k) => {
      if (k.key === 'Enter' || k.key === ' ') {
        k.preventDefault();
        pick(c);
      }
    });
    marks.push(mark);
    // The time under every fifth mark, and a failure's backoff beside it.
    if (i % 5 === 0 && e.time) {
      svg.append(s('text', { x, y: height - 6, class: 'tick', 'text-anchor': 'middle', text: new Date(e.time).toLocaleTimeString(undefined, { hour12: false }) }));
    }
    if (ev.type === 'ResourceFailed' && e.nextRetry) {
      const wait = (new Date(e.nextRetry) - new Date(e.time)) / 1000;
      svg.append(s('text', { x: x + 9, y: y + 16, class: 'retry', text: `retry +${wait.toFixed(1)}s` }));
    }
  });
  svg.append(...marks);
  box.append(svg, h('p', { class: 'legend' }, 'Green circle: synced or running; red diamond: failed; amber: triggered or reconciling; grey: other. Pick a mark or a correlation ID to follow one change.'));
  for (const ev of items.slice().reverse()) {
    const e = ev.event || {};
    const c = e.correlationId || '';
    list.append(h('li', { class: c && c === corr ? 'selected' : '', 'data-type': ev.type },
      h('span', { class: 'mono', text: fmtTime(e.time) }), ' ',
      h('strong', { text: ev.type }), ' ', h('span', { text: summary(ev) }), ' ',
      c ? h('button', { type: 'button', class: 'corr', 'aria-pressed': String(c === corr), onclick: () => pick(c), text: c }) : ''));
  }
}
