"""The `todo_write` tool: whole-list replace, validated, written to the caller's session."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness_core.tools import ExecContext, Tool, ToolResult

from ._model import TodoItem, TodoWriteArgs, TodoWritePayload, count
from ._render import render_checklist

__all__ = ["DESCRIPTION", "EVENT_TYPE", "TodoWriteTool"]

EVENT_TYPE: Final = "todo/write"

DESCRIPTION: Final = """\
Plan and track multi-step work as a todo list that the user sees live.
Use it when a task needs three or more steps, or when the user asks for several things; \
skip it for a single quick step.
Every call sends the whole list, which replaces the previous one.
- Mark a task in_progress before you start on it, and keep one task in_progress at a time.
- Mark a task completed as soon as it is done; do not save completions for later.
- Never mark a task completed while it is failing or partial: keep it in_progress and add \
a task for what blocks it.
- Add tasks you discover, and drop ones that no longer apply.
The host shows the list to the user: do not repeat it in your replies."""

NO_AGENT: Final = "Error: todo_write requires an owning agent session"
EMPTY_CONTENT: Final = "Error: invalid todo: `content` must be a non-empty string"


class TodoWriteTool(Tool[TodoWriteArgs]):
    name = "todo_write"
    description = DESCRIPTION
    arguments = TodoWriteArgs
    exclusive = True  # two writes in one message must land in call order: the later one wins

    def __init__(self, *, allow_parallel_in_progress: bool = False) -> None:
        self.allow_parallel_in_progress = allow_parallel_in_progress

    async def execute(self, args: TodoWriteArgs, ctx: ExecContext) -> ToolResult:
        if ctx.agent is None:
            return ToolResult(NO_AGENT, is_error=True)
        todos = [TodoItem(content=t.content.strip(), status=t.status) for t in args.todos]
        problem = self.validate(todos)
        if problem is not None:
            return ToolResult(problem, is_error=True)
        # The payload is built from fresh items, so the logged event is a snapshot that no
        # later change to the arguments (or to the result data) can reach.
        ctx.agent.append(EVENT_TYPE, TodoWritePayload(todos=tuple(todos)))
        counts = count(todos)
        return ToolResult(
            f"Updated todo list: {counts['pending']} pending, {counts['inProgress']} in progress, "
            f"{counts['completed']} completed.",
            data={"todos": [t.model_dump() for t in todos], "counts": counts},
        )

    def validate(self, todos: Sequence[TodoItem]) -> str | None:
        """The model-facing error for an invalid list, or None."""
        seen: set[str] = set()
        for todo in todos:
            if not todo.content:
                return EMPTY_CONTENT
            if todo.content in seen:
                return f'Error: invalid todos: duplicate content "{todo.content}"'
            seen.add(todo.content)
        active = sum(t.status == "in_progress" for t in todos)
        if active > 1 and not self.allow_parallel_in_progress:
            return f"Error: invalid todos: at most one task may be in_progress, got {active}"
        return None

    def present_call(self, args: TodoWriteArgs) -> str:
        active = [t.content for t in args.todos if t.status == "in_progress"]
        done = sum(t.status == "completed" for t in args.todos)
        now = f" · now: {active[0]}" if active else ""
        return f"todo_write {done}/{len(args.todos)} done{now}"

    def present_result(self, result: ToolResult) -> str | None:
        if result.is_error or not isinstance(result.data, dict):
            return None
        return render_checklist([TodoItem(**t) for t in result.data["todos"]])
