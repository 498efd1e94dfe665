// harness-tool-todo's dock entry: the plan panel above the prompt (slot conversation.input.dock).
// It renders the snapshot's `todos` (the standing plan the host computes from the whole log)
// and never scans events. Task text is set as text, never as HTML.
//
// Like the terminal's plan strip: the panel is capped (about a third of the viewport), keeps the
// task in progress in view, and marks each task ☑ ▶ ☐ with a CSS ::before symbol (so an item's
// text is exactly its task) and an aria-label naming its status for screen readers.

// Styles go in a constructed style sheet: the page's Content-Security-Policy forbids inline
// style markup. Colours come from the page's variables, so a dark theme applies here too.
const STYLE = `
.todo-dock { display: flex; flex-direction: column; max-height: 33vh; border: 1px solid var(--line, #d3d8dd);
  border-radius: 6px; padding: 6px 10px; margin-bottom: 6px; font-size: 13px; min-width: 0; }
.todo-head { display: flex; justify-content: space-between; align-items: center; gap: 8px; min-width: 0; }
.todo-head [data-testid=todo-summary] { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; min-width: 0; }
.todo-head button { flex: none; }
.todo-items { list-style: none; margin: 4px 0 0; padding: 0; overflow-y: auto; min-height: 0; position: relative; }
.todo-items li { padding: 1px 4px 1px 1.6em; text-indent: -1.3em; border-radius: 4px; overflow-wrap: anywhere; }
.todo-items li::before { display: inline-block; width: 1.3em; text-indent: 0; }
.todo-items li[data-status=pending]::before { content: "☐"; color: var(--muted, #596470); }
.todo-items li[data-status=in_progress] { font-weight: 600; background: var(--highlight, #eaf1fd); }
.todo-items li[data-status=in_progress]::before { content: "▶"; color: var(--accent, #2359b8); }
.todo-items li[data-status=completed] { color: var(--muted, #596470); }
.todo-items li[data-status=completed]::before { content: "☑"; color: var(--ok, #1d7031); }
`;
const STATUS = { pending: "pending", in_progress: "in progress", completed: "done" };

let styled = false;

function style() {
  if (styled) return;
  const sheet = new CSSStyleSheet();
  sheet.replaceSync(STYLE);
  document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  styled = true;
}

export function mount(slot, host) {
  let todos = [];
  let collapsed = host.storage.get("todo-collapsed") === "1";
  // A finished plan (every task done) shows its summary line only, unless opened since.
  let openFinished = host.storage.get("todo-open-finished") === "1";
  style();

  function render() {
    slot.replaceChildren();
    if (!todos.length) return;  // no plan standing: no panel
    const done = todos.filter((t) => t.status === "completed").length;
    const active = todos.find((t) => t.status === "in_progress");
    const finished = done === todos.length;
    if (!finished && openFinished) { openFinished = false; host.storage.set("todo-open-finished", "0"); }
    const shut = finished ? !openFinished : collapsed;
    const dock = document.createElement("section");
    dock.dataset.testid = "todo-dock";
    dock.className = "todo-dock";
    dock.setAttribute("aria-label", "Plan");
    const head = document.createElement("div");
    head.className = "todo-head";
    const summary = document.createElement("span");
    summary.dataset.testid = "todo-summary";
    summary.textContent = `Plan ${done}/${todos.length} done` + (active ? ` · now: ${active.content}` : "");
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.dataset.testid = "todo-toggle";
    toggle.setAttribute("aria-expanded", String(!shut));
    toggle.textContent = shut ? "Show plan" : "Hide plan";
    toggle.onclick = () => {
      if (finished) {
        openFinished = !openFinished;
        host.storage.set("todo-open-finished", openFinished ? "1" : "0");
      } else {
        collapsed = !collapsed;
        host.storage.set("todo-collapsed", collapsed ? "1" : "0");
      }
      render();
    };
    head.append(summary, toggle);
    dock.append(head);
    if (!shut) {
      const list = document.createElement("ul");
      list.className = "todo-items";
      let current = null;
      for (const todo of todos) {
        const item = document.createElement("li");
        item.dataset.testid = "todo-item";
        item.dataset.status = todo.status;
        item.setAttribute("aria-label", `${STATUS[todo.status] || todo.status}: ${todo.content}`);
        item.textContent = todo.content;
        if (todo === active) current = item;
        list.append(item);
      }
      dock.append(list);
      slot.append(dock);
      // The task in progress stays in view, a little below the top, as the terminal strip
      // collapses a long plan around it.
      // (At the next frame: a burst of snapshots lays the page out once.)
      if (current) {
        requestAnimationFrame(() => {
          if (list.isConnected) list.scrollTop = Math.max(0, current.offsetTop - list.clientHeight / 3);
        });
      }
      return;
    }
    slot.append(dock);
  }

  host.onSnapshot((snapshot) => {
    todos = Array.isArray(snapshot.todos) ? snapshot.todos : [];
    render();
  });
  return () => slot.replaceChildren();
}
