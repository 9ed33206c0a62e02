// A server's recent calls, drawn: one bar per interval of the router's
// history (calls, with their errors over them in red) and the totals in
// words beside it, for whoever does not see the bars.
//
// The history is read again only when the bus says a server's calls of an
// interval were counted, so nothing says when the last calls grow older
// than the window: the page ages what it read itself (aged), by its own
// clock (the daemon's, on loopback), without asking the API.

import { h, s } from './dom.js';

const BAR = 2; // px per interval
const HEIGHT = 22;

function plural(n, word) {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

// words says what the history holds: "12 calls, 1 error in 10 min".
export function words(calls) {
  if (!calls || !calls.totalCalls) return 'No calls in 10 min';
  const mins = Math.round(((calls.calls || []).length * (calls.intervalSeconds || 0)) / 60);
  return `${plural(calls.totalCalls, 'call')}, ${plural(calls.totalErrors || 0, 'error')} in ${mins} min`;
}

// aged returns calls as they stand at now (ms since the epoch): the
// intervals that began since they were read are empty, and those older
// than the window are gone; the totals are summed again. Nothing read is
// changed.
export function aged(calls, now) {
  if (!calls || !calls.intervalSeconds) return calls;
  const counts = calls.calls || [];
  const errors = calls.errors || [];
  const step = calls.intervalSeconds * 1000;
  const start = Date.parse(calls.start);
  const shift = Math.max(0, Math.floor((now - start) / step) - (counts.length - 1));
  if (!shift) return calls;
  const pad = new Array(Math.min(shift, counts.length)).fill(0);
  const c = counts.slice(shift).concat(pad);
  const e = errors.slice(shift).concat(pad);
  const sum = (xs) => xs.reduce((a, b) => a + b, 0);
  return { ...calls, start: new Date(start + shift * step).toISOString(), calls: c, errors: e, totalCalls: sum(c), totalErrors: sum(e) };
}

// nextChange says when aged(calls) next changes (ms since the epoch), or
// 0 when it never does: no calls are left in the window.
export function nextChange(calls, now) {
  const a = aged(calls, now);
  if (!a || !a.totalCalls) return 0;
  const step = a.intervalSeconds * 1000;
  return Date.parse(a.start) + a.calls.length * step;
}

// sparkline returns the cell's content for an object's calls (absent when
// the server had none).
export function sparkline(calls) {
  const text = h('span', { class: 'spark-words', text: words(calls) });
  if (!calls || !calls.totalCalls) return [text];
  const counts = calls.calls || [];
  const errors = calls.errors || [];
  const max = Math.max(1, ...counts);
  const svg = s('svg', { class: 'spark', width: counts.length * BAR, height: HEIGHT, viewBox: `0 0 ${counts.length * BAR} ${HEIGHT}`, 'aria-hidden': 'true', focusable: 'false' });
  svg.append(s('line', { x1: 0, x2: counts.length * BAR, y1: HEIGHT - 0.5, y2: HEIGHT - 0.5, class: 'spark-base' }));
  counts.forEach((n, i) => {
    if (!n) return;
    const hgt = Math.max(1, Math.round((n / max) * (HEIGHT - 2)));
    svg.append(s('rect', { x: i * BAR, y: HEIGHT - 1 - hgt, width: BAR - 0.5, height: hgt, class: 'spark-calls' }));
    const e = errors[i] || 0;
    if (e) {
      const eh = Math.max(1, Math.round((e / max) * (HEIGHT - 2)));
      svg.append(s('rect', { x: i * BAR, y: HEIGHT - 1 - eh, width: BAR - 0.5, height: eh, class: 'spark-errors' }));
    }
  });
  return [svg, ' ', text];
}
