// The live events: the bus as the API streams it, filterable by kind,
// name and type, paused while the pointer or the keyboard focus is on it.

import { h, fmtDuration } from './dom.js';
import { keysOf } from './api.js';

const MAX = 500; // events kept, newest last
const all = [];
const queued = []; // arrived while paused
const types = new Set();
let paused = false;
let droppedTotal = 0;

const box = document.getElementById('events');
const tbody = box.querySelector('tbody');
const fKind = document.getElementById('f-kind');
const fName = document.getElementById('f-name');
const fType = document.getElementById('f-type');
const pausedNote = document.getElementById('events-paused');

// summary is an event's fields other than its time, key and correlation,
// as text.
export function summary(ev) {
  const e = ev.event || {};
  const parts = [];
  for (const [k, v] of Object.entries(e)) {
    if (['time', 'correlationId', 'key', 'keys'].includes(k) || v === '' || v === null || v === undefined) continue;
    if (k === 'duration' && typeof v === 'number') parts.push(`duration=${fmtDuration(v / 1e6)}`);
    else if (typeof v === 'string' && /^sha256:[0-9a-f]{64}$/.test(v)) parts.push(`${k}=${v.slice(0, 19)}…`);
    else parts.push(`${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  }
  if (Array.isArray(e.keys) && e.keys.length > 1) parts.unshift(`${e.keys.length} resources`);
  return parts.join(' ');
}

function matches(ev) {
  const keys = keysOf(ev);
  if (fType.value && ev.type !== fType.value) return false;
  if (fKind.value && !keys.some((k) => k.kind === fKind.value)) return false;
  const name = fName.value.trim().toLowerCase();
  if (name && !keys.some((k) => k.name.toLowerCase().includes(name))) return false;
  return true;
}

function rowOf(ev) {
  const e = ev.event || {};
  const keys = keysOf(ev);
  const t = e.time ? new Date(e.time) : null;
  return h('tr', { 'data-type': ev.type },
    h('td', { class: 'mono', text: t ? t.toLocaleTimeString(undefined, { hour12: false }) : '' }),
    h('td', { class: 'type', text: ev.type }),
    h('td', { class: 'resource', text: keys.map((k) => `${k.kind}/${k.name}`).join(', ') }),
    h('td', { class: 'detail', text: summary(ev) }),
    h('td', { class: 'mono', text: e.correlationId || '' }));
}

function show(ev) {
  if (!matches(ev)) return;
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  tbody.append(rowOf(ev));
  while (tbody.rows.length > MAX) tbody.rows[0].remove();
  if (atBottom) box.scrollTop = box.scrollHeight;
}

function redraw() {
  tbody.replaceChildren(...all.filter(matches).map(rowOf));
  box.scrollTop = box.scrollHeight;
}

function noteType(type) {
  if (types.has(type)) return;
  types.add(type);
  const opts = [...types].sort();
  const chosen = fType.value;
  fType.replaceChildren(h('option', { value: '', text: 'all' }), ...opts.map((t) => h('option', { value: t, text: t })));
  fType.value = chosen;
}

// add takes one event from the stream.
export function add(ev) {
  all.push(ev);
  if (all.length > MAX) all.shift();
  noteType(ev.type);
  if (paused) {
    queued.push(ev);
    pausedNote.textContent = `Paused: ${queued.length} new`;
    return;
  }
  show(ev);
}

// dropped notes events the daemon dropped for this reader.
export function dropped(n) {
  droppedTotal += n;
  tbody.append(h('tr', { class: 'dropped' }, h('td', { colspan: 5, text: `${n} events dropped (this page read too slowly; ${droppedTotal} in all); the page was read again` })));
}

function pause() {
  paused = true;
  box.classList.add('paused');
  pausedNote.textContent = 'Paused';
}

function resume() {
  if (box.matches(':hover') || box.contains(document.activeElement)) return;
  paused = false;
  box.classList.remove('paused');
  pausedNote.textContent = '';
  for (const ev of queued.splice(0)) show(ev);
}

box.addEventListener('mouseenter', pause);
box.addEventListener('mouseleave', resume);
box.addEventListener('focusin', pause);
box.addEventListener('focusout', () => setTimeout(resume, 0));
for (const f of [fKind, fName, fType]) f.addEventListener('input', redraw);
