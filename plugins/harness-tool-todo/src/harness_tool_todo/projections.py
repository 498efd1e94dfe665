"""Todo projections, folded from `todo/write` events only; hosts render these.

- current list: the latest `todo/write` (last write wins);
- standing plan: the latest `todo/write` not followed by a `turn/start` (a new turn clears the
  plan strip until the model writes again);
- history: every revision and what changed, including items dropped while unfinished.

The `read_*` forms read a session file backwards through the log's tail query, so their cost
does not grow with the session's length. Replay never re-applies the in-progress policy: a
list written under another policy still folds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harness_core.log import Event, find_latest

from ._model import TodoItem
from ._tool import EVENT_TYPE

__all__ = [
    "Change",
    "Plan",
    "Revision",
    "current_todos",
    "diff",
    "plan_history",
    "read_current",
    "read_plan",
    "standing_plan",
    "todos_of",
]

ChangeKind = Literal["added", "started", "completed", "reopened", "reworded", "dropped", "removed"]


@dataclass(frozen=True, slots=True)
class Plan:
    """A todo list and whether the plan strip shows it."""

    todos: tuple[TodoItem, ...]
    standing: bool
    seq: int | None = None

    def export(self) -> dict[str, object]:
        return {"todos": [t.model_dump() for t in self.todos], "standing": self.standing}


@dataclass(frozen=True, slots=True)
class Change:
    kind: ChangeKind
    content: str
    previous: str | None = None  # the old wording, for `reworded`

    def describe(self) -> str:
        if self.kind == "reworded":
            return f'reworded "{self.previous}" -> "{self.content}"'
        if self.kind == "dropped":
            return f'dropped unfinished "{self.content}"'
        return f'{self.kind} "{self.content}"'


@dataclass(frozen=True, slots=True)
class Revision:
    seq: int
    ts: str
    turn: int | None
    todos: tuple[TodoItem, ...]
    changes: tuple[Change, ...] = field(default=())


def todos_of(event: Event) -> tuple[TodoItem, ...]:
    """The list a `todo/write` event carries; malformed items are skipped, never fatal."""
    items = event.data.get("todos")
    if not isinstance(items, list):
        return ()
    todos = []
    for item in items:
        try:
            todos.append(TodoItem.model_validate(item))
        except ValueError:
            continue
    return tuple(todos)


def current_todos(events: Sequence[Event]) -> tuple[TodoItem, ...]:
    for event in reversed(events):
        if event.type == EVENT_TYPE:
            return todos_of(event)
    return ()


def standing_plan(events: Sequence[Event]) -> Plan:
    """The plan as of the end of `events` (in memory, scanning back)."""
    for event in reversed(events):
        if event.type == "turn/start":
            return Plan(current_todos(events), standing=False)
        if event.type == EVENT_TYPE:
            return Plan(todos_of(event), standing=True, seq=event.seq)
    return Plan((), standing=False)


def read_current(path: Path) -> tuple[TodoItem, ...]:
    event = find_latest(path, {EVENT_TYPE})
    return todos_of(event) if event is not None else ()


def read_plan(path: Path) -> Plan:
    """The standing plan of a session file, read from its tail."""
    boundary = find_latest(path, {EVENT_TYPE, "turn/start"})
    if boundary is not None and boundary.type == EVENT_TYPE:
        return Plan(todos_of(boundary), standing=True, seq=boundary.seq)
    latest = find_latest(path, {EVENT_TYPE}) if boundary is not None else None
    return Plan(todos_of(latest) if latest else (), standing=False)


def plan_history(events: Iterable[Event]) -> list[Revision]:
    """Every revision of the list, oldest first, with what changed since the previous one."""
    revisions: list[Revision] = []
    previous: tuple[TodoItem, ...] = ()
    for event in events:
        if event.type != EVENT_TYPE:
            continue
        todos = todos_of(event)
        revisions.append(Revision(event.seq, event.ts, event.turn, todos, diff(previous, todos)))
        previous = todos
    return revisions


def diff(old: Sequence[TodoItem], new: Sequence[TodoItem]) -> tuple[Change, ...]:
    """What changed from `old` to `new`. Items match by content; an unmatched old item and an
    unmatched new item at the same position count as one item reworded."""
    old_by_content = {t.content: t for t in old}
    new_contents = {t.content for t in new}
    gone = [(i, t) for i, t in enumerate(old) if t.content not in new_contents]
    gone_at = dict(gone)
    changes: list[Change] = []
    for index, item in enumerate(new):
        before = old_by_content.get(item.content)
        if before is None and index in gone_at:
            before = gone_at.pop(index)
            changes.append(Change("reworded", item.content, previous=before.content))
        if before is None:
            changes.append(Change("added", item.content))
            before = TodoItem(content=item.content, status="pending")
        if item.status != before.status:
            changes.append(Change(_status_change(before.status, item.status), item.content))
    for _, item in sorted(gone_at.items()):
        kind: ChangeKind = "removed" if item.status == "completed" else "dropped"
        changes.append(Change(kind, item.content))
    return tuple(changes)


def _status_change(before: str, after: str) -> ChangeKind:
    if after == "completed":
        return "completed"
    if after == "in_progress":
        return "started"
    return "reopened"
