"""Todo projections, folded from `todo/write` events only; hosts render these.

- current list: the latest `todo/write` (last write wins);
- standing plan: the latest `todo/write` not followed by a `turn/start` (a new turn clears the
  plan strip until the model writes again);
- history: every revision and what changed, including items dropped while unfinished.

`PlanFold` is the one fold of the standing plan: the terminal strip, the snapshot fields and
`standing_plan` all apply it. The `read_*` forms answer the same question from a session file
read backwards through the log's tail query, so their cost depends on how far back the latest
write is, not on the session's length; a test holds them equal to the fold.

Reading trusts what the tool wrote (it validated on the way in) and needs no pydantic: items
are plain `Todo` values, and a malformed item is skipped, never fatal. Replay never re-applies
the in-progress policy: a list written under another policy still folds.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from harness_core.log import Event, Store

from ._render import shown
from ._vocabulary import EVENT_TYPE, STATUSES, Status

__all__ = [
    "Change",
    "ChangeKind",
    "Plan",
    "PlanFold",
    "Revision",
    "Todo",
    "current_todos",
    "diff",
    "plan_history",
    "read_current",
    "read_plan",
    "standing_plan",
    "todos_of",
    "todos_of_data",
]

ChangeKind = Literal[
    "added", "started", "paused", "completed", "reopened", "reworded", "dropped", "removed"
]

# How alike two wordings must be to count as one task reworded (difflib ratio, casefolded).
REWORD_SIMILARITY: Final = 0.6
# Pairing compares every vanished item with every new one; past this many pairs, skip it.
_MAX_PAIRINGS: Final = 2500


@dataclass(frozen=True, slots=True)
class Todo:
    """One task as the log holds it: the content exactly as the model wrote it, and a status."""

    content: str
    status: Status

    def export(self) -> dict[str, str]:
        """`{"content", "status"}`, the item shape of every JSON output."""
        return {"content": self.content, "status": self.status}


@dataclass(frozen=True, slots=True)
class Plan:
    """A todo list, whether the plan strip shows it, and the seq of the write it came from."""

    todos: tuple[Todo, ...]
    standing: bool
    seq: int | None = None

    def export(self) -> dict[str, Any]:
        """The `harness todos --json` shape: `{"todos": [...], "standing": bool}`."""
        return {"todos": [t.export() for t in self.todos], "standing": self.standing}


@dataclass(frozen=True, slots=True)
class Change:
    """One thing that changed between two revisions of the list."""

    kind: ChangeKind
    content: str
    previous: str | None = None  # the old wording, for `reworded`

    def describe(self) -> str:
        if self.kind == "reworded":
            return f'reworded "{shown(self.previous or "")}" -> "{shown(self.content)}"'
        if self.kind == "dropped":
            return f'dropped unfinished "{shown(self.content)}"'
        return f'{self.kind} "{shown(self.content)}"'

    def export(self) -> dict[str, Any]:
        """`{"kind", "content", "previous"}`; `previous` is the old wording or null."""
        return {"kind": self.kind, "content": self.content, "previous": self.previous}


@dataclass(frozen=True, slots=True)
class Revision:
    """One `todo/write`: where it is on the log, the list it wrote, and what changed."""

    seq: int
    ts: str
    turn: int | None
    todos: tuple[Todo, ...]
    changes: tuple[Change, ...] = field(default=())

    def export(self) -> dict[str, Any]:
        """The `harness todos --history --json` shape of one revision."""
        return {
            "seq": self.seq,
            "ts": self.ts,
            "turn": self.turn,
            "todos": [t.export() for t in self.todos],
            "changes": [c.export() for c in self.changes],
        }


def todos_of(event: Event) -> tuple[Todo, ...]:
    """The list a `todo/write` event carries. Malformed items are skipped, never fatal, and
    unknown item keys (from a newer writer) are ignored rather than failing the item."""
    return todos_of_data(event.data.get("todos"))


def todos_of_data(items: object) -> tuple[Todo, ...]:
    """`todos_of` for the list itself (a result's `data["todos"]`)."""
    if not isinstance(items, list):
        return ()
    todos = []
    for item in items:
        if isinstance(item, dict):
            content, status = item.get("content"), item.get("status")
            if isinstance(content, str) and status in STATUSES:
                todos.append(Todo(content, status))
    return tuple(todos)


class PlanFold:
    """The standing plan, folded event by event: the latest `todo/write` not followed by a
    `turn/start`. The current list outlives a new turn; only its standing ends."""

    __slots__ = ("seq", "standing", "todos")

    def __init__(self) -> None:
        self.todos: tuple[Todo, ...] = ()
        self.standing = False
        self.seq: int | None = None

    def apply(self, event: Event) -> bool:
        """Fold one event; True when the standing plan changed."""
        if event.type == EVENT_TYPE:
            self.todos, self.standing, self.seq = todos_of(event), True, event.seq
            return True
        if event.type == "turn/start" and self.standing:
            self.standing = False
            return True
        return False

    @property
    def plan(self) -> Plan:
        return Plan(self.todos, self.standing, self.seq)

    @classmethod
    def replay(cls, events: Iterable[Event]) -> PlanFold:
        fold = cls()
        for event in events:
            fold.apply(event)
        return fold


def current_todos(events: Sequence[Event]) -> tuple[Todo, ...]:
    """The latest written list (last write wins); empty before the first write."""
    for event in reversed(events):
        if event.type == EVENT_TYPE:
            return todos_of(event)
    return ()


def standing_plan(events: Iterable[Event]) -> Plan:
    """The plan as of the end of `events`: `PlanFold` over them."""
    return PlanFold.replay(events).plan


def read_current(store: Store, session_id: str) -> tuple[Todo, ...]:
    """`current_todos` of a session, from the store's latest-event query."""
    event = store.latest(session_id, {EVENT_TYPE})
    return todos_of(event) if event is not None else ()


def read_plan(store: Store, session_id: str) -> Plan:
    """`standing_plan` of a session, from the store's latest-event query (no replay)."""
    boundary = store.latest(session_id, {EVENT_TYPE, "turn/start"})
    if boundary is None:
        return Plan((), standing=False)
    if boundary.type == EVENT_TYPE:
        return Plan(todos_of(boundary), standing=True, seq=boundary.seq)
    latest = store.latest(session_id, {EVENT_TYPE})
    if latest is None:
        return Plan((), standing=False)
    return Plan(todos_of(latest), standing=False, seq=latest.seq)


def plan_history(events: Iterable[Event]) -> list[Revision]:
    """Every revision of the list, oldest first, with what changed since the previous one."""
    revisions: list[Revision] = []
    previous: tuple[Todo, ...] = ()
    for event in events:
        if event.type != EVENT_TYPE:
            continue
        todos = todos_of(event)
        revisions.append(Revision(event.seq, event.ts, event.turn, todos, diff(previous, todos)))
        previous = todos
    return revisions


def diff(old: Sequence[Todo], new: Sequence[Todo]) -> tuple[Change, ...]:
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
            before = Todo(item.content, "pending")
        if item.status != before.status:
            changes.append(Change(_status_change(before.status, item.status), item.content))
    paired = {id(t) for t in rewordings.values()}
    for item in gone:
        if id(item) not in paired:
            kind: ChangeKind = "removed" if item.status == "completed" else "dropped"
            changes.append(Change(kind, item.content))
    return tuple(changes)


def _pair_rewordings(
    old: Sequence[Todo], gone: list[Todo], fresh: list[tuple[int, Todo]]
) -> dict[int, Todo]:
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
    pairs: dict[int, Todo] = {}
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
    from difflib import SequenceMatcher  # --history only: `harness todos` reads no diff

    return SequenceMatcher(None, a, b).ratio()


def _status_change(before: str, after: str) -> ChangeKind:
    if after == "completed":
        return "completed"
    if before == "completed":
        return "reopened"
    return "started" if after == "in_progress" else "paused"
