"""Plain-text renderings of a todo list: a checklist and a Markdown checklist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._model import TodoItem

__all__ = ["EMPTY_LIST", "MARKS", "render_checklist", "render_markdown"]

MARKS: Final = {"pending": "☐", "in_progress": "▶", "completed": "☑"}
EMPTY_LIST: Final = "(empty todo list)"


def render_checklist(todos: Sequence[TodoItem]) -> str:
    """One line a task: `☑ done`, `▶ active`, `☐ pending`."""
    return "\n".join(f"{MARKS[t.status]} {t.content}" for t in todos) or EMPTY_LIST


def render_markdown(todos: Sequence[TodoItem]) -> str:
    """A GitHub-style checklist; the active task is bold."""
    lines = []
    for todo in todos:
        box = "x" if todo.status == "completed" else " "
        text = f"**{todo.content}**" if todo.status == "in_progress" else todo.content
        lines.append(f"- [{box}] {text}")
    return "\n".join(lines) or EMPTY_LIST
