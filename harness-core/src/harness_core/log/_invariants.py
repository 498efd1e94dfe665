"""Dev-mode invariants (HARNESS_DEV=1): structural rules every writer must keep.

They are checked on append, before a line reaches the disk, so a bug in the loop or a plugin
fails loudly in tests instead of leaving a log that only a repairing projection can read.
Historic events (from before this process opened the log) are folded without checking:
a crash may legitimately have left a turn open, and the loop repairs that on resume.
"""

from __future__ import annotations

import os

from ._envelope import Event

__all__ = ["InvariantChecker", "InvariantViolation", "dev_mode"]

# Events that speak of one call: each must name an open call of the latest assistant message.
_ANSWERS = frozenset({"tool/approval", "tool/result"})


def dev_mode() -> bool:
    return os.environ.get("HARNESS_DEV") == "1"


class InvariantViolation(AssertionError):
    """An append that would break a structural rule of the log."""


class InvariantChecker:
    """Tracks turn structure and open tool calls to validate the next append."""

    __slots__ = ("last_seq", "open_calls", "open_turn")

    def __init__(self) -> None:
        self.last_seq = -1
        self.open_turn: int | None = None
        self.open_calls: set[str] = set()

    @classmethod
    def from_tail(cls, events: list[Event]) -> InvariantChecker:
        """State after `events`, folding only from the last turn boundary (O(turn), not O(log))."""
        checker = cls()
        start = len(events) - 1
        while start > 0 and events[start].type not in ("turn/start", "turn/end"):
            start -= 1
        for event in events[max(start, 0) :]:
            checker.fold(event)
        if checker.open_turn is None:
            # Calls outside any open turn are damage (a garbled turn/start line), not a crash
            # the loop can repair: no result could be appended to them inside a turn. The
            # projection answers them as interrupted; the writer is not held to them.
            checker.open_calls = set()
        return checker

    def fold(self, event: Event) -> None:
        """Update the state with an event already on the log."""
        self.last_seq = event.seq
        kind = event.type
        if kind == "turn/start":
            self.open_turn = event.turn
        elif kind == "turn/end":
            self.open_turn = None
        elif kind == "message/assistant":
            calls = event.data.get("tool_calls") or ()
            self.open_calls = {str(c.get("id")) for c in calls if isinstance(c, dict)}
        elif kind == "tool/result":
            self.open_calls.discard(event.data.get("call_id"))
        elif kind == "message/user":
            # Only a damaged log has a user message after unanswered calls (`validate` refuses
            # one): the projection answers them "interrupted" there, so nothing is left open.
            self.open_calls = set()

    def check(self, event: Event) -> None:
        """Raise InvariantViolation if appending `event` breaks a rule; else fold it."""
        self.validate(event)
        self.fold(event)

    def validate(self, event: Event) -> None:
        """Raise InvariantViolation if appending `event` would break a rule; change nothing."""
        if event.seq != self.last_seq + 1:
            self._fail(event, f"seq must be {self.last_seq + 1}")
        if event.seq == 0:
            if event.type != "session/start":
                self._fail(event, "the first event must be session/start")
        elif event.type == "session/start":
            self._fail(event, "session/start may only be the first event")
        elif event.type == "turn/start":
            if self.open_turn is not None:
                self._fail(event, f"turn {self.open_turn} is still open; turns do not nest")
        elif self.open_turn is None:
            self._fail(event, "every event after session/start must sit inside an open turn")
        elif event.turn != self.open_turn:
            self._fail(event, f"event claims turn {event.turn} inside turn {self.open_turn}")
        if event.type == "turn/start" and type(event.turn) is not int:
            self._fail(event, "turn/start must carry its turn number")
        if event.type in _ANSWERS and event.data.get("call_id") not in self.open_calls:
            self._fail(
                event, f"{event.type} must answer an open call of the latest assistant message"
            )
        if event.type in ("message/assistant", "message/user") and self.open_calls:
            self._fail(event, f"calls {sorted(self.open_calls)} must be answered first")
        if event.type == "turn/end" and self.open_calls:
            self._fail(event, f"turn ends with unanswered calls {sorted(self.open_calls)}")

    @staticmethod
    def _fail(event: Event, rule: str) -> None:
        raise InvariantViolation(f"dev invariant broken by seq {event.seq} ({event.type}): {rule}")
