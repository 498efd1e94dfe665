"""Todo projections, folded from `todo/write` events only; hosts render these.

- current list: the latest `todo/write` (last write wins);
- standing plan: the latest `todo/write` not followed by a `turn/start` (a new turn clears the
  plan strip until the model writes again);
- history: every revision and what changed, including items dropped while unfinished.

The `read_*` forms read a session file backwards through the log's tail query, so their cost
depends on how far back the latest write is, not on the session's length. Replay never
re-applies the in-progress policy: a list written under another policy still folds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Final, Literal

from harness_core.log import Event, find_latest
from pydantic import ValidationError

from ._model import TodoItem
from ._tool import EVENT_TYPE

__all__ = [
    "Change",
    "ChangeKind",
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

ChangeKind = Literal[
    "added", "started", "paused", "completed", "reopened", "reworded", "dropped", "removed"
]

# How alike two wordings must be to count as one task reworded (difflib ratio, casefolded).
REWORD_SIMILARITY: Final = 0.6
# Pairing compares every vanished item with every new one; past this many pairs, skip it.
_MAX_PAIRINGS: Final = 2500


@dataclass(frozen=True, slots=True)
class Plan:
    """A todo list, whether the plan strip shows it, and the seq of the write it came from."""

    todos: tuple[TodoItem, ...]
    standing: bool
    seq: int | None = None

    def export(self) -> dict[str, Any]:
        """The `harness todos --json` shape: `{"todos": [...], "standing": bool}`."""
        return {"todos": [t.model_dump() for t in self.todos], "standing": self.standing}


@dataclass(frozen=True, slots=True)
class Change:
    """One thing that changed between two revisions of the list."""

    kind: ChangeKind
    content: str
    previous: str | None = None  # the old wording, for `reworded`

    def describe(self) -> str:
        if self.kind == "reworded":
            return f'reworded "{self.previous}" -> "{self.content}"'
        if self.kind == "dropped":
            return f'dropped unfinished "{self.content}"'
        return f'{self.kind} "{self.content}"'

    def export(self) -> dict[str, Any]:
        """`{"kind", "content", "previous"}`; `previous` is the old wording or null."""
        return {"kind": self.kind, "content": self.content, "previous": self.previous}


@dataclass(frozen=True, slots=True)
class Revision:
    """One `todo/write`: where it is on the log, the list it wrote, and what changed."""

    seq: int
    ts: str
    turn: int | None
    todos: tuple[TodoItem, ...]
    changes: tuple[Change, ...] = field(default=())

    def export(self) -> dict[str, Any]:
        """The `harness todos --history --json` shape of one revision."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "turn": self.turn,
            "todos": [t.model_dump() for t in self.todos],
            "changes": [c.export() for c in self.changes],
        }


def todos_of(event: Event) -> tuple[TodoItem, ...]:
    """The list a `todo/write` event carries. Malformed items are skipped, never fatal, and
    unknown item keys (from a newer writer) are ignored rather than failing the item."""
    items = event.data.get("todos")
    if not isinstance(items, list):
        return ()
    todos = []
    for item in items:
        if not isinstance(item, dict):
            continue
        try:
            fields = {"content": item.get("content"), "status": item.get("status")}
            todos.append(TodoItem.model_validate(fields))
        except ValidationError:
            continue
    return tuple(todos)


def current_todos(events: Sequence[Event]) -> tuple[TodoItem, ...]:
    """The latest written list (last write wins); empty before the first write."""
    for event in reversed(events):
        if event.type == EVENT_TYPE:
            return todos_of(event)
    return ()


def standing_plan(events: Sequence[Event]) -> Plan:
    """The plan as of the end of `events` (in memory, scanning back)."""
    standing = True
    for event in reversed(events):
        if event.type == "turn/start":
            standing = False
        elif event.type == EVENT_TYPE:
            return Plan(todos_of(event), standing=standing, seq=event.seq)
    return Plan((), standing=False)


def read_current(path: Path) -> tuple[TodoItem, ...]:
    """`current_todos` of a session file, read from its tail."""
    event = find_latest(path, {EVENT_TYPE})
    return todos_of(event) if event is not None else ()


def read_plan(path: Path) -> Plan:
    """`standing_plan` of a session file, read from its tail."""
    boundary = find_latest(path, {EVENT_TYPE, "turn/start"})
    if boundary is None:
        return Plan((), standing=False)
    if boundary.type == EVENT_TYPE:
        return Plan(todos_of(boundary), standing=True, seq=boundary.seq)
    latest = find_latest(path, {EVENT_TYPE})
    if latest is None:
        return Plan((), standing=False)
    return Plan(todos_of(latest), standing=False, seq=latest.seq)


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
    """What changed from `old` to `new`, in the new list's order, then vanished items.

    Items match by content. A new item and a vanished one that read alike (see `_alike`) are
    one task reworded; a vanished item is `removed` if it was completed, else `dropped`.
    """
    old_by_content = {t.content: t for t in old}
    new_contents = {t.content for t in new}
    gone = [t for t in old if t.content not in new_contents]
    fresh = [(i, t) for i, t in enumerate(new) if t.content not in old_by_content]
    rewordings = _pair_rewordings(old, gone, fresh)
    changes: list[Change] = []
    for index, item in enumerate(new):
        before = old_by_content.get(item.content)
        if before is None and index in rewordings:
            before = rewordings[index]
            changes.append(Change("reworded", item.content, previous=before.content))
        if before is None:
            changes.append(Change("added", item.content))
            before = TodoItem(content=item.content, status="pending")
        if item.status != before.status:
            changes.append(Change(_status_change(before.status, item.status), item.content))
    paired = {id(t) for t in rewordings.values()}
    for item in gone:
        if id(item) not in paired:
            kind: ChangeKind = "removed" if item.status == "completed" else "dropped"
            changes.append(Change(kind, item.content))
    return tuple(changes)


def _pair_rewordings(
    old: Sequence[TodoItem], gone: list[TodoItem], fresh: list[tuple[int, TodoItem]]
) -> dict[int, TodoItem]:
    """new index -> the vanished item it rewords: most alike first, then nearest position."""
    if not gone or not fresh or len(gone) * len(fresh) > _MAX_PAIRINGS:
        return {}
    position = {id(t): i for i, t in enumerate(old)}
    candidates = []
    for new_index, item in fresh:
        for before in gone:
            score = _alike(before.content, item.content)
            if score >= REWORD_SIMILARITY:
                distance = abs(position[id(before)] - new_index)
                candidates.append((-score, distance, new_index, position[id(before)], before))
    candidates.sort(key=lambda c: c[:4])
    pairs: dict[int, TodoItem] = {}
    used: set[int] = set()
    for _, _, new_index, _, before in candidates:
        if new_index not in pairs and id(before) not in used:
            pairs[new_index] = before
            used.add(id(before))
    return pairs


def _alike(a: str, b: str) -> float:
    """1.0 when one wording's words all appear in the other's ("Fix bug" / "Fix the parser
    bug"), else the character similarity of the two, casefolded."""
    a, b = a.casefold(), b.casefold()
    words_a, words_b = set(a.split()), set(b.split())
    if words_a and words_b and (words_a <= words_b or words_b <= words_a):
        return 1.0
    return SequenceMatcher(None, a, b).ratio()


def _status_change(before: str, after: str) -> ChangeKind:
    if after == "completed":
        return "completed"
    if before == "completed":
        return "reopened"
    return "started" if after == "in_progress" else "paused"
