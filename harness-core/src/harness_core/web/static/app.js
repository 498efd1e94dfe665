// The harness web page: sessions, a live conversation over Server-Sent Events, the input dock.
// Model and tool text is only ever set as text (textContent), never parsed as HTML.

const $ = (id) => document.getElementById(id);
const state = { id: null, stream: null, lastSeq: -1, rows: new Map(), questions: new Map(), streaming: "",
                snapshotListeners: [], unmounts: [], config: { model: null, demo: null } };

// The token comes from the printed URL once and then lives in this tab's sessionStorage, which
// is per origin (so per port), and goes out only as a bearer header. Never a cookie: cookies are
// not separated by port, so the browser would hand it to every other server on 127.0.0.1.
const TOKEN = takeToken();

function takeToken() {
  const url = new URL(location.href);
  const given = url.searchParams.get("token");
  if (given !== null) {
    sessionStorage.setItem("harness:token", given);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);  // out of the address bar
  }
  return sessionStorage.getItem("harness:token") || "";
}

function authorized(headers = {}) {
  return { authorization: `Bearer ${TOKEN}`, ...headers };
}

async function api(path, options = {}) {
  const response = await fetch(path, { credentials: "omit", ...options,
    headers: authorized({ "content-type": "application/json", ...(options.headers || {}) }) });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function status(text) { $("status").textContent = text || ""; }

// Characters that change how a command reads without showing themselves: every format
// character (Cf: bidi overrides and isolates, marks, zero-width ones) and the line separators.
// A command is shown with each as a visible escape, so "Allow once" allows what it shows.
const INVISIBLE = /[\p{Cf}\u2028\u2029]/gu;

function visible(text) {
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of text.matchAll(INVISIBLE)) {
    fragment.append(text.slice(last, match.index));
    const code = match[0].codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
    fragment.append(el("span", { class: "escaped", "data-testid": "escaped" }, `\\u{${code}}`));
    last = match.index + match[0].length;
  }
  fragment.append(text.slice(last));
  return fragment;
}

// -- Markdown, safely: a small subset built from DOM nodes, never innerHTML ------------------

function inline(parent, text) {
  const pattern = /(`[^`]+`|\*\*[^*]+\*\*|\*[^*\s][^*]*\*|\[[^\]]+\]\((https?:\/\/[^)\s]+)\))/g;
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    parent.append(text.slice(last, match.index));
    const token = match[0];
    if (token.startsWith("`")) parent.append(el("code", {}, token.slice(1, -1)));
    else if (token.startsWith("**")) parent.append(el("strong", {}, token.slice(2, -2)));
    else if (token.startsWith("*")) parent.append(el("em", {}, token.slice(1, -1)));
    else {
      const label = token.slice(1, token.indexOf("]("));
      parent.append(el("a", { href: match[2], rel: "noopener noreferrer", target: "_blank" }, label));
    }
    last = match.index + token.length;
  }
  parent.append(text.slice(last));
}

function markdown(text) {
  const root = document.createDocumentFragment();
  const lines = text.split("\n");
  let list = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith("```")) {
      const code = [];
      while (++i < lines.length && !lines[i].startsWith("```")) code.push(lines[i]);
      const pre = el("pre"); pre.append(el("code", {}, code.join("\n"))); root.append(pre);
      list = null; continue;
    }
    const heading = /^(#{1,4})\s+(.*)$/.exec(line);
    const item = /^\s*(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
    if (heading) { const h = el(`h${heading[1].length + 2}`); inline(h, heading[2]); root.append(h); list = null; }
    else if (item) {
      if (!list) { list = el(/^\s*\d/.test(line) ? "ol" : "ul"); root.append(list); }
      const li = el("li"); inline(li, item[1]); list.append(li);
    } else if (line.trim()) { const p = el("p"); inline(p, line); root.append(p); list = null; }
    else list = null;
  }
  return root;
}

// -- rendering events ------------------------------------------------------------------------

function summaryOf(row) {
  const label = row.label && row.label !== row.name ? row.label : "";
  return [label, row.summary].filter(Boolean).join(" · ") || row.name;
}

function applyRow(row) {
  const node = state.rows.get(row.call_id);
  if (!node) return;
  node.dataset.state = row.state === "running" && state.questions.has(row.call_id) ? "waiting" : row.state;
  node.querySelector("[data-testid=tool-summary]").replaceChildren(visible(summaryOf(row)));
  node.querySelector("[data-testid=approval-note]").textContent = row.approval || "";
}

// -- approval: a call waits for allow once / allow for this session / deny -----------------

function answer(callId, reply, buttons) {
  for (const button of buttons.querySelectorAll("button")) button.disabled = true;
  api(`/api/sessions/${state.id}/approvals`, { method: "POST", body: JSON.stringify({ call_id: callId, answer: reply }) })
    .catch((e) => status(e.message));
}

function askBox(question) {
  const box = el("div", { class: "approval", "data-testid": "approval" });
  if (question.detail) {
    const detail = el("pre", { "data-testid": "approval-detail" });
    detail.append(visible(question.detail));
    box.append(detail);
  }
  const buttons = el("div", { class: "approval-buttons" });
  for (const [testid, reply, label] of [["allow", "once", "Allow once"],
      ["allow-session", "session", `Allow ${question.tool} for this session`], ["deny", "deny", "Deny"]]) {
    const button = el("button", { type: "button", "data-testid": testid }, label);
    button.onclick = () => answer(question.call_id, reply, buttons);
    buttons.append(button);
  }
  box.append(buttons);
  return box;
}

// The open questions (the snapshot's `approvals`): a question about a call on this page waits
// in its row; one about a call the page does not show (a subagent's) waits in a card.
function applyQuestions(questions) {
  const open = new Map(questions.map((q) => [q.call_id, q]));
  for (const [callId] of state.questions) {
    const node = state.rows.get(callId);
    if (open.has(callId) || !node) continue;
    node.querySelector("[data-testid=approval]")?.remove();
    if (node.dataset.state === "waiting") node.dataset.state = "running";
  }
  const cards = [];
  for (const question of open.values()) {
    const node = state.rows.get(question.call_id);
    if (!node) {
      const card = el("div", { class: "approval-card", "data-testid": "approval-card", "data-tool": question.tool });
      const where = question.session_id === state.id ? "" : " (in a subagent)";
      const line = el("div");
      line.append(visible(`${question.tool}${where} wants to run: ${question.summary}`));
      card.append(line, askBox(question));
      cards.push(card);
    } else if (!state.questions.has(question.call_id) || !node.querySelector("[data-testid=approval]")) {
      node.dataset.state = "waiting";
      node.append(askBox(question));
    }
  }
  $("approvals").replaceChildren(...cards);
  state.questions = open;
}

function toolRow(call) {
  const row = el("div", { "data-testid": "tool-row", "data-tool": call.name, "data-state": "running",
                          class: "tool-row" });
  const details = el("details");
  const head = el("summary");
  head.append(el("span", { class: "mark" }), el("span", { class: "name" }, call.name),
              el("span", { "data-testid": "tool-summary" }, call.name));
  details.append(head, el("pre", { "data-testid": "tool-output" }, ""));
  row.append(details, el("div", { class: "approval-note", "data-testid": "approval-note" }));
  state.rows.set(call.id, row);
  const question = state.questions.get(call.id);
  if (question) { row.dataset.state = "waiting"; row.append(askBox(question)); }
  return row;
}

function render(envelope, into) {
  const data = envelope.data;
  switch (envelope.type) {
    case "message/user":
      into.append(el("div", { "data-testid": "message", "data-role": "user", class: "message user" }, data.text));
      break;
    case "message/assistant": {
      const message = el("div", { "data-testid": "message", "data-role": "assistant", class: "message assistant" });
      if (data.reasoning_content) {
        const thought = el("details", { class: "reasoning" });
        thought.append(el("summary", {}, "reasoning"), el("div", {}, data.reasoning_content));
        message.append(thought);
      }
      if (data.text) message.append(markdown(data.text));
      into.append(message);
      for (const call of data.tool_calls || []) into.append(toolRow(call));
      break;
    }
    case "tool/result": {
      const row = state.rows.get(data.call_id);
      if (row) {
        row.dataset.state = data.is_error ? "error" : "ok";
        row.querySelector("[data-testid=tool-output]").textContent = data.text;
      }
      break;
    }
    case "turn/end":
      if (data.status !== "completed") {
        into.append(el("div", { class: "turn-note" }, `turn ${data.status}${data.error && data.error !== data.status ? ": " + data.error : ""}`));
      }
      break;
    case "context/compact":
      into.append(el("div", { class: "turn-note", "data-testid": "compaction" },
        `context compacted: ${data.last_seq - data.first_seq + 1} events summarized`));
      break;
  }
}

function live(envelope) {
  if (envelope.seq <= state.lastSeq) return;  // already shown (a reconnect resends)
  state.lastSeq = envelope.seq;
  if (envelope.type === "message/assistant") endStreaming();
  render(envelope, $("messages"));
  $("messages").scrollTop = $("messages").scrollHeight;
}

function streamDelta(delta) {
  if (delta.kind !== "text") return;
  state.streaming += delta.text;
  const box = $("streaming");
  box.hidden = false;
  box.textContent = state.streaming;
}

function endStreaming() {
  state.streaming = "";
  $("streaming").hidden = true;
  $("streaming").textContent = "";
}

function applySnapshot(snapshot) {
  $("cancel").disabled = !snapshot.running;
  applyQuestions(snapshot.approvals || []);
  const queue = $("queue");
  queue.replaceChildren(...(snapshot.queued || []).map((prompt) =>
    el("li", { "data-testid": "queue-item" }, prompt)));
  for (const listener of state.snapshotListeners) listener(snapshot);
}

// -- the dock: plugins' panels above the prompt ---------------------------------------------

async function mountDock(sessionId) {
  for (const unmount of state.unmounts) unmount();
  state.unmounts = [];
  state.snapshotListeners = [];
  const slot = $("dock-slot");
  slot.replaceChildren();
  const entries = await api("/api/dock");
  for (const entry of entries.filter((e) => e.slot === "conversation.input.dock")) {
    const box = el("div", { class: "dock-entry" });
    slot.append(box);
    try {
      const module = await import(entry.url);
      const unmount = module.mount(box, {
        sessionId,
        onSnapshot: (listener) => state.snapshotListeners.push(listener),
        storage: {
          get: (key) => localStorage.getItem(`harness:${sessionId}:${key}`),
          set: (key, value) => localStorage.setItem(`harness:${sessionId}:${key}`, value),
        },
      });
      if (typeof unmount === "function") state.unmounts.push(unmount);
    } catch (error) {
      console.error("dock entry failed", entry.url, error);
    }
  }
}

// -- sessions --------------------------------------------------------------------------------

async function listSessions() {
  const { sessions } = await api("/api/sessions");
  $("sessions").replaceChildren(...sessions.map((s) => {
    const link = el("a", { href: `#/s/${s.id}`, "data-testid": "session-link", "data-id": s.id },
                    s.title || "(no prompt yet)");
    if (s.id === state.id) link.classList.add("current");
    link.append(el("small", {}, `${s.updated.slice(0, 19).replace("T", " ")} · ${s.events} events`));
    return link;
  }));
}

function prepend(events) {
  const fragment = document.createDocumentFragment();
  for (const envelope of events) render(envelope, fragment);
  $("messages").prepend(fragment);
}

async function openSession(id) {
  state.stream?.abort();
  Object.assign(state, { id, lastSeq: -1, rows: new Map(), questions: new Map() });
  $("approvals").replaceChildren();
  endStreaming();
  $("messages").replaceChildren();
  await mountDock(id);
  const page = await api(`/api/sessions/${id}/history?limit=200`);
  for (const envelope of page.events) live(envelope);
  for (const row of Object.values(page.rows || {})) applyRow(row);
  applySnapshot(page.snapshot);
  showOlder(page.before);
  connect(id);
  document.body.dataset.session = id;  // the page shows this session now (tests wait on it)
  listSessions();
}

function showOlder(before) {
  const button = $("older");
  button.hidden = before === null;
  button.onclick = async () => {
    const page = await api(`/api/sessions/${state.id}/history?before=${before}&limit=200`);
    prepend(page.events);
    for (const row of Object.values(page.rows || {})) applyRow(row);
    showOlder(page.before);
  };
}

// The event stream, read with fetch so it can carry the bearer header (EventSource cannot).
// It reconnects from the last seq shown, as EventSource would with Last-Event-ID.
const handlers = {
  message: (envelope) => {
    live(envelope);
    if (envelope.type === "turn/end" || envelope.type === "message/user") listSessions();
  },
  delta: streamDelta,
  row: applyRow,
  snapshot: (snapshot) => {
    // The server's log ends before what this page showed (another log under the same id):
    // start over from the tail page rather than wait for seqs that already passed.
    if (snapshot.seq < state.lastSeq) { openSession(state.id).catch((e) => status(e.message)); return; }
    applySnapshot(snapshot);
  },
  approval: (question) => applyQuestions([...state.questions.values(), question]),
};

function connect(id) {
  const stream = new AbortController();
  state.stream = stream;
  follow(id, stream.signal);
}

async function follow(id, signal) {
  while (!signal.aborted) {
    try {
      const response = await fetch(`/api/sessions/${id}/events?after=${state.lastSeq}`,
        { credentials: "omit", headers: authorized(), signal });
      if (response.status === 401 || response.status === 404) {
        status((await response.json()).error);
        return;
      }
      if (response.ok) {
        status("");
        await readEvents(response.body, signal);
      }
    } catch (error) {
      if (signal.aborted) return;
    }
    status("connection lost: reconnecting…");
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function readEvents(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "", fields = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done || signal.aborted) return;
    const lines = (buffer + value).split(/\r\n|\r|\n/);
    buffer = lines.pop();
    for (const line of lines) {
      if (line === "") {
        const handler = handlers[fields.event || "message"];
        if (handler && fields.data !== undefined && state.stream?.signal === signal) handler(JSON.parse(fields.data));
        fields = {};
      } else if (!line.startsWith(":")) {
        const colon = line.indexOf(":");
        const name = colon < 0 ? line : line.slice(0, colon);
        const text = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        fields[name] = name === "data" && fields.data !== undefined ? `${fields.data}\n${text}` : text;
      }
    }
  }
}

async function send(prompt, model) {
  const body = model ? { prompt, model } : { prompt };
  await api(`/api/sessions/${state.id}/turns`, { method: "POST", body: JSON.stringify(body) });
}

async function newSession(model) {
  const { id } = await api("/api/sessions", { method: "POST", body: JSON.stringify(model ? { model } : {}) });
  location.hash = `#/s/${id}`;
  return id;
}

function route() {
  const match = /^#\/s\/([A-Za-z0-9._-]+)$/.exec(location.hash);
  if (match && match[1] !== state.id) openSession(match[1]).catch((e) => status(e.message));
}

async function start() {
  state.config = await api("/api/config");
  $("demo").hidden = state.config.model !== null;
  $("demo").onclick = async () => {
    const id = await newSession("demo");
    await openSession(id);
    $("messages").append(el("div", { class: "turn-note", "data-testid": "demo-note" },
      "demo: its commands are fixed and harmless, so tools run without asking"));
    await send(state.config.demo);
  };
  $("new-session").onclick = () => newSession(null).catch((e) => status(e.message));
  $("composer").onsubmit = (event) => {
    event.preventDefault();
    const prompt = $("prompt").value;
    if (!prompt.trim() || !state.id) return;
    $("prompt").value = "";
    send(prompt).catch((e) => status(e.message));
  };
  $("prompt").onkeydown = (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("composer").requestSubmit(); }
  };
  $("cancel").onclick = () => api(`/api/sessions/${state.id}/cancel`, { method: "POST" })
    .catch((e) => status(e.message));
  window.addEventListener("hashchange", route);
  await listSessions();
  route();
}

start().catch((error) => status(error.message));
