"""The plan strip: folded from `todo/write` and `turn/start` events only (ARCHITECTURE §6).

The strip shows the *standing* plan: the latest `todo/write` not followed by a `turn/start`.
A new turn clears it until the model writes again. The fold reads the raw event data rather
than importing harness-tool-todo, so a host can show a session's plan even where the plugin
is not installed, and it never consults plugin memory, only the log.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from ..log import Event

__all__ = [
    "MARKS",
    "STRIP_ITEMS",
    "PlanStrip",
    "Row",
    "Todo",
    "plain_strip",
    "strip_header",
    "strip_rows",
    "todos_from",
]

TODO_EVENT: Final = "todo/write"
# Items a strip shows at most; a longer list collapses around the active task.
STRIP_ITEMS: Final = 7
MARKS: Final = {"completed": "☑", "in_progress": "▶", "pending": "☐"}

Status = Literal["pending", "in_progress", "completed"]


@dataclass(frozen=True, slots=True)
class Todo:
    content: str
    status: Status


@dataclass(frozen=True, slots=True)
class Row:
    """One strip line: a task, or a `⋯ N more` marker standing for hidden tasks."""

    text: str
    status: Status | None  # None for a marker row

    @property
    def mark(self) -> str:
        return MARKS[self.status] if self.status is not None else "⋯"


def todos_from(event: Event) -> tuple[Todo, ...]:
    """The list a `todo/write` event carries; malformed items are skipped, never fatal."""
    items = event.data.get("todos")
    if not isinstance(items, list):
        return ()
    todos = []
    for item in items:
        if not isinstance(item, dict):
            continue
        content, status = item.get("content"), item.get("status")
        if isinstance(content, str) and status in MARKS:
            todos.append(Todo(content, status))
    return tuple(todos)


class PlanStrip:
    """The standing plan of one session, updated event by event."""

    __slots__ = ("todos", "turn")

    def __init__(self) -> None:
        self.todos: tuple[Todo, ...] = ()
        self.turn: int | None = None  # the turn that wrote the standing plan

    def apply(self, event: Event) -> bool:
        """Fold one event; True when the strip changed."""
        if event.type == "turn/start":
            changed = bool(self.todos)
            self.todos, self.turn = (), None
            return changed
        if event.type == TODO_EVENT:
            self.todos, self.turn = todos_from(event), event.turn
            return True
        return False

    @classmethod
    def replay(cls, events: Iterable[Event]) -> PlanStrip:
        strip = cls()
        for event in events:
            strip.apply(event)
        return strip


def strip_header(todos: Sequence[Todo]) -> str:
    done = sum(t.status == "completed" for t in todos)
    return f"Plan · {done}/{len(todos)} done"


def strip_rows(todos: Sequence[Todo], limit: int = STRIP_ITEMS) -> list[Row]:
    """The rows to draw: every task, or a window of `limit` around the active one."""
    rows = [Row(t.content, t.status) for t in todos]
    if len(rows) <= limit:
        return rows
    start = min(max(_focus(todos) - limit // 2, 0), len(rows) - limit)
    window = rows[start : start + limit]
    above, below = start, len(rows) - start - limit
    head = [Row(f"{above} more above", None)] if above else []
    tail = [Row(f"{below} more below", None)] if below else []
    return head + window + tail


def _focus(todos: Sequence[Todo]) -> int:
    """The task a collapsed strip centres on: the active one, else the next pending one."""
    for wanted in ("in_progress", "pending"):
        for index, todo in enumerate(todos):
            if todo.status == wanted:
                return index
    return len(todos) - 1


def plain_strip(todos: Sequence[Todo], limit: int = STRIP_ITEMS) -> list[str]:
    """The strip as plain lines (off a TTY, transcripts, snapshots)."""
    if not todos:
        return []
    return [strip_header(todos), *(f"  {row.mark} {row.text}" for row in strip_rows(todos, limit))]
