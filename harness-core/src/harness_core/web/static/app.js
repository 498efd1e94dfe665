// The harness web page: sessions, a live conversation over Server-Sent Events, the input dock.
// Model and tool text is only ever set as text (textContent), never parsed as HTML: Markdown
// is tokenized by the vendored `marked` and built here node by node.

// Markdown's library loads beside the page rather than before it: its module is evaluated in a
// task of its own, so the page's first task stays short. A session is drawn once it is here
// (`openSession` waits for it); without it, a message shows as the text it is.
let lexer = null;
const markedLoaded = import("/static/vendor/marked/marked.esm.js")
  .then((marked) => { lexer = marked.lexer; }, (error) => console.error("Markdown did not load", error));

const $ = (id) => document.getElementById(id);
const state = { id: null, generation: 0, stream: null, lastSeq: -1, rows: new Map(), results: new Map(),
                questions: new Map(), streaming: "", snapshotListeners: [], unmounts: [], dock: null,
                config: { model: null, demo: null }, follow: true, running: false, title: "",
                sending: false, renaming: null, relist: false, prompts: new Map(), ended: -1,
                activity: new Map(), failed: null, sentAt: 0 };

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

const TOKEN_GONE = "This page's token is no longer valid (the server restarted?): open the URL harness serve printed.";

async function api(path, options = {}) {
  let response;
  try {
    response = await fetch(path, { credentials: "omit", ...options,
      headers: authorized({ "content-type": "application/json", ...(options.headers || {}) }) });
  } catch {
    throw Object.assign(new Error("connection lost: the server did not answer (is harness serve running?)"), { status: 0 });
  }
  const body = await response.json().catch(() => ({}));
  if (response.status === 401) refused();
  if (!response.ok) throw Object.assign(new Error(body.error || `HTTP ${response.status}`), { status: response.status });
  return body;
}

// -- the token form: a page without a token, or with one the server refuses ------------------

function refused() {
  connection(TOKEN_GONE);
  askToken("The server refused this page's token (it was made anew with --new-token, or the URL was wrong): paste the URL harness serve printed.");
}

// A field for the printed URL (or the token alone). The page starts again with it; whatever
// was typed in the prompt comes back.
function askToken(message) {
  const form = $("token-form");
  $("token-message").textContent = message;
  if (!form.hidden) return;
  form.hidden = false;
  form.onsubmit = (event) => {
    event.preventDefault();
    const given = $("token-input").value.trim();
    let token = given;
    try { token = new URL(given).searchParams.get("token") ?? given; } catch { /* the token alone */ }
    if (!token) return;
    sessionStorage.setItem("harness:token", token);
    sessionStorage.setItem("harness:draft", $("prompt").value);
    location.reload();
  };
  $("token-input").focus();
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

// -- one-line notices: a refused or failed request, the stream's connection ----------------

function showError(error, offerDemo = false) {
  const box = $("error");
  box.replaceChildren(el("span", {}, String(error.message || error).split("\n")[0]));
  if (offerDemo && state.config.demo) {
    const demo = el("button", { type: "button" }, "Run the demo");
    demo.onclick = () => runDemo().catch(showError);
    box.append(demo);
  }
  box.hidden = false;
}

function clearError() { $("error").hidden = true; $("error").replaceChildren(); }

function connection(text) {
  const box = $("connection");
  box.textContent = text || "";
  box.hidden = !text;
}

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

// -- Markdown: marked's tokens built as DOM nodes; raw HTML in the text stays text ----------

const SAFE_LINK = /^(https?:|mailto:)/i;
const ENTITY = /&(#\d{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});/gi;

// Markdown text may spell a character as an entity (`&amp;`, `&#39;`); marked leaves those to
// an HTML renderer. Each match alone is decoded, so no tag can ever be parsed from the text.
function entities(text) {
  if (!text.includes("&")) return text;
  const decoder = document.createElement("textarea");
  return text.replace(ENTITY, (entity) => { decoder.innerHTML = entity; return decoder.value; });
}

function inlines(parent, tokens) {
  for (const token of tokens || []) {
    switch (token.type) {
      case "strong": case "em": case "del":
        parent.append(inlines(el(token.type === "del" ? "s" : token.type), token.tokens)); break;
      case "codespan": parent.append(el("code", {}, token.text)); break;
      case "br": parent.append(el("br")); break;
      case "link":
        if (SAFE_LINK.test(token.href)) {
          parent.append(inlines(el("a", { href: token.href, rel: "noopener noreferrer", target: "_blank" }), token.tokens));
        } else parent.append(inlines(el("span"), token.tokens));
        break;
      case "image": parent.append(token.text ? `[${token.text}]` : ""); break;  // no remote images
      case "html": parent.append(token.text); break;
      default:
        if (token.tokens) inlines(parent, token.tokens);
        else if (token.type === "text" && !token.escaped) parent.append(entities(token.text));
        else parent.append(token.text ?? token.raw ?? "");
    }
  }
  return parent;
}

function codeBlock(text) {
  const box = el("div", { class: "code" });
  const copy = el("button", { type: "button", class: "copy", "data-testid": "copy", "aria-label": "Copy the code" }, "Copy");
  copy.onclick = () => navigator.clipboard.writeText(text).then(
    () => { copy.textContent = "Copied"; setTimeout(() => { copy.textContent = "Copy"; }, 1500); },
    () => { copy.textContent = "Copy failed"; });
  const pre = el("pre");
  pre.append(el("code", {}, text));
  box.append(copy, pre);
  return box;
}

function blocks(parent, tokens) {
  for (const token of tokens || []) {
    switch (token.type) {
      case "paragraph": parent.append(inlines(el("p"), token.tokens)); break;
      case "heading": parent.append(inlines(el(`h${Math.min(6, Math.max(2, token.depth - headingShift))}`), token.tokens)); break;
      case "code": parent.append(codeBlock(token.text)); break;
      case "blockquote": parent.append(blocks(el("blockquote"), token.tokens)); break;
      case "hr": parent.append(el("hr")); break;
      case "list": {
        const list = el(token.ordered ? "ol" : "ul");
        if (token.ordered && Number.isInteger(token.start) && token.start !== 1) list.start = token.start;
        for (const item of token.items) {
          const li = el("li");
          if (item.task) li.append(el("span", { class: "task" }, item.checked ? "☑ " : "☐ "));
          list.append(blocks(li, item.tokens));
        }
        parent.append(list);
        break;
      }
      case "table": {
        const wrap = el("div", { class: "table" });
        const table = el("table");
        const head = el("tr");
        for (const cell of token.header) head.append(inlines(el("th", { scope: "col" }), cell.tokens));
        const thead = el("thead");
        thead.append(head);
        const tbody = el("tbody");
        for (const row of token.rows) {
          const tr = el("tr");
          for (const cell of row) tr.append(inlines(el("td"), cell.tokens));
          tbody.append(tr);
        }
        table.append(thead, tbody);
        wrap.append(table);
        parent.append(wrap);
        break;
      }
      case "space": break;
      case "html": parent.append(el("p", {}, token.text)); break;  // shown as the text it is
      case "text": parent.append(token.tokens ? inlines(document.createDocumentFragment(), token.tokens) : token.text); break;
      default: parent.append(el("p", {}, token.raw || ""));
    }
  }
  return parent;
}

// A message's top heading is an h2 under the page's h1, whatever its `#` count, so the
// outline has no skipped level (`##` used to be an h4).
let headingShift = 0;

function markdown(text) {
  try {
    const tokens = lexer(text);
    const depths = tokens.filter((t) => t.type === "heading").map((t) => t.depth);
    headingShift = depths.length ? Math.min(...depths) - 2 : 0;
    return blocks(document.createDocumentFragment(), tokens);
  } catch {
    return el("p", {}, text);  // whatever marked cannot read shows as it came
  }
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
  exited(node, row.exit);
  regroup(node.closest(".tool-group"));
  node.querySelector("[data-testid=tool-summary]").replaceChildren(visible(summaryOf(row)));
  node.querySelector("[data-testid=approval-note]").textContent = row.approval || "";
}

// -- approval: a call waits for allow once / allow for this session / deny -----------------

function answer(callId, reply, buttons) {
  for (const button of buttons.querySelectorAll("button")) button.disabled = true;
  api(`/api/sessions/${state.id}/approvals`, { method: "POST", body: JSON.stringify({ call_id: callId, answer: reply }) })
    .catch(showError);
}

function askBox(question) {
  const box = el("div", { class: "approval", "data-testid": "approval", role: "group", tabindex: "-1",
                          "aria-label": `Approval needed: ${question.tool} wants to run ${question.summary}` });
  // The whole command, unless the call's one line already shows all of it: it shows once.
  if (question.detail && !question.summary.includes(question.detail)) {
    const detail = el("pre", { "data-testid": "approval-detail" });
    detail.append(visible(question.detail));
    box.append(detail);
  }
  const buttons = el("div", { class: "approval-buttons" });
  const keys = {};
  for (const [testid, reply, label, key, kind] of [["allow", "once", "Allow once", "y", "primary"],
      ["allow-session", "session", `Allow ${question.tool} for this session`, "a", ""],
      ["deny", "deny", "Deny", "n", "destructive"]]) {
    const button = el("button", { type: "button", "data-testid": testid, class: kind, "aria-keyshortcuts": key }, label);
    button.onclick = () => answer(question.call_id, reply, buttons);
    buttons.append(button);
    keys[key] = button;
  }
  // y, a and n answer while the question (or one of its buttons) has focus, as in the terminal.
  box.onkeydown = (event) => {
    const button = keys[event.key.toLowerCase()];
    if (!button || event.ctrlKey || event.metaKey || event.altKey || button.disabled) return;
    event.preventDefault();
    button.click();
  };
  box.append(buttons);
  return box;
}

// The open questions (the snapshot's `approvals`): a question about a call on this page waits
// in its row; one about a call the page does not show (a subagent's) waits in a card. A new
// one takes focus, so a keyboard user lands on it.
function applyQuestions(questions) {
  const open = new Map(questions.map((q) => [q.call_id, q]));
  for (const [callId] of state.questions) {
    const node = state.rows.get(callId);
    if (open.has(callId) || !node) continue;
    node.querySelector("[data-testid=approval]")?.remove();
    if (node.dataset.state === "waiting") node.dataset.state = "running";
  }
  const cards = [];
  let opened = null;
  for (const question of open.values()) {
    const node = state.rows.get(question.call_id);
    const known = state.questions.has(question.call_id);
    if (!node) {
      const card = el("div", { class: "approval-card", "data-testid": "approval-card", "data-tool": question.tool,
                               "data-call": question.call_id });
      const where = question.session_id === state.id ? "" : " (in a subagent)";
      const line = el("div");
      line.append(visible(`${question.tool}${where} wants to run: ${question.summary}`));
      const box = askBox(question);
      card.append(line, box);
      cards.push(card);
      if (!known) opened = box;
    } else if (!known || !node.querySelector("[data-testid=approval]")) {
      node.dataset.state = "waiting";
      const box = askBox(question);
      node.append(box);
      node.closest(".tool-group")?.setAttribute("open", "");  // a folded row that asks shows
      opened = box;
    }
  }
  $("approvals").replaceChildren(...cards);
  state.questions = open;
  if (opened) opened.focus();
  retitle();
}

function retitle() {
  const base = state.title ? `${state.title} · harness` : "harness";
  const waiting = state.questions.size;
  document.title = waiting ? `(${waiting}) Approval needed · ${base}` : base;
}

function toolRow(call) {
  const row = el("div", { "data-testid": "tool-row", "data-tool": call.name, "data-state": "running",
                          class: "tool-row" });
  const details = el("details");
  const head = el("summary");
  head.append(el("span", { class: "mark", "aria-hidden": "true" }), el("span", { class: "name" }, call.name),
              el("span", { "data-testid": "tool-summary" }, call.name));
  details.append(head, el("pre", { "data-testid": "tool-output" }, ""));
  row.append(details, el("div", { class: "approval-note", "data-testid": "approval-note" }));
  state.rows.set(call.id, row);
  const result = state.results.get(call.id);  // its result came on a newer page, shown first
  if (result) showResult(row, result);
  const question = state.questions.get(call.id);
  if (question) {  // asked before its row came: the question moves here, focus with it
    row.dataset.state = "waiting";
    const box = askBox(question);
    row.append(box);
    for (const card of $("approvals").children) if (card.dataset.call === call.id) card.remove();
    queueMicrotask(() => { row.closest(".tool-group")?.setAttribute("open", ""); box.focus(); });
  }
  return row;
}

// More than GROUP_AFTER tool rows in a row, with no text between them, fold into one group:
// its line counts them (and the failures), and it opens to show each.
const GROUP_AFTER = 3;

function place(into, row) {
  const last = into.lastElementChild;
  if (last?.classList.contains("tool-group")) {
    const rows = last.querySelector(".group-rows");
    rows.append(row);
    if (last.dataset.auto) rows.children[rows.children.length - 1 - LIVE_ROWS]?.classList.add("older");
    regroup(last);
    return;
  }
  const run = [row];
  for (let node = last; node?.classList.contains("tool-row") && run.length <= GROUP_AFTER; node = node.previousElementSibling) {
    run.unshift(node);
  }
  if (run.length <= GROUP_AFTER) { into.append(row); return; }
  const group = el("details", { class: "tool-group", "data-testid": "tool-group" });
  const rows = el("div", { class: "group-rows" });
  const line = el("summary", { class: "group-line" });
  if (into === $("log") && state.running) { group.open = true; group.dataset.auto = "1"; }
  line.onclick = () => showAll(group);
  group.append(line, rows);
  into.append(group);
  rows.append(...run);
  regroup(group);
}

// A group that forms while its turn runs stays open, so the run can be watched: its newest
// LIVE_ROWS rows show and older ones fold away (CSS), so a run of a thousand commands lays out
// as a short one each frame. The group folds when the turn ends, unless the reader opened or
// closed it meanwhile; either way every row shows from then on.
const LIVE_ROWS = 8;

function showAll(group) {
  delete group.dataset.auto;
  for (const row of group.querySelectorAll(".group-rows > .older")) row.classList.remove("older");
}

// A group's line is counted again once a frame, however many of its rows changed.
const regrouping = new Set();
function regroup(group) {
  if (!group) return;
  if (!regrouping.size) requestAnimationFrame(countGroups);
  regrouping.add(group);
}

function countGroups() {
  for (const group of regrouping) {
    // Counted by selector, natively: a loop reading each row's dataset took milliseconds a
    // frame once a long run's group held a thousand rows.
    const box = group.querySelector(".group-rows"), rows = box.children;
    const count = (selector) => box.querySelectorAll(`:scope > ${selector}`).length;
    const failed = count("[data-state=error]"), running = rows.length - failed - count("[data-state=ok]");
    const what = count("[data-tool=bash]") === rows.length ? "command" : "tool call";
    const line = [`Ran ${rows.length} ${what}${rows.length === 1 ? "" : "s"}`];
    if (failed) line.push(`${failed} failed`);
    if (running) line.push(`${running} running`);
    const summary = group.querySelector(".group-line"), text = line.join(" · ");
    if (summary.textContent !== text) summary.textContent = text;
    if (group.dataset.failed !== String(failed)) group.dataset.failed = String(failed);
  }
  regrouping.clear();
}

function showResult(row, data) {
  row.dataset.state = data.is_error ? "error" : "ok";
  exited(row, data.data?.exit_code);
  row.querySelector("[data-testid=tool-output]").textContent = data.text;
  regroup(row.closest?.(".tool-group"));
}

// A command's exit code: a non-zero one marks the row as failed at a glance (the model's
// result is the command's answer all the same).
function exited(row, code) {
  if (!Number.isInteger(code)) return;
  row.dataset.exit = String(code);
  if (code !== 0 && row.dataset.state === "ok") row.dataset.state = "error";
}

// Formatters are made once: building one per message (what toLocaleString does) cost more
// than drawing the message while a long turn streams in.
// Each is made on first use: the first one loads the locale's data, which the page's first task
// need not wait for.
const CLOCK = formatter({ hour: "2-digit", minute: "2-digit" });
const MOMENT = formatter({ year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric",
                           second: "numeric" });

function formatter(options) {
  let made = null;
  return { format: (when) => (made ??= new Intl.DateTimeFormat(undefined, options)).format(when) };
}

function stamp(node, envelope) {
  if (!envelope.ts) return node;
  const when = new Date(envelope.ts);
  if (isNaN(when)) return node;
  node.dataset.time = CLOCK.format(when);
  node.title = MOMENT.format(when);
  return node;
}

function render(envelope, into) {
  const data = envelope.data;
  switch (envelope.type) {
    case "message/user":
      state.prompts.set(envelope.turn, data.text);
      $("log").querySelector(".message.pending")?.remove();  // the accepted prompt, now logged
      into.append(stamp(el("div", { "data-testid": "message", "data-role": "user", class: "message user" }, data.text), envelope));
      break;
    case "message/assistant": {
      const message = stamp(el("div", { "data-testid": "message", "data-role": "assistant", class: "message assistant" }), envelope);
      if (data.model) message.dataset.model = data.model;  // shown beside its time (CSS)
      if (data.reasoning_content) {
        const thought = el("details", { class: "reasoning" });
        thought.append(el("summary", {}, "reasoning"), el("div", {}, data.reasoning_content));
        message.append(thought);
      }
      if (data.text) message.append(markdown(data.text));
      if (message.childNodes.length) into.append(message);
      for (const call of data.tool_calls || []) place(into, toolRow(call));
      break;
    }
    case "tool/result": {
      const row = state.rows.get(data.call_id);
      if (row) showResult(row, data);
      else state.results.set(data.call_id, data);  // its call is on an older page
      break;
    }
    case "turn/end":
      state.ended = Math.max(state.ended, envelope.turn ?? -1);
      if (data.status === "error") into.append(turnError(data.error, state.prompts.get(envelope.turn)));
      else if (data.status !== "completed") {
        into.append(el("div", { class: "turn-note" }, `turn ${data.status}${data.error && data.error !== data.status ? ": " + data.error : ""}`));
      }
      break;
    case "context/compact":
      into.append(el("div", { class: "turn-note", "data-testid": "compaction" },
        `context compacted: ${data.last_seq - data.first_seq + 1} events summarized`));
      break;
  }
}

// A turn that failed: its one line, styled as an error, and a button that sends its prompt again.
function turnError(error, prompt) {
  const box = el("div", { class: "turn-error", "data-testid": "turn-error", role: "alert" });
  box.append(el("span", {}, `The turn failed: ${String(error || "error").split("\n")[0]}`));
  if (prompt) {
    const retry = el("button", { type: "button", class: "primary", "data-testid": "retry" }, "Retry");
    retry.onclick = async () => {
      retry.disabled = true;
      try { await accepted(prompt, await send(prompt, chosenModel())); clearError(); } catch (error) { showError(error); }
      retry.disabled = false;
    };
    box.append(retry);
  }
  return box;
}

// The conversation follows new events only while the reader is at its end.
function atEnd() {
  const box = $("messages");
  return box.scrollHeight - box.scrollTop - box.clientHeight < 40;
}

// Where the page last scrolled itself to. Its own scroll's event arrives a frame later,
// when more of a burst may have been drawn below: read then, the position would look like
// a reader who scrolled up, and the page would stop following.
let scrolledTo = -1;
function toEnd() {
  const box = $("messages");
  box.scrollTop = box.scrollHeight;
  scrolledTo = box.scrollTop;
  $("jump-latest").hidden = true;
}

function scrolled() {
  const box = $("messages");
  if (state.follow && box.scrollTop >= scrolledTo) return;  // not up: still following
  state.follow = atEnd();
  $("jump-latest").hidden = state.follow;
}

// Events arrive in bursts: the scroll waits for the next frame, so a burst lays out once.
let ending = 0;
function endSoon() {
  ending ||= requestAnimationFrame(() => { ending = 0; if (state.follow) toEnd(); });
}

function live(envelope) {
  if (envelope.seq <= state.lastSeq) return;  // already shown (a reconnect resends)
  state.lastSeq = envelope.seq;
  if (envelope.type === "message/assistant") endStreaming();
  render(envelope, $("log"));
  if (state.follow) endSoon();
}

function streamDelta(delta) {
  if (delta.kind !== "text") return;
  state.streaming += delta.text;
  const box = $("streaming");
  box.hidden = false;
  box.textContent = state.streaming;
  if (state.follow) endSoon();
}

function endStreaming() {
  state.streaming = "";
  if ($("streaming").hidden) return;  // each message ends a stream, most of them none
  $("streaming").hidden = true;
  $("streaming").textContent = "";
}

function applySnapshot(snapshot) {
  working(Boolean(snapshot.running));
  applyQuestions(snapshot.approvals || []);
  applyFailure(snapshot.failed);
  const queue = $("queue");
  queue.replaceChildren(...(snapshot.queued || []).map(queueItem));
  for (const listener of state.snapshotListeners) listener(snapshot);
  if (state.follow) endSoon();
}

// A turn the server took that failed before its log could say so (`snapshot.failed`: its
// session could not be opened for writing) shows like a logged turn's error, with Retry, at the
// end of the conversation until the next prompt is taken.
function applyFailure(failed) {
  const shown = $("log").querySelector(".turn-error[data-unlogged]");
  const key = failed ? JSON.stringify(failed) : "";
  if ((shown?.dataset.unlogged ?? "") === key) return;
  shown?.remove();
  if (!failed) return;
  $("log").querySelector(".message.pending")?.remove();  // that prompt never reached the log
  const box = turnError(failed.error, failed.prompt);
  box.dataset.unlogged = key;
  $("log").append(box);
  state.failed = { prompt: failed.prompt, at: performance.now() };
}

// While a turn runs, Send is a Stop button and the conversation says it is working.
function working(running) {
  if (running === state.running && $("send").dataset.state === (running ? "stop" : "send")) return;  // each snapshot asks
  state.running = running;
  $("cancel").disabled = !running;
  const button = $("send");
  button.dataset.state = running ? "stop" : "send";
  button.textContent = running ? "Stop" : "Send";
  button.setAttribute("aria-label", running ? "Stop the turn" : "Send the prompt");
  $("working").hidden = !running;
  if (!running) {
    for (const group of $("log").querySelectorAll(".tool-group[data-auto]")) { group.open = false; showAll(group); }
  }
  if (running && state.follow) endSoon();
}

// A queued prompt: its text (the item's whole text content), and two buttons whose symbols
// come from CSS: take it back into the box to edit it, or drop it.
function queueItem(prompt, index) {
  const item = el("li", { "data-testid": "queue-item", title: prompt.slice(0, 2000) });
  const edit = el("button", { type: "button", class: "queue-edit", "aria-label": "Edit this queued prompt" });
  const drop = el("button", { type: "button", class: "queue-drop", "aria-label": "Remove this queued prompt" });
  edit.onclick = () => unqueue(index + 1, prompt, true);
  drop.onclick = () => unqueue(index + 1, prompt, false);
  item.append(drop, edit, el("span", {}, prompt));  // first, floated: a long prompt is clamped
  return item;
}

async function unqueue(position, prompt, toBox) {
  try {
    await api(`/api/sessions/${state.id}/queue`, { method: "DELETE", body: JSON.stringify({ position, prompt }) });
  } catch (error) {
    showError(error);
    return;
  }
  if (!toBox) return;
  const box = $("prompt");
  box.value = box.value.trim() ? `${prompt}\n\n${box.value}` : prompt;
  box.focus();
}

// -- the dock: plugins' panels above the prompt ---------------------------------------------

async function mountDock(sessionId, generation) {
  for (const unmount of state.unmounts) unmount();
  state.unmounts = [];
  state.snapshotListeners = [];
  const slot = $("dock-slot");
  slot.replaceChildren();
  state.dock ??= api("/api/dock");
  const entries = await state.dock;
  for (const entry of entries.filter((e) => e.slot === "conversation.input.dock")) {
    const box = el("div", { class: "dock-entry" });
    let module;
    try {
      module = await import(entry.url);
    } catch (error) {
      console.error("dock entry failed", entry.url, error);
      continue;
    }
    if (generation !== state.generation) return;  // another session was opened meanwhile
    slot.append(box);
    try {
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

const DAY = formatter({ weekday: "long" });
const DATE = formatter({ month: "short", day: "numeric" });
const DATE_YEAR = formatter({ year: "numeric", month: "short", day: "numeric" });

// When a session last changed, as people say it: "Just now", "5 min ago", "Yesterday".
function ago(when, now = new Date()) {
  const minutes = Math.floor((now - when) / 60000);
  if (minutes < 1) return "Just now";
  if (minutes < 60) return `${minutes} min ago`;
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  if (when >= midnight) return `${Math.floor(minutes / 60)} h ago`;
  const days = Math.ceil((midnight - when) / 86400000);
  if (days === 1) return "Yesterday";
  if (days < 7) return DAY.format(when);
  return (when.getFullYear() === now.getFullYear() ? DATE : DATE_YEAR).format(when);
}

function sessionLink(s) {
  const link = el("a", { href: `#/s/${s.id}`, "data-testid": "session-link", "data-id": s.id });
  link.append(el("span", { class: "title" }, s.title || "(no prompt yet)"));
  if (s.id === state.id) { link.classList.add("current"); link.setAttribute("aria-current", "page"); }
  const when = new Date(s.updated);
  const small = el("small");
  small.append(el("span", { class: "when", "data-updated": s.updated }, isNaN(when) ? s.updated : ago(when)));
  if (!isNaN(when)) link.title = `${MOMENT.format(when)} · ${s.events} events`;
  link.append(small);
  activityMarks(link, state.activity.get(s.id));
  return link;
}

// A session that runs a turn, or waits for an approval, says so in the list, whichever is open.
function activityMarks(link, now) {
  link.querySelector(".marks")?.remove();
  if (!now || (!now.running && !now.waiting)) return;
  const marks = el("span", { class: "marks" });
  if (now.waiting) marks.append(el("span", { class: "waiting", "data-testid": "session-waiting" }, "Needs approval"));
  else marks.append(el("span", { class: "running", "data-testid": "session-running" }, "Running"));
  link.querySelector("small").prepend(marks);
}

function active(change) {
  if (change.running || change.waiting) state.activity.set(change.id, change);
  else state.activity.delete(change.id);
  waitingElsewhere();
  const link = $("sessions").querySelector(`[data-testid=session-link][data-id="${CSS.escape(change.id)}"]`);
  if (link) activityMarks(link, state.activity.get(change.id));
  else if (change.running) listSessions().catch(() => {});  // a session this page has not listed yet
}

// The list follows every session's activity on a stream of its own (not the open session's).
async function followActivity() {
  let delay = 500;
  for (;;) {
    try {
      const response = await fetch("/api/activity", { credentials: "omit", headers: authorized() });
      if (response.status === 401) return;
      if (response.ok) {
        delay = 500;
        await readEvents(response.body, new AbortController().signal, (name, data) => {
          if (name === "activity") {
            state.activity = new Map(Object.entries(data).map(([id, now]) => [id, { id, ...now }]));
            for (const link of $("sessions").querySelectorAll("[data-testid=session-link]")) {
              activityMarks(link, state.activity.get(link.dataset.id));
            }
            waitingElsewhere();
          } else if (name === "change") active(data);
        });
      }
    } catch { /* reconnects below */ }
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

// The drawer's button says how many sessions wait for an answer, so a phone sees it too.
function waitingElsewhere() {
  const count = [...state.activity.values()].filter((now) => now.waiting).length;
  const toggle = $("sessions-toggle");
  if (count) toggle.dataset.waiting = String(count); else delete toggle.dataset.waiting;
  toggle.setAttribute("aria-label", count ? `Sessions (${count} waiting for approval)` : "Sessions");
}

// The times in the list age while the page is open.
function retime() {
  for (const small of $("sessions").querySelectorAll("[data-updated]")) {
    const when = new Date(small.dataset.updated);
    if (!isNaN(when)) small.textContent = ago(when);
  }
}

// An entry of the list: the link, and a button that renames the session in place.
function sessionEntry(s) {
  const entry = el("div", { class: "session-entry", "data-id": s.id });
  const link = sessionLink(s);
  const rename = el("button", { type: "button", class: "rename", "data-testid": "rename",
                                "aria-label": `Rename session: ${s.title || s.id}` });
  rename.onclick = (event) => { event.stopPropagation(); startRename(entry, s); };
  entry.append(link, rename);
  return entry;
}

// The title is edited in a box where the link was: Enter saves it (the box stays, with the
// server's one line, when it is refused), Esc or leaving the box cancels.
function startRename(entry, s) {
  const [link, button] = [entry.querySelector("[data-testid=session-link]"), entry.querySelector(".rename")];
  const input = el("input", { type: "text", class: "rename-input", "data-testid": "rename-input",
                              maxlength: "200", "aria-label": "New title of the session" });
  input.value = s.title || "";
  let saving = false;
  // The list may have been drawn again meanwhile: the button is looked up by the session's id.
  const refocus = () => $("sessions").querySelector(`.session-entry[data-id="${CSS.escape(s.id)}"] .rename`)?.focus();
  const finish = async (focus) => {
    if (state.renaming !== input) return;
    state.renaming = null;
    link.hidden = button.hidden = false;
    if (focus) button.focus();  // before the box goes, so its blur finds it finished
    input.remove();
    if (state.relist) { state.relist = false; await listSessions().catch(showError); }
  };
  input.onkeydown = async (event) => {
    if (event.isComposing || event.keyCode === 229) return;
    if (event.key === "Escape") { event.preventDefault(); event.stopPropagation(); finish(true).then(refocus); }
    if (event.key !== "Enter" || saving) return;
    event.preventDefault();
    saving = true;
    try {
      await api(`/api/sessions/${s.id}`, { method: "PATCH", body: JSON.stringify({ title: input.value }) });
    } catch (error) {
      saving = false;
      input.setAttribute("aria-invalid", "true");
      showError(error);
      input.focus();
      return;
    }
    clearError();
    state.relist = true;  // the new title, here and in the top bar
    await finish(true);
    refocus();
  };
  input.onblur = () => { if (!saving) finish(false); };
  input.onclick = (event) => event.stopPropagation();  // not a choice of session (the drawer stays)
  link.hidden = button.hidden = true;
  entry.prepend(input);
  state.renaming = input;
  input.focus();
  input.select();
}

async function listSessions() {
  if (state.renaming) { state.relist = true; return; }  // a title being typed is not swept away
  const { sessions } = await api("/api/sessions");
  if (state.renaming) { state.relist = true; return; }
  // A link that has focus keeps it in the new list: a list made again (a tab coming back, a
  // session starting elsewhere) must not drop a keyboard user's place, or their Enter.
  const focused = $("sessions").contains(document.activeElement) ? document.activeElement.dataset.id : undefined;
  $("sessions").replaceChildren(...sessions.map(sessionEntry));
  if (focused) $("sessions").querySelector(`[data-testid=session-link][data-id="${CSS.escape(focused)}"]`)?.focus();
  const current = sessions.find((s) => s.id === state.id);
  if (current) { state.title = current.title || ""; $("session-title").textContent = state.title; retitle(); }
  filterSessions();
}

// Search: titles at once, then the server's answer, which also reads the user prompts.
let searching = 0;
function filterSessions() {
  const needle = $("search").value.trim().toLowerCase();
  showMatches(needle, null);
  clearTimeout(searching);
  if (!needle) return;
  searching = setTimeout(async () => {
    try {
      const { ids } = await api(`/api/search?q=${encodeURIComponent(needle)}`);
      if ($("search").value.trim().toLowerCase() === needle) showMatches(needle, new Set(ids));
    } catch { /* the titles' matches stay */ }
  }, 200);
}

function showMatches(needle, found) {
  let shown = 0;
  for (const entry of $("sessions").children) {
    if (!entry.classList.contains("session-entry")) continue;
    const title = entry.querySelector(".title")?.textContent ?? "";
    const match = !needle || title.toLowerCase().includes(needle) || entry.dataset.id.includes(needle) ||
      Boolean(found?.has(entry.dataset.id));
    entry.hidden = !match;
    shown += match;
  }
  const none = $("no-match");
  none.hidden = !(needle && found && !shown);
  none.textContent = `No session matches “${needle}”.`;
}

function markCurrent(id) {
  for (const link of $("sessions").querySelectorAll("[data-testid=session-link]")) {
    const current = link.dataset.id === id;
    link.classList.toggle("current", current);
    if (current) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
}

async function openSession(id) {
  // Whatever the previous session was doing stops here: its stream closes, and every await
  // below checks that this is still the session asked for before it draws anything.
  const generation = ++state.generation;
  state.stream?.abort();
  state.stream = null;
  Object.assign(state, { id, lastSeq: -1, rows: new Map(), results: new Map(), questions: new Map(),
                         follow: true, prompts: new Map(), ended: -1 });
  working(false);
  delete document.body.dataset.session;
  $("approvals").replaceChildren();
  $("queue").replaceChildren();
  $("older").hidden = true;
  endStreaming();
  clearError();
  $("log").replaceChildren();
  markCurrent(id);
  $("delete-session").hidden = false;
  closeDrawer();
  const [page] = await Promise.all([api(`/api/sessions/${id}/history?limit=200`), mountDock(id, generation),
                                    markedLoaded]);
  if (generation !== state.generation) return;
  for (const envelope of page.events) live(envelope);
  for (const row of Object.values(page.rows || {})) applyRow(row);
  applySnapshot(page.snapshot);
  showOlder(page.before, generation);
  connect(id);
  toEnd();
  if (!state.questions.size) $("prompt").focus({ preventScroll: true });  // a question keeps it
  document.body.dataset.session = id;  // the page shows this session now (tests wait on it)
  await listSessions();
}

// Older pages load when the reader scrolls to the top (or clicks), a thousand events at a time,
// and the view stays where it was.
function showOlder(before, generation) {
  const button = $("older");
  button.hidden = before === null;
  button.onclick = async () => {
    button.onclick = null;
    const page = await api(`/api/sessions/${state.id}/history?before=${before}&limit=1000`);
    if (generation !== state.generation) return;
    const box = $("messages");
    const height = box.scrollHeight;
    const fragment = document.createDocumentFragment();
    for (const envelope of page.events) render(envelope, fragment);
    $("log").prepend(fragment);
    for (const row of Object.values(page.rows || {})) applyRow(row);
    box.scrollTop += box.scrollHeight - height;
    showOlder(page.before, generation);
  };
}

// When the last Tab was pressed: the observer below may run a frame or more after the Tab
// that scrolled the button into view, when focus has already moved on past it.
let tabbedAt = -Infinity;
document.addEventListener("keydown", (e) => { if (e.key === "Tab") tabbedAt = performance.now(); }, true);

const older = new IntersectionObserver((entries) => {
  // Scrolled into view by the reader, not by a Tab passing over it (Enter or a click loads then).
  const tabbing = performance.now() - tabbedAt < 1000 || document.activeElement === $("older");
  if (entries.some((e) => e.isIntersecting) && !$("older").hidden && !tabbing) {
    $("older").onclick?.();
  }
}, { root: null, rootMargin: "200px" });

// The event stream, read with fetch so it can carry the bearer header (EventSource cannot).
// It reconnects from the last seq shown, as EventSource would with Last-Event-ID.
const handlers = {
  message: (envelope) => {
    live(envelope);
    if (envelope.type === "turn/end" || envelope.type === "message/user") listSessions().catch(() => {});
  },
  delta: streamDelta,
  row: applyRow,
  snapshot: (snapshot) => {
    // The server's log ends before what this page showed (another log under the same id):
    // start over from the tail page rather than wait for seqs that already passed.
    if (snapshot.seq < state.lastSeq) { openSession(state.id).catch(showError); return; }
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
  let delay = 500;
  while (!signal.aborted) {
    try {
      const response = await fetch(`/api/sessions/${id}/events?after=${state.lastSeq}`,
        { credentials: "omit", headers: authorized(), signal });
      if (response.status === 401) { refused(); return; }
      if (response.status === 404) { connection((await response.json()).error); return; }
      if (response.ok) {
        connection("");
        delay = 500;
        await readEvents(response.body, signal, (name, data) => {
          if (handlers[name] && state.stream?.signal === signal) handlers[name](data);
        });
      }
    } catch {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    connection("Connection lost: reconnecting…");
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

// A burst (a long turn's events read at once, or after the tab was busy) is drawn a slice at a
// time: past SLICE_MS of handling, the reader waits until the page has painted what it drew, so
// no single task holds the main thread (a hidden tab, which paints nothing, only yields).
const SLICE_MS = 8;

function painted() {
  return new Promise((resolve) => {
    if (document.hidden) setTimeout(resolve, 0);
    else requestAnimationFrame(() => setTimeout(resolve, 0));
  });
}

async function readEvents(body, signal, handle) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "", fields = {};
  for (;;) {
    const { value, done } = await reader.read();
    if (done || signal.aborted) return;
    const lines = (buffer + value).split(/\r\n|\r|\n/);
    buffer = lines.pop();
    let slice = performance.now();
    for (const line of lines) {
      if (line === "") {
        if (fields.data !== undefined) handle(fields.event || "message", JSON.parse(fields.data));
        fields = {};
        if (performance.now() - slice > SLICE_MS) {
          await painted();
          if (signal.aborted) return;
          slice = performance.now();
        }
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
  state.sentAt = performance.now();
  const body = model ? { prompt, model } : { prompt };
  return api(`/api/sessions/${state.id}/turns`, { method: "POST", body: JSON.stringify(body) });
}

// A prompt the server took: a turn it started shows at once, as the message it will be, and
// the page is working (a queued one shows in the queue, from the snapshot).
function accepted(prompt, reply) {
  if (reply.turn === undefined) return;
  // Its failure may come over the stream before this answer is read: nothing to wait for then.
  if (state.failed?.prompt === prompt && state.failed.at > state.sentAt) return;
  if (state.prompts.get(reply.turn) !== prompt) {
    $("log").querySelector(".message.pending")?.remove();
    $("log").append(el("div", { "data-testid": "message", "data-role": "user", class: "message user pending" }, prompt));
  }
  if (!(state.ended >= reply.turn)) working(true);  // unless it ended already (a fast one)
  toEnd();
}

// The model picker: the specs the server offers; the next turn plays the one chosen (the
// server's default goes unnamed, so a session started on another model keeps it).
async function pickModels() {
  const { models, default: fallback } = await api("/api/models");
  const picker = $("model-picker");
  const options = fallback ? [] : [el("option", { value: "" }, "No model set")];
  for (const spec of models) options.push(el("option", { value: spec }, spec === "demo" ? "demo (scripted)" : spec));
  picker.replaceChildren(...options);
  const kept = sessionStorage.getItem("harness:model");
  picker.value = kept !== null && models.includes(kept) ? kept : fallback || "";
  picker.onchange = () => sessionStorage.setItem("harness:model", picker.value);
  picker.hidden = models.length < 2 && Boolean(fallback);
}

function chosenModel() {
  const value = $("model-picker").value;
  return value && value !== state.config.model ? value : null;
}

// "New session" makes nothing on the server: the page starts blank, and the first prompt
// creates the session.
function blankSession() {
  ++state.generation;
  state.stream?.abort();
  Object.assign(state, { id: null, stream: null, lastSeq: -1, rows: new Map(), results: new Map(),
                         questions: new Map(), follow: true, prompts: new Map(), ended: -1, title: "" });
  for (const unmount of state.unmounts) unmount();
  state.unmounts = [];
  state.snapshotListeners = [];
  working(false);
  delete document.body.dataset.session;
  for (const id of ["approvals", "queue", "dock-slot"]) $(id).replaceChildren();
  $("older").hidden = $("delete-session").hidden = true;
  endStreaming();
  clearError();
  $("session-title").textContent = "";
  markCurrent(null);
  retitle();
  if (location.hash) history.pushState(null, "", location.pathname);
  welcome();
  closeDrawer();
  $("prompt").focus();
}

async function newSession(model) {
  const { id } = await api("/api/sessions", { method: "POST", body: JSON.stringify(model ? { model } : {}) });
  location.hash = `#/s/${id}`;
  return id;
}

// The prompt leaves the box only once the server took it; a refusal stays with it, in one line.
async function submitPrompt() {
  const box = $("prompt");
  const prompt = box.value;
  if (!prompt.trim() || state.sending) return;
  state.sending = true;
  $("log").querySelector(".welcome")?.remove();  // something happens: the hint goes at once
  try {
    if (!state.id) await openSession(await newSession(null));
    const reply = await send(prompt, chosenModel());
    if (box.value === prompt) box.value = "";
    accepted(prompt, reply);
    clearError();
  } catch (error) {
    showError(error, error.status === 422 && state.config.model === null);
  } finally {
    state.sending = false;
  }
}

// The demo runs in the session on screen when it is still empty, else in a new one.
async function runDemo() {
  const fresh = !state.id || state.lastSeq > 0;
  if (fresh) await openSession(await newSession("demo"));
  $("log").append(el("div", { class: "turn-note", "data-testid": "demo-note" },
    "demo: its commands are fixed and harmless, so tools run without asking"));
  await send(state.config.demo, fresh ? null : "demo");
  clearError();
}

// Deleting the open session asks first; the page then starts over without it.
async function deleteSession() {
  if (!state.id || !confirm("Delete this session for good? Its log is removed.")) return;
  try {
    await api(`/api/sessions/${state.id}`, { method: "DELETE" });
  } catch (error) {
    showError(error);
    return;
  }
  history.replaceState(null, "", location.pathname);
  location.reload();
}

function route() {
  const match = /^#\/s\/([A-Za-z0-9._-]+)$/.exec(location.hash);
  if (match && match[1] !== state.id) openSession(match[1]).catch(showError);
}

// -- phone widths: the session list is a drawer ---------------------------------------------

function openDrawer(open) {
  document.body.classList.toggle("drawer-open", open);
  $("sessions-toggle").setAttribute("aria-expanded", String(open));
  $("backdrop").hidden = !open;
}

function closeDrawer() { openDrawer(false); }

function welcome() {
  if (state.id) return;
  const hint = el("div", { class: "welcome" });
  if (state.config.model === null) {
    hint.append(el("p", {}, "No model is configured. Run the demo to watch a scripted session plan its work and run harmless commands, or start harness serve with --model PROVIDER:MODEL."));
    const demo = el("button", { type: "button", class: "primary" }, "Run the demo");
    demo.onclick = () => runDemo().catch(showError);
    hint.append(demo);
  } else {
    hint.append(el("p", {}, `Choose a session, or type a prompt to start a new one (model ${state.config.model}).`));
  }
  $("log").replaceChildren(hint);
}

async function start() {
  const draft = sessionStorage.getItem("harness:draft");
  if (draft !== null) { $("prompt").value = draft; sessionStorage.removeItem("harness:draft"); }
  if (!TOKEN) {
    askToken("This page needs the server's token: paste the URL harness serve printed (or the token alone).");
    return;
  }
  // The drawer and the list answer at once, not after the server's first answers: a tap on
  // Sessions while the page starts would otherwise do nothing.
  $("sessions-toggle").onclick = () => openDrawer(!document.body.classList.contains("drawer-open"));
  $("backdrop").onclick = closeDrawer;
  $("sessions").onclick = closeDrawer;  // a chosen session, even the one on screen
  $("search").oninput = filterSessions;
  state.config = await api("/api/config");
  await pickModels();
  $("demo").hidden = state.config.model !== null;
  $("demo").onclick = () => runDemo().catch(showError);
  $("new-session").onclick = blankSession;
  $("composer").onsubmit = (event) => {
    event.preventDefault();
    if (state.running && event.submitter === $("send")) $("cancel").click();  // Send is Stop now
    else submitPrompt();
  };
  $("prompt").onkeydown = (event) => {
    // Enter that ends an input-method composition picks the characters: it does not send.
    if (event.isComposing || event.keyCode === 229) return;
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); submitPrompt(); }
    if (event.key === "Escape" && state.running) { event.preventDefault(); $("cancel").click(); }
  };
  $("cancel").onclick = () => api(`/api/sessions/${state.id}/cancel`, { method: "POST" }).catch(showError);
  document.addEventListener("keydown", (event) => { if (event.key === "Escape") closeDrawer(); });
  $("messages").addEventListener("scroll", scrolled, { passive: true });
  $("jump-latest").onclick = () => { state.follow = true; toEnd(); $("prompt").focus({ preventScroll: true }); };
  // The dock grows (a plan, a queue): the reader at the end stays at the end.
  new ResizeObserver(() => { if (state.follow) toEnd(); }).observe($("messages"));
  older.observe($("older"));
  window.addEventListener("hashchange", route);
  $("delete-session").onclick = () => deleteSession();
  // A tab coming back into view lists the sessions again: titles given in another tab show.
  document.addEventListener("visibilitychange", () => { if (!document.hidden) listSessions().catch(() => {}); });
  // A phone has no Esc or Shift+Enter, and the keyboard hints would not fit its box.
  const narrow = matchMedia("(max-width: 720px)");
  const hint = $("prompt").placeholder;
  const fit = () => { $("prompt").placeholder = narrow.matches ? "Ask something" : hint; };
  narrow.addEventListener("change", fit);
  fit();
  welcome();
  await listSessions();
  route();
  followActivity();
  setInterval(retime, 60000);
  // The formatters load the locale's data when first used: made while the page is idle, not in
  // the task that draws a new session's first events.
  requestIdleCallback(() => { CLOCK.format(Date.now()); MOMENT.format(Date.now()); });
}

start().catch((error) => { if (error.status !== 401) showError(error); });
