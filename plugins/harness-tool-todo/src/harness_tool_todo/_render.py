"""Plain-text renderings of a todo list: a checklist and a Markdown checklist.

Content is stored as the model wrote it; renderings fold its whitespace so that a task always
takes one line. That is display only: exports carry the verbatim text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from ._model import TodoItem

__all__ = ["EMPTY_LIST", "MARKS", "fold", "render_checklist", "render_markdown"]

MARKS: Final = {"pending": "☐", "in_progress": "▶", "completed": "☑"}
EMPTY_LIST: Final = "(empty todo list)"


def fold(content: str) -> str:
    """`content` on one line: ends stripped, inner whitespace runs (newlines too) one space."""
    return " ".join(content.split())


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
