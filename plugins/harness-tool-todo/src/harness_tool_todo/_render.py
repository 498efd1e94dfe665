"""Plain-text renderings of a todo list: a checklist and a Markdown checklist.

Content is stored as the model wrote it; renderings fold its whitespace so that a task always
takes one line. That is display only: exports carry the verbatim text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._model import TodoItem

__all__ = ["EMPTY_LIST", "MARKS", "fold", "plan_line", "render_checklist", "render_markdown"]

MARKS: Final = {"pending": "☐", "in_progress": "▶", "completed": "☑"}
EMPTY_LIST: Final = "(empty todo list)"


def fold(content: str) -> str:
    """`content` on one line: ends stripped, inner whitespace runs (newlines too) one space."""
    return " ".join(content.split())


def plan_line(todos: Sequence[TodoItem]) -> str:
    """`Plan 2/5 done · now: Run the tests`: the counts and the active task, on one line."""
    if not todos:
        return "Plan cleared"
    done = sum(t.status == "completed" for t in todos)
    active = [fold(t.content) for t in todos if t.status == "in_progress"]
    now = ""
    if active:
        more = f" (+{len(active) - 1} more)" if len(active) > 1 else ""
        now = f" · now: {active[0]}{more}"
    return f"Plan {done}/{len(todos)} done{now}"


def render_checklist(todos: Sequence[TodoItem]) -> str:
    """One line a task: `☑ done`, `▶ active`, `☐ pending`."""
    return "\n".join(f"{MARKS[t.status]} {fold(t.content)}" for t in todos) or EMPTY_LIST


def render_markdown(todos: Sequence[TodoItem]) -> str:
    """A GitHub-style checklist; the active task is bold."""
    lines = []
    for todo in todos:
        box = "x" if todo.status == "completed" else " "
        text = fold(todo.content)
        if todo.status == "in_progress":
            text = f"**{text}**"
        lines.append(f"- [{box}] {text}")
    return "\n".join(lines) or EMPTY_LIST
