"""What the todo plugin shows in hosts: the terminal plan strip and the snapshot's `todos`.

Both are the standing plan (`PlanFold`): a new turn clears them until the model writes again.
The strip collapses a long plan to a window around the active task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from harness_core.hosts import StripLine, Styled
from harness_core.log import Event

from ._render import MARKS, shown
from .projections import PlanFold, Todo

__all__ = ["STRIP_ITEMS", "PlanSnapshot", "PlanStrip", "Row", "plain_strip", "strip_lines"]

# Items a strip shows at most; a longer list collapses around the active task.
STRIP_ITEMS: Final = 7
_STYLES: Final = {
    "completed": ("green", "dim"),
    "in_progress": ("bold yellow", "bold yellow"),
    "pending": ("", ""),
    None: ("dim", "dim"),
}


@dataclass(frozen=True, slots=True)
class Row:
    """One strip line: a task, or a `⋯ N more` marker standing for hidden tasks."""

    text: str
    status: str | None  # None for a marker row

    @property
    def mark(self) -> str:
        return MARKS[self.status] if self.status is not None else "⋯"


def strip_rows(todos: Sequence[Todo], limit: int = STRIP_ITEMS) -> list[Row]:
    """The rows to draw: every task, or a window of `limit` around the active one."""
    rows = [Row(shown(t.content), t.status) for t in todos]
    if len(rows) <= limit:
        return rows
    start = min(max(_focus(todos) - limit // 2, 0), len(rows) - limit)
    above, below = start, len(rows) - start - limit
    head = [Row(f"{above} more above", None)] if above else []
    tail = [Row(f"{below} more below", None)] if below else []
    return head + rows[start : start + limit] + tail


def _focus(todos: Sequence[Todo]) -> int:
    """The task a collapsed strip centres on: the active one, else the next pending one."""
    for wanted in ("in_progress", "pending"):
        for index, todo in enumerate(todos):
            if todo.status == wanted:
                return index
    return len(todos) - 1


def strip_lines(todos: Sequence[Todo], limit: int = STRIP_ITEMS) -> list[StripLine]:
    """`Plan · 2/5 done`, then one styled row a task (collapsed when long); none when empty."""
    if not todos:
        return []
    done = sum(t.status == "completed" for t in todos)
    lines: list[StripLine] = [(Styled(f"Plan · {done}/{len(todos)} done", "bold"),)]
    for row in strip_rows(todos, limit):
        mark_style, text_style = _STYLES[row.status]
        lines.append(
            (Styled("  "), Styled(row.mark, mark_style), Styled(" "), Styled(row.text, text_style))
        )
    return lines


def plain_strip(todos: Sequence[Todo], limit: int = STRIP_ITEMS) -> list[str]:
    """The strip as plain lines (off a terminal, transcripts, snapshots)."""
    return ["".join(part.text for part in line) for line in strip_lines(todos, limit)]


class _StandingPlan:
    """The one fold both host views read: strip and snapshot differ only in what they show."""

    __slots__ = ("fold",)

    def __init__(self) -> None:
        self.fold = PlanFold()

    def apply(self, event: Event) -> bool:
        return self.fold.apply(event)


class PlanStrip(_StandingPlan):
    """The terminal strip (`harness_terminal_strip`): the standing plan, pinned."""

    __slots__ = ()

    def lines(self) -> list[StripLine]:
        return strip_lines(self.fold.todos) if self.fold.standing else []


class PlanSnapshot(_StandingPlan):
    """The snapshot fields (`harness_snapshot_fields`): `{"todos": [...]}`, the standing plan
    computed from the whole log, `[]` when none stands. Content is verbatim."""

    __slots__ = ()

    def fields(self) -> dict[str, Any]:
        todos = self.fold.todos if self.fold.standing else ()
        return {"todos": [todo.export() for todo in todos]}
