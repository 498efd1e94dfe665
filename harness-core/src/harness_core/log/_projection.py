"""The model's message history as a projection of the log's surface events.

`MessageProjection.apply` records a surface event in O(1) and the fold catches up on the next
read, so the loop never re-derives the whole history on a step and an append (the log's hot
write path) pays almost nothing for the projection; `derive_messages` is the same fold over a
fresh replay and is what the incremental form is checked against.

The fold also repairs what a crash can leave behind, so a provider never receives a broken
history: a tool call with no result gets a synthetic "interrupted" result adjacent to its
assistant message, and a result that answers no open call (a duplicate, or one for an older
assistant message) is dropped. Both are recorded in `problems`.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import Any, Final

from ._envelope import Event
from ._types import CORE_SURFACE

__all__ = ["INTERRUPTED_TEXT", "MessageProjection", "derive_messages"]

INTERRUPTED_TEXT: Final = "Error: the tool call was interrupted before it returned a result."

Message = dict[str, Any]


class MessageProjection:
    """Incrementally folded OpenAI-style chat messages."""

    __slots__ = ("_backlog", "_messages", "_pending", "_problems", "_surface")

    def __init__(self, surface_types: Container[str] = CORE_SURFACE) -> None:
        self._surface = surface_types
        self._backlog: list[Event] = []  # surface events recorded but not folded yet
        self._messages: list[Message] = []
        # Calls of the latest assistant message still waiting for a result, in call order.
        self._pending: dict[str, str] = {}
        self._problems: list[str] = []

    @property
    def messages(self) -> list[Message]:
        """The folded history (open calls not yet answered; see `request_messages`)."""
        self.catch_up()
        return self._messages

    @property
    def problems(self) -> list[str]:
        self.catch_up()
        return self._problems

    @property
    def pending_calls(self) -> dict[str, str]:
        """call id -> tool name for calls of the latest assistant message without a result."""
        self.catch_up()
        return dict(self._pending)

    def apply(self, event: Event) -> None:
        if event.type in self._surface:
            self._backlog.append(event)

    def apply_all(self, events: Iterable[Event]) -> None:
        surface = self._surface
        self._backlog.extend(event for event in events if event.type in surface)

    def fold_all(self, events: Iterable[Event]) -> None:
        """Fold `events` now (bulk replay): the same result as apply_all then catch_up."""
        self.catch_up()
        surface = self._surface
        fold = self._fold
        for event in events:
            if event.type in surface:
                fold(event)

    def catch_up(self) -> None:
        """Fold every recorded event; each event is folded exactly once."""
        if self._backlog:
            backlog, self._backlog = self._backlog, []
            for event in backlog:
                self._fold(event)

    def request_messages(self) -> list[Message]:
        """What the model would be sent next: the history with every open call answered."""
        self.catch_up()
        if not self._pending:
            return self._messages
        return self._messages + [_interrupted(call_id) for call_id in self._pending]

    def _fold(self, event: Event) -> None:
        kind = event.type
        data = event.data
        try:
            if kind == "tool/result":
                self._apply_result(event.seq, data)
            elif kind == "message/assistant":
                self._close_pending()
                self._apply_assistant(data)
            elif kind == "message/user":
                self._close_pending()
                self._messages.append({"role": "user", "content": str(data["text"])})
            elif kind == "session/start":
                # Only ever first on a log a writer kept; closing calls first keeps a stray one
                # in a damaged file from landing between a call and its results.
                self._close_pending()
                prompt = data.get("system_prompt")
                if prompt:
                    self._messages.append({"role": "system", "content": prompt})
        except (KeyError, TypeError, AttributeError) as exc:
            self._problems.append(f"seq {event.seq}: malformed {kind} payload skipped ({exc!r})")

    def _apply_assistant(self, data: dict[str, Any]) -> None:
        message: Message = {"role": "assistant", "content": data.get("text") or ""}
        calls = data.get("tool_calls") or ()
        if calls:
            message["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": call["arguments"]},
                }
                for call in calls
            ]
            self._pending = {call["id"]: call["name"] for call in calls}
        reasoning = data.get("reasoning_content")
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        self._messages.append(message)

    def _apply_result(self, seq: int, data: dict[str, Any]) -> None:
        # Read every field before consuming the call: a malformed result must leave the call
        # open (to be answered as interrupted), not silently unanswered.
        call_id = data["call_id"]
        message = {"role": "tool", "tool_call_id": call_id, "content": data["text"]}
        if self._pending.pop(call_id, None) is None:
            self._problems.append(f"seq {seq}: result for {call_id!r} answers no open call")
            return
        self._messages.append(message)

    def _close_pending(self) -> None:
        if self._pending:
            self._messages.extend(_interrupted(call_id) for call_id in self._pending)
            self._pending = {}


def _interrupted(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_TEXT}


def derive_messages(
    events: Iterable[Event], surface_types: Container[str] = CORE_SURFACE
) -> list[Message]:
    """The message history a fresh replay of `events` produces (surface events only)."""
    projection = MessageProjection(surface_types)
    projection.apply_all(events)
    return projection.request_messages()
