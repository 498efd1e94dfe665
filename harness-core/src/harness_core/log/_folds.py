"""What a session log keeps of its events besides the message projection: small folds.

A writer does not hold its events: a long session's would cost far more memory than the
model's history, which is all a turn needs (docs/log.md, "Memory"). What the loop and the
plugins still ask of the past is folded here as the events go by, in constant space:

- `Newest`: the newest event of each type, so "the latest todo/write" needs no scan; a
  compaction also gets the newest events *before* it, which is all `harness_compaction_carry`
  may look at, so what plugins carry is fixed when the compaction is folded, live or on replay;
- `Grants`: the tools a user allowed for the whole session (`tool/approval`, scope `session`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ._envelope import Event

__all__ = ["Grants", "History", "Newest", "history_of"]


class History(Protocol):
    """Read access to a session's events before some point (the carry hook's argument)."""

    def latest(self, types: Iterable[str] | str) -> Event | None:
        """The newest event of one of `types` (or of `types`, a str), or None."""
        ...


class Newest:
    """The newest event of each type seen so far."""

    __slots__ = ("_by_type",)

    def __init__(self, by_type: dict[str, Event] | None = None) -> None:
        self._by_type: dict[str, Event] = {} if by_type is None else by_type

    def fold(self, event: Event) -> None:
        self._by_type[event.type] = event

    def latest(self, types: Iterable[str] | str) -> Event | None:
        wanted = (types,) if isinstance(types, str) else types
        found = [event for t in wanted if (event := self._by_type.get(t)) is not None]
        return max(found, key=_seq) if found else None

    def frozen(self) -> Newest:
        """What this says now, unaffected by later folds (a dict of references: small)."""
        return Newest(dict(self._by_type))


def history_of(events: Iterable[Event]) -> History:
    """The history `events` make (for a projection folded outside a log, and for tests)."""
    newest = Newest()
    for event in events:
        newest.fold(event)
    return newest


class Grants:
    """The tools a user allowed for the rest of the session, folded from its events."""

    __slots__ = ("_calls", "tools")

    def __init__(self) -> None:
        self.tools: set[str] = set()
        self._calls: dict[str, str] = {}  # call id -> tool, for the latest assistant message

    def fold(self, event: Event) -> None:
        data = event.data
        if event.type == "message/assistant":
            calls = data.get("tool_calls") or ()
            self._calls = {
                str(c.get("id")): str(c.get("name")) for c in calls if isinstance(c, dict)
            }
        elif (
            event.type == "tool/approval"
            and data.get("decision") == "allow"
            and data.get("by") == "user"
            and data.get("scope") == "session"
        ):
            tool = self._calls.get(str(data.get("call_id")))
            if tool is not None:
                self.tools.add(tool)


def _seq(event: Event) -> int:
    return event.seq
