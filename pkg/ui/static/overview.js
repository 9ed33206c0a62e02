// The overview: mode, role, kinds, queue, states, tools, last resync
// (GET /api/v1/overview).

import { h, clear, badge, fmtTime } from './dom.js';

function chips(counts) {
  const entries = Object.entries(counts || {}).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return h('span', { text: 'none' });
  return h('span', { class: 'chips' }, entries.map(([state, n]) => badge(state, `${state} ${n}`)));
}

export function render(o) {
  const dl = clear(document.getElementById('overview-list'));
  const row = (term, ...value) => dl.append(h('div', { class: 'card' }, h('dt', { text: term }), h('dd', { 'data-field': term }, ...value)));
  row('Mode', o.mode || '—');
  row('Role', badge(o.role, o.role || 'unknown'), o.leader ? ` (leader: ${o.leader})` : '');
  const kinds = (o.kinds || []).map((k) => `${k.kind} ${k.enabled ? 'enabled' : 'disabled'} (${k.resources})`);
  row('Kinds', kinds.length ? kinds.join(', ') : 'none');
  row('Queue depth', String(o.queueDepth ?? 0));
  row('Resources', chips(o.resources));
  row('Servers', chips(o.servers));
  if (o.stoppedByOperator && o.stoppedByOperator.length) row('Stopped by operator', o.stoppedByOperator.join(', '));
  row('Tools', String(o.tools ?? 0));
  row('Last full resync', o.lastFullResync ? fmtTime(o.lastFullResync) : 'none since the daemon started');
}
