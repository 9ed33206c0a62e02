// A server's recent calls, drawn: one bar per interval of the router's
// history (calls, with their errors over them in red) and the totals in
// words beside it, for whoever does not see the bars.

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
