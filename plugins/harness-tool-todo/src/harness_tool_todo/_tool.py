"""The `todo_write` tool: whole-list replace, validated, written to the caller's session.

The texts below are contract: models and tests outside the project match them exactly.
Schema violations (a missing key, an unknown item key, a bad status) never reach `execute`:
the registry rejects them with its own "invalid arguments" text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness_core.tools import ExecContext, Tool, ToolResult

from ._model import TodoItem, TodoWriteArgs, TodoWritePayload, count
from ._render import plan_line
from ._vocabulary import EVENT_TYPE
from .projections import todos_of_data

__all__ = [
    "DESCRIPTION",
    "EMPTY_CONTENT",
    "EVENT_TYPE",
    "NO_AGENT",
    "ONE_ACTIVE",
    "PARALLEL_ACTIVE",
    "PARALLEL_DESCRIPTION",
    "TodoWriteTool",
]


# What the model reads about the tool with every request: short (it is paid for on each one)
# and behavioural. One line depends on the in-progress policy, so the model is never taught a
# rule the tool does not enforce (or refused for following the one it was taught).
_DESCRIPTION: Final = """\
Plan and track multi-step work as a todo list the user sees live.
Use it when a task needs three or more steps or the user asks for several things; \
skip it for a single quick step.
Every call sends the whole list, which replaces the previous one.
- Keep the tasks in the order you will do them; write each once, as a short imperative phrase.
{active}
- Mark a task completed as soon as it is done; do not save completions for later.
- Never mark a task completed while it is failing or partial: keep it in_progress and add \
a task for what blocks it.
- Add tasks you discover, and drop ones that no longer apply.
- When you can make several tool calls at once, update the list in the same response as \
the work (beside the call that starts the next task), not in a response of its own.
The host shows the list to the user: do not repeat it in your replies."""
ONE_ACTIVE: Final = (
    "- Exactly one task is in_progress while work remains: mark a task in_progress before you "
    "start on it, and work on one task at a time."
)
PARALLEL_ACTIVE: Final = (
    "- Mark a task in_progress before you start on it. Several may be in_progress only while "
    "you really work on them at the same time; otherwise keep exactly one."
)
DESCRIPTION: Final = _DESCRIPTION.format(active=ONE_ACTIVE)
PARALLEL_DESCRIPTION: Final = _DESCRIPTION.format(active=PARALLEL_ACTIVE)

NO_AGENT: Final = "Error: todo_write requires an owning agent session"
EMPTY_CONTENT: Final = "Error: invalid todo: `content` must be a non-empty string"


class TodoWriteTool(Tool[TodoWriteArgs]):
    """`todo_write(todos)`: replaces the calling agent's todo list with `todos`."""

    name = "todo_write"
    description = DESCRIPTION
    arguments = TodoWriteArgs
    exclusive = True  # two writes in one message must land in call order: the later one wins
    effect = "log_only"  # its only effect is the todo/write event on the caller's session

    def __init__(self, *, allow_parallel_in_progress: bool = False) -> None:
        self.allow_parallel_in_progress = allow_parallel_in_progress
        self.description = PARALLEL_DESCRIPTION if allow_parallel_in_progress else DESCRIPTION

    async def execute(self, args: TodoWriteArgs, exec_ctx: ExecContext) -> ToolResult:
        # Single owner: the list lives on the calling agent's own session, so a call from
        # outside an agent loop has nowhere to write and is refused before anything else.
        if exec_ctx.agent is None:
            return ToolResult(NO_AGENT, is_error=True)
        # Content is kept exactly as written: the log must match the call in the model's own
        # history, and a duplicate error must quote a text the model can find in its list.
        # Hosts fold whitespace for display only.
        todos = [TodoItem(content=t.content, status=t.status) for t in args.todos]
        problem = self.validate(todos)
        if problem is not None:
            return ToolResult(problem, is_error=True)
        # The payload is built from fresh items and the log stores its own JSON dump, so the
        # logged event is a snapshot no later change to the arguments or result data reaches.
        exec_ctx.agent.append(EVENT_TYPE, TodoWritePayload(todos=tuple(todos)))
        counts = count(todos)
        return ToolResult(
            f"Updated todo list: {counts['pending']} pending, {counts['inProgress']} in progress, "
            f"{counts['completed']} completed.",
            data={"todos": [t.model_dump() for t in todos], "counts": counts},
        )

    def validate(self, todos: Sequence[TodoItem]) -> str | None:
        """The model-facing error for an invalid list, or None.

        Problems are reported in item order, one at a time: the model fixes it and resends.
        """
        seen: set[str] = set()
        for todo in todos:
            if not todo.content.strip():
                return EMPTY_CONTENT
            if todo.content in seen:
                return f'Error: invalid todos: duplicate content "{todo.content}"'
            seen.add(todo.content)
        active = sum(t.status == "in_progress" for t in todos)
        if active > 1 and not self.allow_parallel_in_progress:
            return f"Error: invalid todos: at most one task may be in_progress, got {active}"
        return None

    # `present_call` stays the default, the bare name: the result line says what the write did.

    def present_result(self, result: ToolResult) -> str | None:
        """`Plan 2/5 done · now: Run the tests`: one line confirming the write; None for an error.

        The list itself is the plan strip's and the panel's to show, not the tool row's.
        """
        if result.is_error or not isinstance(result.data, dict):
            return None
        return plan_line(todos_of_data(result.data.get("todos")))
