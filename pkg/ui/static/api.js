// Talking to musterd's API from the page: the token, requests and the
// event stream.

const TOKEN_KEY = 'musterd.token';

// The bearer token is kept for this tab only (sessionStorage) and sent in
// the Authorization header, never in a URL.
export const token = {
  get: () => sessionStorage.getItem(TOKEN_KEY) || '',
  set: (t) => sessionStorage.setItem(TOKEN_KEY, t),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

// Unauthorized is a 401: the token is missing or wrong.
export class Unauthorized extends Error {}

function headers(accept) {
  const hs = { Accept: accept };
  const t = token.get();
  if (t) hs.Authorization = `Bearer ${t}`;
  return hs;
}

// request sends one API request and reads its JSON answer; it throws
// Unauthorized on a 401 and returns {status, ok, data} otherwise.
export async function request(method, path, { signal } = {}) {
  const res = await fetch(path, { method, headers: headers('application/json'), signal, cache: 'no-store', credentials: 'omit' });
  let data = {};
  try {
    data = await res.json();
  } catch {
    data = {};
  }
  if (res.status === 401) throw new Unauthorized(data.error || 'a bearer token is required');
  return { status: res.status, ok: res.ok, data };
}

// follow reads the server-sent events of path through fetch, so that the
// token rides in a header (EventSource cannot send one). onOpen runs once
// the stream is established; onEvent gets each event's parsed data, or
// {dropped: n} when the daemon dropped n events for this slow reader. It
// resolves when the daemon ends the stream.
export async function follow(path, { signal, onOpen, onEvent }) {
  const res = await fetch(path, { headers: headers('text/event-stream'), signal, cache: 'no-store', credentials: 'omit' });
  if (res.status === 401) {
    let msg = 'a bearer token is required';
    try {
      msg = (await res.json()).error || msg;
    } catch {
      // the status says enough
    }
    throw new Unauthorized(msg);
  }
  if (!res.ok || !res.body) throw new Error(`event stream: HTTP ${res.status}`);
  onOpen();
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      parseBlock(block, onEvent);
    }
  }
}

function parseBlock(block, onEvent) {
  const data = [];
  for (const line of block.split('\n')) {
    if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    else if (line.startsWith(': dropped ')) onEvent({ dropped: Number(line.slice(10)) });
  }
  if (data.length === 0) return;
  let ev;
  try {
    ev = JSON.parse(data.join('\n'));
  } catch {
    return; // not an event of ours
  }
  onEvent(ev);
}

// plural is the API's path segment of a kind.
export function plural(kind) {
  return { MCPServer: 'mcpservers', Workflow: 'workflows' }[kind] || String(kind).toLowerCase() + 's';
}

// resourcePath is the API path of a resource.
export function resourcePath(key) {
  return `/api/v1/resources/${plural(key.kind)}/${encodeURIComponent(key.namespace)}/${encodeURIComponent(key.name)}`;
}

// keyString names a resource as the page's maps do.
export function keyString(key) {
  return `${key.kind}/${key.namespace}/${key.name}`;
}

// keysOf returns the resource keys an event names.
export function keysOf(ev) {
  const e = (ev && ev.event) || {};
  if (e.key && e.key.kind) return [e.key];
  if (Array.isArray(e.keys)) return e.keys.map((k) => k.key || k).filter((k) => k && k.kind);
  return [];
}
