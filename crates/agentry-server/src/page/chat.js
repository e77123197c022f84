// The agentry chat page: a list of this browser's sessions, a conversation
// streamed from `POST v1/sessions/{id}/turns` (server-sent events), prompts
// to approve or deny a call a durable run waits on, and a
// small Markdown renderer that only ever builds DOM nodes, so nothing a
// model writes can become markup or script. No libraries, no build step.
'use strict';

// ---- Markdown: text in, a DocumentFragment out (never innerHTML) ----------

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+.#-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)(?:\s+#+)?\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
// Inline spans, leftmost first; at one position the earlier alternative wins:
// code, link, **bold**, __bold__, *italic*, _italic_.
const INLINE = new RegExp([
  /(`+)([^`][\s\S]*?)\1(?!`)/.source,
  /\[([^\]\n]+)\]\(\s*<?([^()\s<>]+)>?(?:\s+"[^"\n]*")?\s*\)/.source,
  /\*\*(?=\S)([\s\S]*?\S)\*\*(?!\*)/.source,
  /(?<!\w)__(?=\S)([\s\S]*?\S)__(?!\w)/.source,
  /(?<!\w)\*(?=[^\s*])([\s\S]*?[^\s*])\*(?!\w)/.source,
  /(?<!\w)_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/.source,
].join('|'), 'g');

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  if (props) {
    for (const [key, value] of Object.entries(props)) {
      if (key === 'text') node.textContent = value;
      else if (key === 'class') node.className = value;
      else if (key.startsWith('data-') || key === 'href' || key === 'rel' || key === 'target') node.setAttribute(key, value);
      else node[key] = value;
    }
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
}

// The URL of a link if it is http:, https: or mailto:, else null.
function safeUrl(raw) {
  try {
    const url = new URL(raw);
    return ['http:', 'https:', 'mailto:'].includes(url.protocol) ? url.href : null;
  } catch {
    return null;
  }
}

// Text with its newlines as <br>.
function appendText(parent, text) {
  text.split('\n').forEach((line, i) => {
    if (i > 0) parent.append(el('br'));
    if (line) parent.append(document.createTextNode(line));
  });
}

// Inline Markdown of `text` appended to `parent`.
function renderInline(text, parent) {
  let last = 0;
  INLINE.lastIndex = 0;
  for (const m of text.matchAll(INLINE)) {
    appendText(parent, text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[1]) {
      let code = m[2];
      if (/^ [\s\S]* $/.test(code) && code.trim()) code = code.slice(1, -1);
      parent.append(el('code', { text: code }));
    } else if (m[3] !== undefined) {
      const href = safeUrl(m[4]);
      if (href) {
        const a = el('a', { href, rel: 'noopener noreferrer', target: '_blank' });
        renderInline(m[3], a);
        parent.append(a);
      } else {
        appendText(parent, m[0]); // not a URL we link: shown as written
      }
    } else if (m[5] !== undefined || m[6] !== undefined) {
      const strong = el('strong');
      renderInline(m[5] ?? m[6], strong);
      parent.append(strong);
    } else {
      const em = el('em');
      renderInline(m[7] ?? m[8], em);
      parent.append(em);
    }
  }
  appendText(parent, text.slice(last));
}

// Block Markdown of `text` as a fragment: paragraphs, fenced code, headings,
// rules, quotes and (nested) bullet and numbered lists.
function renderMarkdown(text) {
  const out = document.createDocumentFragment();
  const lines = String(text).replace(/\r\n?/g, '\n').split('\n');
  let para = null;      // lines of the paragraph being gathered
  let lists = [];       // open lists, outermost first: {node, indent, item}
  const flushPara = () => {
    if (para) out.append(inlineBlock('p', para.join('\n')));
    para = null;
  };
  const closeLists = () => { lists = []; };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m;
    if ((m = FENCE.exec(line))) {
      flushPara(); closeLists();
      const body = [];
      const close = new RegExp('^ {0,3}' + m[1][0] + '{' + m[1].length + ',}\\s*$');
      while (++i < lines.length && !close.test(lines[i])) body.push(lines[i]);
      const code = el('code', { text: body.join('\n') });
      if (m[2]) code.className = 'language-' + m[2];
      out.append(el('pre', null, code)); // an unclosed fence runs to the end
    } else if (!line.trim()) {
      flushPara();
      // A blank line ends a list unless the list goes on after it.
      const next = lines.slice(i + 1).find((l) => l.trim());
      if (!next || !ITEM.test(next)) closeLists();
    } else if ((m = HEADING.exec(line))) {
      flushPara(); closeLists();
      out.append(inlineBlock('h' + m[1].length, m[2]));
    } else if (RULE.test(line)) {
      flushPara(); closeLists();
      out.append(el('hr'));
    } else if ((m = QUOTE.exec(line))) {
      flushPara(); closeLists();
      const quoted = [m[1]];
      while (i + 1 < lines.length && (m = QUOTE.exec(lines[i + 1]))) { quoted.push(m[1]); i++; }
      out.append(el('blockquote', null, renderMarkdown(quoted.join('\n'))));
    } else if ((m = ITEM.exec(line))) {
      flushPara();
      const indent = m[1].replace(/\t/g, '    ').length;
      const ordered = /\d/.test(m[2]);
      while (lists.length && indent < lists[lists.length - 1].indent) lists.pop();
      let top = lists[lists.length - 1];
      if (top && indent > top.indent) top = null;   // deeper: a new list inside the item
      if (top && top.ordered !== ordered) { lists.pop(); top = null; }
      if (!top) {
        const node = el(ordered ? 'ol' : 'ul');
        const start = parseInt(m[2], 10);
        if (ordered && start !== 1) node.start = start;
        const parent = lists[lists.length - 1];
        (parent && indent > parent.indent ? parent.item : out).append(node);
        top = { node, indent, ordered, item: null };
        lists.push(top);
      }
      top.item = inlineBlock('li', m[3]);
      top.node.append(top.item);
    } else if (lists.length) {
      // A line under a list item continues it.
      const item = lists[lists.length - 1].item;
      item.append(el('br'));
      renderInline(line.trim(), item);
    } else {
      (para = para || []).push(line);
    }
  }
  flushPara();
  return out;
}

function inlineBlock(tag, text) {
  const node = el(tag);
  renderInline(text, node);
  return node;
}

// ---- State kept in this browser -------------------------------------------

const store = {
  get(key, fallback) {
    try { return JSON.parse(localStorage.getItem('agentry.' + key)) ?? fallback; } catch { return fallback; }
  },
  set(key, value) { localStorage.setItem('agentry.' + key, JSON.stringify(value)); },
};
// Sessions, newest first: {id, title, sent} (`sent`: the server has messages).
let sessions = store.get('sessions', []);
let current = store.get('current', null);
let running = null;       // the AbortController of the reply being streamed
const $ = (id) => document.getElementById(id);
const body = document.body;

function saveSessions() {
  store.set('sessions', sessions);
  store.set('current', current);
}

function newSessionId() {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return 'chat-' + Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

// ---- The API ---------------------------------------------------------------

function api(path, options = {}) {
  const headers = { Accept: 'application/json', ...options.headers };
  const key = store.get('apiKey', '');
  if (key) headers.Authorization = 'Bearer ' + key;
  return fetch('v1/' + path, { ...options, headers });
}

// Throws the server's `{"error": {"message"}}` (or the status) for a failed response.
async function check(response) {
  if (response.ok) return response;
  let message = response.statusText || 'request failed';
  try { message = (await response.json()).error.message || message; } catch { /* not JSON */ }
  if (response.status === 401) showKeyForm(store.get('apiKey', '') ? 'That key was refused.' : '');
  throw Object.assign(new Error(`HTTP ${response.status}: ${message}`), { status: response.status });
}

const sessionPath = (id) => 'sessions/' + encodeURIComponent(id);

// ---- Rendering the conversation ---------------------------------------------

const list = $('messages');

function scrollDown(force) {
  const height = document.documentElement.scrollHeight;
  if (force || window.innerHeight + window.scrollY >= height - 160) window.scrollTo(0, height);
}

// A message of `role` (user, assistant or error); user and error text is plain.
function addMessage(role, text) {
  const node = el('div', { class: 'msg msg-' + role, 'data-testid': 'message', 'data-role': role });
  if (role === 'assistant') node.append(assistantPart(text));
  else node.append(el('div', { class: 'content', 'data-testid': 'message-content', text }));
  list.append(node);
  $('empty').hidden = true;
  scrollDown(true);
  return node;
}

function assistantPart(text) {
  const part = el('div', { class: 'content markdown', 'data-testid': 'message-content' });
  part.source = text;
  part.append(renderMarkdown(text));
  return part;
}

// Tool output as text: JSON pretty-printed, a string as it is (or as JSON if it is JSON).
function pretty(value) {
  if (typeof value === 'string') {
    try {
      const parsed = JSON.parse(value);
      if (parsed && typeof parsed === 'object') return JSON.stringify(parsed, null, 2);
    } catch { /* plain text */ }
    return value;
  }
  return JSON.stringify(value, null, 2);
}

// A folded tool call: name in the summary, arguments (and later the result) inside.
function toolCallNode(call) {
  const status = el('span', { class: 'tool-status', text: 'running…' });
  const node = el('details', { class: 'tool', 'data-testid': 'tool-call', 'data-tool-name': call.name },
    el('summary', null, el('span', { class: 'tool-label', text: 'tool' }), ' ',
      el('code', { text: call.name }), ' ', status),
    el('div', { class: 'tool-heading', text: 'Arguments' }),
    el('pre', { 'data-testid': 'tool-arguments', text: pretty(call.input ?? {}) }));
  node.status = status;
  return node;
}

function setToolResult(node, result) {
  node.append(el('div', { class: 'tool-heading', text: result.is_error ? 'Error' : 'Result' }),
    el('pre', { 'data-testid': 'tool-result', text: pretty(result.output) }));
  node.status.textContent = result.is_error ? 'error' : 'done';
  if (result.is_error) {
    node.classList.add('tool-error');
    node.dataset.error = 'true';
  }
}

// ---- Durable runs: a call that waits for the person's approval -----------------

const runPath = (id) => 'runs/' + encodeURIComponent(id);

// The prompt for one waiting call: what the agent wants to run, and the
// buttons that decide (`POST v1/runs/{run}/approvals`). `onDecided` gets the
// run as the server answers (resumed to its end, or waiting again).
function approvalNode(run, call, onDecided) {
  const why = call.reason === 'interrupted'
    ? ' was started and never finished (it may already have run). Run it again?'
    : ' needs your approval.';
  const reason = el('input', { type: 'text', class: 'approval-reason', 'data-testid': 'approval-reason',
    placeholder: 'Reason, if you deny (the agent reads it)', maxLength: 500 });
  const approve = el('button', { type: 'button', class: 'approve', 'data-testid': 'approve', text: 'Approve' });
  const deny = el('button', { type: 'button', class: 'deny', 'data-testid': 'deny', text: 'Deny' });
  const node = el('div', { class: 'approval', 'data-testid': 'approval', 'data-call-id': call.call_id, role: 'group' },
    el('div', { class: 'approval-text' }, 'The agent wants to run ', el('code', { text: call.tool }), why),
    el('pre', { 'data-testid': 'approval-input', text: pretty(call.input ?? {}) }),
    el('div', { class: 'approval-actions' }, approve, deny, reason));
  node.setAttribute('aria-label', 'Approve or deny ' + call.tool);
  const decide = async (decision) => {
    approve.disabled = deny.disabled = reason.disabled = true;
    const request = { call_id: call.call_id, decision };
    if (decision === 'deny') request.reason = reason.value.trim() || 'The user declined.';
    setStatus(decision === 'approve' ? 'Approved: the agent goes on…' : 'Denied: the agent goes on…');
    try {
      const response = await check(await api(runPath(run) + '/approvals', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(request),
      }));
      onDecided(await response.json());
    } catch (error) {
      approve.disabled = deny.disabled = reason.disabled = false;
      addMessage('error', error.message);
    } finally {
      setStatus('');
      body.dataset.decisions = String(Number(body.dataset.decisions || 0) + 1);
    }
  };
  approve.addEventListener('click', () => decide('approve'));
  deny.addEventListener('click', () => decide('deny'));
  return node;
}

// The reply of a durable run, drawn again from the run as the server holds
// it: each step's text and tool calls with their results, then what still
// waits (with its prompts), or the answer.
function drawRun(reply, run) {
  reply.replaceChildren();
  for (const step of run.steps || []) {
    if (step.text && step.text.trim()) reply.append(assistantPart(step.text));
    for (const record of step.calls || []) {
      const node = toolCallNode(record.call);
      if (record.result) setToolResult(node, record.result);
      reply.append(node);
    }
  }
  showWaiting(reply, run.id, run.waiting || []);
  body.dataset.waiting = String((run.waiting || []).length > 0);
  scrollDown(true);
}

// Prompts for `waiting` calls of run `id` at the end of `reply`.
function showWaiting(reply, id, waiting) {
  for (const call of waiting) {
    reply.append(approvalNode(id, call, (run) => drawRun(reply, run)));
  }
  if (waiting.length) setStatus('Waiting for your approval');
}

// ---- Sessions sidebar --------------------------------------------------------

function renderSessions() {
  const busy = body.dataset.busy === 'true';
  $('sessions').replaceChildren(...sessions.map((s) => {
    const open = el('button', { type: 'button', class: 'session-open', 'data-testid': 'session-open', text: s.title || 'New chat', title: s.id, disabled: busy });
    open.addEventListener('click', () => selectSession(s.id));
    const remove = el('button', { type: 'button', class: 'session-delete', 'data-testid': 'session-delete', text: '×', title: 'Delete this chat', disabled: busy });
    remove.setAttribute('aria-label', 'Delete chat ' + (s.title || s.id));
    remove.addEventListener('click', () => deleteSession(s.id));
    return el('li', { class: s.id === current ? 'session active' : 'session', 'data-testid': 'session', 'data-session-id': s.id }, open, remove);
  }));
  const active = sessions.find((s) => s.id === current);
  $('title').textContent = active ? active.title || 'New chat' : 'New chat';
  body.dataset.session = current || '';
}

// Show session `id`: its messages come from the server (none yet: an empty chat).
async function selectSession(id) {
  current = id;
  saveSessions();
  renderSessions();
  list.replaceChildren();
  $('empty').hidden = false;
  const session = sessions.find((s) => s.id === id);
  if (!session || !session.sent) return;
  body.dataset.loading = 'true';
  setStatus('Loading…');
  try {
    const response = await api(sessionPath(id) + '/messages');
    if (response.status === 404) return; // nothing stored (yet)
    const data = await (await check(response)).json();
    if (current !== id) return; // another chat was chosen meanwhile
    list.replaceChildren();
    for (const m of data.messages) addMessage(m.role === 'user' ? 'user' : 'assistant', m.text);
    $('empty').hidden = data.messages.length > 0;
  } catch (error) {
    if (current === id) addMessage('error', error.message);
  } finally {
    body.dataset.loading = 'false';
    body.dataset.loads = String(Number(body.dataset.loads || 0) + 1);
    setStatus('');
  }
}

// A new chat, unless the current one is still empty.
function newChat() {
  const active = sessions.find((s) => s.id === current);
  if (!active || active.sent) {
    sessions.unshift({ id: newSessionId(), title: '', sent: false });
    current = sessions[0].id;
  }
  selectSession(current);
  $('input').focus();
}

async function deleteSession(id) {
  const session = sessions.find((s) => s.id === id);
  if (session && session.sent) {
    try {
      const response = await api(sessionPath(id), { method: 'DELETE' });
      if (response.status !== 404) await check(response); // 404: already gone
    } catch (error) {
      addMessage('error', error.message);
      return;
    }
  }
  sessions = sessions.filter((s) => s.id !== id);
  if (current === id) {
    current = sessions.length ? sessions[0].id : null;
    if (current) selectSession(current); else { saveSessions(); renderSessions(); list.replaceChildren(); $('empty').hidden = false; }
  } else {
    saveSessions();
    renderSessions();
  }
}

// ---- Sending a message and streaming the reply --------------------------------

function setStatus(text) { $('status').textContent = text; }

function setBusy(busy) {
  body.dataset.busy = String(busy);
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  $('new-chat').disabled = busy;
  renderSessions();
}

// Parses a server-sent event stream, calling `onEvent(name, data)` per event.
async function readEvents(response, onEvent) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let name = '';
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, end).replace(/\r$/, '');
      buffer = buffer.slice(end + 1);
      if (line === '') {
        if (data.length) onEvent(name || 'message', data.join('\n'));
        name = '';
        data = [];
      } else if (!line.startsWith(':')) {   // `:` lines are keep-alives
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'event') name = value;
        else if (field === 'data') data.push(value);
      }
    }
  }
}

async function send(text) {
  if (!text.trim() || body.dataset.busy === 'true') return;
  if (!current) newChat();
  const id = current;
  const session = sessions.find((s) => s.id === id);
  if (!session.title) session.title = text.trim().replace(/\s+/g, ' ').slice(0, 48);
  sessions = [session, ...sessions.filter((s) => s !== session)]; // latest used first
  addMessage('user', text);
  const controller = new AbortController();
  running = controller;
  setBusy(true);
  setStatus('Thinking…');

  // The reply: one message whose text parts sit around its tool calls.
  let reply = null;
  let part = null;
  let pending = false;
  const calls = new Map();
  let ended = false;
  let waiting = null;        // a durable run stopped for approval: {run, calls}
  const replyNode = () => reply || (reply = addMessage('assistant', ''), part = reply.firstChild, reply);
  const draw = () => { pending = false; if (part) part.replaceChildren(renderMarkdown(part.source)); scrollDown(); };
  const onEvent = (name, raw) => {
    let data = {};
    try { data = JSON.parse(raw); } catch { /* keep {} */ }
    if (name === 'reply:delta') {
      replyNode();
      if (!part) { part = assistantPart(''); reply.append(part); }
      part.source += data.text || '';
      if (!pending) { pending = true; requestAnimationFrame(draw); }
      setStatus('Writing…');
    } else if (name === 'tool:call' && data.call) {
      if (pending) draw();
      const node = toolCallNode(data.call);
      replyNode().append(node);
      if (part && !part.source.trim()) part.remove();  // no text before the call
      part = null;                       // text after it goes below
      calls.set(data.call.id, node);
      setStatus('Running ' + data.call.name + '…');
      scrollDown();
    } else if (name === 'tool:result' && data.result) {
      let node = calls.get(data.result.id);
      if (!node) replyNode().append(node = toolCallNode({ name: data.name || 'tool', input: null }));
      setToolResult(node, data.result);
      setStatus('Thinking…');
    } else if (name === 'run:waiting' && data.run) {
      if (pending) draw();
      for (const call of data.calls || []) {
        const node = calls.get(call.call_id);
        if (node) node.status.textContent = 'waiting for approval';
      }
      waiting = data;
    } else if (name === 'error') {
      addMessage('error', 'The model failed: ' + (data.message || 'unknown error'));
    } else if (name === 'turn:end') {
      ended = true;
      if (!reply && data.text) { replyNode(); part.source = data.text; draw(); }
    }
  };

  try {
    const response = await check(await api(sessionPath(id) + '/turns', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'text/event-stream' },
      body: JSON.stringify({ text }),
      signal: controller.signal,
    }));
    session.sent = true;
    saveSessions();
    await readEvents(response, onEvent);
    if (!ended) addMessage('error', 'The reply ended early (the connection closed).');
  } catch (error) {
    if (error.name === 'AbortError') list.append(el('div', { class: 'notice', text: 'Stopped.' }));
    else addMessage('error', error.status ? error.message : 'Connection failed: ' + error.message);
  } finally {
    if (pending) draw();
    // The prompts go last, once the turn has ended.
    if (waiting) {
      showWaiting(replyNode(), waiting.run, waiting.calls || []);
      body.dataset.waiting = 'true';
    }
    // An assistant message with neither text nor tool calls is dropped.
    if (reply && !reply.textContent.trim()) reply.remove();
    if (part && !part.source.trim() && reply && reply.childElementCount > 1) part.remove();
    running = null;
    setBusy(false);
    if (!waiting) setStatus('');
    body.dataset.turns = String(Number(body.dataset.turns || 0) + 1);
    scrollDown();
  }
}

// ---- The API key form -----------------------------------------------------------

function showKeyForm(note) {
  $('key-form').hidden = false;
  $('key-note').textContent = note || 'It is kept in this browser (localStorage) and sent as a Bearer token.';
  body.dataset.auth = 'needed';
  $('api-key').focus();
}

// Asks the server whether we may call it (with the stored key, if any).
async function probe() {
  try {
    const response = await api('models');
    if (response.status === 401) {
      showKeyForm(store.get('apiKey', '') ? 'That key was refused.' : '');
      return false;
    }
    $('key-form').hidden = true;
    body.dataset.auth = 'ok';
    return true;
  } catch (error) {
    setStatus('The server does not answer: ' + error.message);
    return false;
  }
}

$('key-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  store.set('apiKey', $('api-key').value.trim());
  $('api-key').value = '';
  if (await probe() && current) selectSession(current);
});
$('change-key').addEventListener('click', () => {
  if ($('key-form').hidden) showKeyForm(); else $('key-form').hidden = true;
});

// ---- Wiring -------------------------------------------------------------------------

const input = $('input');
$('composer').addEventListener('submit', (event) => {
  event.preventDefault();
  const text = input.value;
  if (!text.trim() || body.dataset.busy === 'true') return;
  input.value = '';
  grow();
  send(text);
});
input.addEventListener('keydown', (event) => {
  if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    $('composer').requestSubmit();
  }
});
// The input grows with its text, up to a limit (CSSOM, allowed by the CSP).
function grow() {
  input.style.height = 'auto';
  input.style.height = Math.min(input.scrollHeight, 240) + 'px';
}
input.addEventListener('input', grow);
$('stop').addEventListener('click', () => running && running.abort());
$('new-chat').addEventListener('click', newChat);

// For tests and debugging: the renderer, callable from the console.
window.agentryChat = { renderMarkdown };

// Start: ask whether a key is needed, then show the last chat.
(async () => {
  body.dataset.loading = 'false';
  setBusy(false);
  const ok = await probe();
  if (current && !sessions.some((s) => s.id === current)) current = null;
  if (ok && current) await selectSession(current);
  else renderSessions();
  body.dataset.ready = 'true';
})();
