// musterd's live page: follows the API's event stream and re-reads only
// what an event says changed. No polling loop: the only timers are the
// coalescing of re-reads (one per burst of events), the reconnect's
// backoff after the stream ends, and the ageing of the servers' recent
// calls while a row shows some (servers.js), which asks nothing of the API.

import { token, request, follow, Unauthorized, keysOf, keyString, resourcePath } from './api.js';
import { h, clear, badge } from './dom.js';
import * as overview from './overview.js';
import * as servers from './servers.js';
import * as workflows from './workflows.js';
import * as history from './history.js';
import * as live from './events.js';

// resources holds every declared resource the page knows, by keyString.
const resources = new Map();

const page = {
  resources,
  // act sends a control request; the answer is shown, a 401 asks for the
  // token.
  async act(path, what) {
    const out = document.getElementById('action-result');
    try {
      const res = await request('POST', path);
      out.textContent = res.ok ? `${what}: done${res.data.state ? `, state ${res.data.state}` : ''}` : `${what}: ${res.data.error || `HTTP ${res.status}`}`;
    } catch (err) {
      if (err instanceof Unauthorized) return needToken(err.message);
      out.textContent = `${what}: ${err.message}`;
    }
  },
  // read GETs an API path; a 401 asks for the token and yields null.
  async read(path) {
    try {
      return await request('GET', path);
    } catch (err) {
      if (err instanceof Unauthorized) needToken(err.message);
      else setConn('bad', `Request failed: ${err.message}`);
      return null;
    }
  },
  selectHistory(key) {
    history.select(page, key);
  },
};

// --- the connection ---

let stream = null; // AbortController of the current stream
let backoff = 1000;
let reconnectTimer = 0;

function setConn(state, word) {
  const cls = { live: 'live', connecting: 'connecting', token: 'no', bad: 'failed' }[state];
  clear(document.getElementById('conn')).append(badge(cls, word));
  document.body.dataset.conn = state;
}

async function connect() {
  clearTimeout(reconnectTimer);
  if (stream) stream.abort();
  const ctl = new AbortController();
  stream = ctl;
  setConn('connecting', 'Connecting');
  try {
    await follow('/api/v1/events', {
      signal: ctl.signal,
      onOpen: () => {
        backoff = 1000;
        hidePrompt();
        setConn('live', 'Live');
        // Subscribed first, read second: nothing that changes after the
        // read is missed.
        reloadAll();
      },
      onEvent,
    });
    if (ctl.signal.aborted) return;
    setConn('connecting', 'Stream ended; reconnecting');
  } catch (err) {
    if (ctl.signal.aborted) return;
    if (err instanceof Unauthorized) {
      needToken(err.message);
      return;
    }
    setConn('bad', `Disconnected (${err.message}); reconnecting`);
  }
  reconnectTimer = setTimeout(connect, backoff);
  backoff = Math.min(backoff * 2, 30000);
}

// needToken shows the prompt: with no token, that one is needed; with
// one, that it was refused (and it is forgotten).
function needToken(why) {
  if (stream) stream.abort();
  const had = token.get() !== '';
  token.clear();
  setConn('token', had ? 'Token refused' : 'Token needed');
  const prompt = document.getElementById('token-prompt');
  document.getElementById('token-why').textContent = had ? `The token was refused: ${why}. Enter another.` : `This daemon needs a bearer token: ${why}.`;
  prompt.hidden = false;
  document.getElementById('main').hidden = true;
  document.getElementById('token-input').focus();
}

function hidePrompt() {
  document.getElementById('token-prompt').hidden = true;
  document.getElementById('main').hidden = false;
}

document.getElementById('token-form').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const input = document.getElementById('token-input');
  token.set(input.value.trim());
  input.value = '';
  connect();
});

// --- reading what changed ---

async function reloadAll() {
  const [list] = await Promise.all([page.read('/api/v1/resources'), loadOverview(), loadExecutions()]);
  if (!list || !list.ok) return;
  const seen = new Set();
  for (const obj of list.data.items || []) {
    const k = keyString(objKey(obj));
    seen.add(k);
    resources.set(k, obj);
    render(obj);
  }
  for (const [k, obj] of resources) {
    if (!seen.has(k)) {
      resources.delete(k);
      unrender(objKey(obj));
    }
  }
  history.resourcesChanged(page);
}

function objKey(obj) {
  return { kind: obj.kind, namespace: obj.metadata.namespace, name: obj.metadata.name };
}

function render(obj) {
  if (obj.kind === 'MCPServer') servers.update(page, obj);
  else if (obj.kind === 'Workflow') workflows.update(page, obj);
}

function unrender(key) {
  if (key.kind === 'MCPServer') servers.remove(key);
  else if (key.kind === 'Workflow') workflows.remove(key);
}

async function loadResource(key) {
  const res = await page.read(resourcePath(key));
  if (!res) return;
  const k = keyString(key);
  if (res.status === 404) {
    if (resources.delete(k)) {
      unrender(key);
      history.resourcesChanged(page);
    }
    return;
  }
  if (!res.ok) return;
  const isNew = !resources.has(k);
  resources.set(k, res.data);
  render(res.data);
  if (isNew) history.resourcesChanged(page);
}

async function loadOverview() {
  const res = await page.read('/api/v1/overview');
  if (res && res.ok) overview.render(res.data);
}

async function loadExecutions() {
  const res = await page.read('/api/v1/executions?limit=20');
  if (res && res.ok) workflows.executions(page, res.data.executions || []);
  else if (res && res.status === 404) workflows.executions(page, []);
}

// A burst of events is one re-read of each thing it names, a moment
// later: a reconcile publishes several events per resource.
const pending = { keys: new Map(), overview: false, executions: false, runs: new Set() };
let flushTimer = 0;

function schedule() {
  if (!flushTimer) flushTimer = setTimeout(flush, 100);
}

function flush() {
  flushTimer = 0;
  const { keys, runs } = pending;
  pending.keys = new Map();
  pending.runs = new Set();
  for (const key of keys.values()) loadResource(key);
  if (pending.overview) loadOverview();
  if (pending.executions) loadExecutions();
  for (const id of runs) workflows.reloadExecution(page, id);
  pending.overview = pending.executions = false;
}

const executionTypes = new Set(['WorkflowExecutionStarted', 'WorkflowExecutionFinished', 'WorkflowStepStarted', 'WorkflowStepFinished']);
const rereadTypes = new Set(['ResourceChanged', 'ResourceSynced', 'ResourceFailed', 'StatusSynced', 'ServiceStateChanged', 'DefinitionValidated']);

function onEvent(ev) {
  if (ev.dropped) {
    // Events were lost: what they said is read again, whole.
    live.dropped(ev.dropped);
    reloadAll();
    return;
  }
  live.add(ev);
  history.event(page, ev);
  const e = ev.event || {};
  if (ev.type === 'ServiceStateChanged' && e.key) {
    // The state is in the event: shown at once, the rest re-read.
    servers.showState(e.key, e.state);
  }
  if (executionTypes.has(ev.type)) {
    if (ev.type.startsWith('WorkflowExecution')) pending.executions = true;
    if (e.executionId && workflows.isOpen(e.executionId)) pending.runs.add(e.executionId);
    schedule();
    return;
  }
  if (ev.type === 'ToolCallsCounted') {
    // A server's calls of an interval are counted: its row is read again;
    // nothing else changed.
    for (const key of keysOf(ev)) pending.keys.set(keyString(key), key);
    schedule();
    return;
  }
  if (rereadTypes.has(ev.type)) {
    for (const key of keysOf(ev)) pending.keys.set(keyString(key), key);
  }
  pending.overview = true;
  schedule();
}

connect();
