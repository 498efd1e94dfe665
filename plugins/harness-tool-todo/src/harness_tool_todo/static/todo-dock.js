// harness-tool-todo's dock entry: the plan panel above the prompt (slot conversation.input.dock).
// It renders the snapshot's `todos` (the standing plan the host computes from the whole log)
// and never scans events. Task text is set as text, never as HTML.

// Styles go through the CSSOM: the page's Content-Security-Policy forbids inline style markup.
const LOOKS = {
  pending: {},
  in_progress: { fontWeight: "600" },
  completed: { textDecoration: "line-through", opacity: "0.6" },
};

export function mount(slot, host) {
  let todos = [];
  let collapsed = host.storage.get("todo-collapsed") === "1";

  function render() {
    slot.replaceChildren();
    if (!todos.length) return;  // no plan standing: no panel
    const done = todos.filter((t) => t.status === "completed").length;
    const active = todos.find((t) => t.status === "in_progress");
    const dock = document.createElement("section");
    dock.dataset.testid = "todo-dock";
    dock.className = "todo-dock";
    Object.assign(dock.style, { border: "1px solid #dde1e5", borderRadius: "6px",
                                padding: "6px 10px", marginBottom: "6px", fontSize: "13px" });
    const head = document.createElement("div");
    head.className = "todo-head";
    Object.assign(head.style, { display: "flex", justifyContent: "space-between", gap: "8px" });
    const summary = document.createElement("span");
    summary.dataset.testid = "todo-summary";
    summary.textContent = `Plan ${done}/${todos.length} done` + (active ? ` · now: ${active.content}` : "");
    const toggle = document.createElement("button");
    toggle.type = "button";
    toggle.dataset.testid = "todo-toggle";
    toggle.setAttribute("aria-expanded", String(!collapsed));
    toggle.textContent = collapsed ? "Show plan" : "Hide plan";
    toggle.onclick = () => {
      collapsed = !collapsed;
      host.storage.set("todo-collapsed", collapsed ? "1" : "0");
      render();
    };
    head.append(summary, toggle);
    dock.append(head);
    if (!collapsed) {
      const list = document.createElement("ul");
      list.className = "todo-items";
      for (const todo of todos) {
        const item = document.createElement("li");
        item.dataset.testid = "todo-item";
        item.dataset.status = todo.status;
        item.title = todo.status.replace("_", " ");
        item.textContent = todo.content;
        Object.assign(item.style, LOOKS[todo.status] || {});
        list.append(item);
      }
      dock.append(list);
    }
    slot.append(dock);
  }

  host.onSnapshot((snapshot) => {
    todos = Array.isArray(snapshot.todos) ? snapshot.todos : [];
    render();
  });
  return () => slot.replaceChildren();
}
