"""A session as a host ships it: the conversation, the fields plugins add, the seq it covers.

The web host's tail page carries `fields()` (the todo plugin's `todos`, computed from the whole
log however short the page); any host that projects a session keeps one of these per session
and feeds it every event once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from ._conversation import Change, Conversation, ToolRow, call_row
from ._extensions import SnapshotFields

if TYPE_CHECKING:
    from ..log import Event

__all__ = ["SessionSnapshot"]

logger = logging.getLogger("harness.hosts")


class SessionSnapshot:
    """One session's conversation and plugin fields, folded event by event, and where on the
    log each tool call is.

    It keeps no finished message or row: a long session's would hold every result's text a
    second time (its reader keeps the lines) and, as objects, make every full pass of the
    host's garbage collector walk them all. A call is kept as seqs by its id (ints, which the
    collector never walks), and `rows` makes the rows a page shows from the events that hold
    them.
    """

    __slots__ = ("_folds", "_warned", "answered", "approved", "conversation", "made", "seq")

    def __init__(self, folds: Sequence[tuple[str, SnapshotFields]]) -> None:
        self.conversation = Conversation(keep=False)
        self.seq = -1  # the last seq folded
        # By call id, the seq of the assistant message that made the call, and of the
        # approval and the result the conversation took for it.
        self.made: dict[str, int] = {}
        self.approved: dict[str, int] = {}
        self.answered: dict[str, int] = {}
        self._folds = list(folds)
        self._warned: set[str] = set()

    def apply(self, event: Event) -> Change:
        """Fold one event into the conversation and every plugin's fields."""
        self.seq = event.seq
        for plugin, fold in list(self._folds):
            try:
                fold.apply(event)
            except Exception:
                # A plugin's bug must not take the session's page down: its fields go, once.
                logger.exception("snapshot fields of plugin %r failed; dropped", plugin)
                self._folds.remove((plugin, fold))
        change = self.conversation.apply(event)
        self._place(change)
        return change

    def _place(self, change: Change) -> None:
        seq = change.event.seq
        if change.kind == "assistant" and change.entry is not None:
            for row in change.entry.rows:
                self.made[row.call_id] = seq
                self.approved.pop(row.call_id, None)  # a repeated id: the new call's own
                self.answered.pop(row.call_id, None)
        elif change.kind == "approval" and change.row is not None:
            self.approved[change.row.call_id] = seq
        elif change.kind == "row_finished" and change.row is not None:
            self.answered[change.row.call_id] = seq

    def rows(
        self, events: Sequence[Event], fetch: Callable[[Collection[int]], dict[int, Event]]
    ) -> dict[str, ToolRow]:
        """The rows of the calls that `events` make or answer, by call id, as they stand now:
        made from `events` and, for a call made, approved or answered outside them, from the
        events `fetch(seqs)` reads back from the log."""
        places = {
            call: (self.made[call], self.approved.get(call), self.answered.get(call))
            for call in _calls_in(events)
            if call in self.made
        }
        found = {event.seq: event for event in events}
        wanted = {
            seq
            for place in places.values()
            for seq in place
            if seq is not None and seq not in found
        }
        if wanted:
            found |= fetch(wanted)
        running = {row.call_id for row in self.conversation.running}
        rows = {}
        for call, (made, approved, answered) in places.items():
            if made not in found:
                continue  # its line is damaged: the page shows what its events do
            row = call_row(
                call,
                found[made],
                _at(found, approved),
                _at(found, answered),
                running=call in running,
            )
            if row is not None:
                rows[call] = row
        return rows

    def fields(self) -> dict[str, Any]:
        """Every plugin's fields; a name two plugins use keeps the first plugin's value."""
        merged: dict[str, Any] = {}
        owners: dict[str, str] = {}
        for plugin, fold in self._folds:
            for name, value in fold.fields().items():
                if name not in merged:
                    merged[name], owners[name] = value, plugin
                elif plugin not in self._warned:
                    self._warned.add(plugin)
                    logger.warning(
                        "plugin %r sets snapshot field %r, which plugin %r sets; dropped",
                        plugin,
                        name,
                        owners[name],
                    )
        return merged


def _at(events: dict[int, Event], seq: int | None) -> Event | None:
    return None if seq is None else events.get(seq)


def _calls_in(events: Sequence[Event]) -> set[str]:
    """The ids of the calls that `events` make or answer."""
    calls = {str(e.data.get("call_id")) for e in events if e.type == "tool/result"}
    return calls | {
        str(call.get("id"))
        for e in events
        if e.type == "message/assistant"
        for call in e.data.get("tool_calls") or ()
        if isinstance(call, dict)
    }
