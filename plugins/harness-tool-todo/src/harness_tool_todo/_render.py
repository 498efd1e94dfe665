"""Plain-text renderings of a todo list: a checklist and a Markdown checklist.

Content is stored as the model wrote it; renderings fold its whitespace so that a task always
takes one line. That is display only: exports carry the verbatim text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol

from harness_core.hosts import one_line

__all__ = [
    "EMPTY_LIST",
    "MARKS",
    "Task",
    "plan_line",
    "render_checklist",
    "render_markdown",
    "shown",
]

MARKS: Final = {"pending": "☐", "in_progress": "▶", "completed": "☑"}


class Task(Protocol):
    """A task as either side holds it: the tool's argument item or the read side's `Todo`."""

    @property
    def content(self) -> str: ...

    @property
    def status(self) -> str: ...


EMPTY_LIST: Final = "(empty todo list)"
_WHOLE: Final = 1 << 30  # no width limit: a checklist shows the whole task


def shown(content: str, width: int = _WHOLE) -> str:
    """A task as a host displays it: one line, control codes removed (the log keeps it
    verbatim; a task name must never move the cursor or recolour the user's terminal)."""
    return one_line(content, width)


def plan_line(todos: Sequence[Task]) -> str:
    """`Plan 2/5 done · now: Run the tests`: one line for a tool row (the TodoRow summary)."""
    if not todos:
        return "Plan cleared"
    done = sum(t.status == "completed" for t in todos)
    active = [t for t in todos if t.status == "in_progress"]
    now = ""
    if active:
        more = f" (+{len(active) - 1} more)" if len(active) > 1 else ""
        now = f" · now: {shown(active[0].content, 80)}{more}"
    return f"Plan {done}/{len(todos)} done{now}"


def render_checklist(todos: Sequence[Task]) -> str:
    """One line a task: `☑ done`, `▶ active`, `☐ pending`."""
    return "\n".join(f"{MARKS[t.status]} {shown(t.content)}" for t in todos) or EMPTY_LIST


def render_markdown(todos: Sequence[Task]) -> str:
    """A GitHub-style checklist; the active task is bold."""
    lines = []
    for todo in todos:
        box = "x" if todo.status == "completed" else " "
        text = shown(todo.content)
        text = f"**{text}**" if todo.status == "in_progress" else text
        lines.append(f"- [{box}] {text}")
    return "\n".join(lines) or EMPTY_LIST
