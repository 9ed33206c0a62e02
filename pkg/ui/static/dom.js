// Building the page's elements. Every text goes in as a text node or an
// attribute value, never as markup: names, errors and stderr come from
// users' files and servers.

// h creates an element: attrs are attributes ("text" sets textContent,
// "class" the class, on* listeners), children are nodes or strings (each
// string a text node).
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG = 'http://www.w3.org/2000/svg';

// s creates an SVG element, as h does.
export function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') el.textContent = String(v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// clear empties el.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// fmtTime shows an RFC 3339 time as local time: the time of day alone
// when it is today, else with its date; "—" for none.
export function fmtTime(t) {
  if (!t) return '—';
  const d = new Date(t);
  if (Number.isNaN(d.getTime())) return String(t);
  const time = d.toLocaleTimeString(undefined, { hour12: false });
  if (d.toDateString() === new Date().toDateString()) return time;
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${time}`;
}

// fmtDuration shows milliseconds readably.
export function fmtDuration(ms) {
  if (ms === undefined || ms === null) return '—';
  if (ms < 1) return '<1 ms';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

// stateClass is the CSS class of a state word: its colour. The word is
// always shown beside it.
export function stateClass(state) {
  const s = String(state || 'Unknown').toLowerCase();
  if (['running', 'connected', 'synced', 'completed', 'valid', 'available', 'yes', 'leader', 'live'].includes(s)) return 'st-good';
  if (['failed', 'error', 'invalid', 'unavailable', 'no', 'auth required', 'disconnected'].includes(s)) return 'st-bad';
  if (['starting', 'connecting', 'reconciling', 'pending', 'inprogress', 'stopping', 'skipped', 'follower', 'reconnecting'].includes(s)) return 'st-busy';
  return 'st-idle';
}

// badge is a state word in its colour.
export function badge(state, word) {
  return h('span', { class: `badge ${stateClass(state)}`, text: word ?? state ?? 'Unknown' });
}
