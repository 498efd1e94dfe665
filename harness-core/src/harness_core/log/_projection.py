"""The model's message history as a projection of the log's surface events.

`MessageProjection.apply` records a surface event in O(1) and the fold catches up on the next
read, so the loop never re-derives the whole history on a step and an append (the log's hot
write path) pays almost nothing for the projection; `derive_messages` is the same fold over a
fresh replay and is what the incremental form is checked against.

The fold also repairs what a crash can leave behind, so a provider never receives a broken
history: a tool call with no result gets a synthetic "interrupted" result adjacent to its
assistant message, and a result that answers no open call (a duplicate, or one for an older
assistant message) is dropped. Both are recorded in `problems`.

A `context/compact` event replaces the messages of events `first_seq..last_seq` with one user
message: `SUMMARY_HEADER`, the summary, then what plugins carry across the compaction (the
`carry` callback, asked once per compaction with the compaction event). Each message remembers
the seq of the event it came from (`_origins`, never decreasing), so the replaced span is found
by bisection; the fold builds new lists then, so a list a model already holds is never edited.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Container, Iterable, Sequence
from typing import Any, Final

from ._envelope import Event
from ._types import CORE_SURFACE

__all__ = [
    "INTERRUPTED_TEXT",
    "SUMMARY_HEADER",
    "Carry",
    "CompactionRange",
    "MessageProjection",
    "derive_messages",
]

INTERRUPTED_TEXT: Final = "Error: the tool call was interrupted before it returned a result."
SUMMARY_HEADER: Final = "[The earlier part of this session was compacted into this summary.]"

Message = dict[str, Any]
# The compaction event -> texts plugins carry across it (see harness_compaction_carry).
Carry = Callable[[Event], Sequence[str]]


class CompactionRange:
    """What a compaction keeping the last messages would replace: seqs and message count."""

    __slots__ = ("first_seq", "last_seq", "messages")

    def __init__(self, first_seq: int, last_seq: int, messages: int) -> None:
        self.first_seq = first_seq
        self.last_seq = last_seq
        self.messages = messages  # how many leading messages of the request it replaces

    @property
    def events(self) -> int:
        return self.last_seq - self.first_seq + 1


class MessageProjection:
    """Incrementally folded OpenAI-style chat messages, with the log's provider-neutral extras:
    `thinking` on an assistant message, `is_error` on a failed tool result (docs/log.md)."""

    __slots__ = (
        "_backlog",
        "_carry",
        "_messages",
        "_origins",
        "_pending",
        "_pending_seq",
        "_problems",
        "_surface",
    )

    def __init__(
        self, surface_types: Container[str] = CORE_SURFACE, carry: Carry | None = None
    ) -> None:
        self._surface = surface_types
        self._carry = carry
        self._backlog: list[Event] = []  # surface events recorded but not folded yet
        self._messages: list[Message] = []
        self._origins: list[int] = []  # the seq each message came from, never decreasing
        # Calls of the latest assistant message still waiting for a result, in call order.
        self._pending: dict[str, str] = {}
        self._pending_seq = 0  # the seq of that assistant message
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

    @property
    def pending_seq(self) -> int:
        """The seq of the assistant message whose calls `pending_calls` holds."""
        self.catch_up()
        return self._pending_seq

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

    def compaction_range(self, keep: int, through: int) -> CompactionRange | None:
        """The span a compaction keeping the last `keep` messages would replace, or None.

        `through` is the log's last seq: with nothing kept (`keep=0`) the span runs to it.
        The span starts after session/start (whose system prompt stays), so a newer
        compaction replaces an older one's summary too. The kept tail never starts with a
        tool result: the cut moves back to the assistant message that made the call. None
        while a call is open or when nothing before the tail is left to replace.
        """
        self.catch_up()
        if self._pending:
            return None
        origins, messages = self._origins, self._messages
        head = bisect_right(origins, 0)  # the session/start messages
        cut = max(head, len(messages) - keep)
        while head < cut < len(messages) and messages[cut]["role"] == "tool":
            cut -= 1
        if cut <= head:
            return None
        # Everything after session/start up to the kept tail, turn marks and plugin events
        # included: the span is a prefix of the log, whatever earlier compactions covered.
        last = origins[cut] - 1 if cut < len(messages) else through
        return CompactionRange(1, last, cut)

    def _fold(self, event: Event) -> None:
        kind = event.type
        data = event.data
        seq = event.seq
        try:
            if kind == "tool/result":
                self._apply_result(seq, data)
            elif kind == "message/assistant":
                self._close_pending()
                self._apply_assistant(seq, data)
            elif kind == "message/user":
                self._close_pending()
                self._add(seq, {"role": "user", "content": str(data["text"])})
            elif kind == "context/compact":
                self._close_pending()
                self._apply_compaction(event)
            elif kind == "session/start":
                # Only ever first on a log a writer kept; closing calls first keeps a stray one
                # in a damaged file from landing between a call and its results.
                self._close_pending()
                prompt = data.get("system_prompt")
                if prompt:
                    self._add(seq, {"role": "system", "content": prompt})
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            self._problems.append(f"seq {seq}: malformed {kind} payload skipped ({exc!r})")

    def _add(self, seq: int, message: Message) -> None:
        self._messages.append(message)
        self._origins.append(seq)

    def _apply_compaction(self, event: Event) -> None:
        data = event.data
        first, last = int(data["first_seq"]), int(data["last_seq"])
        parts = [SUMMARY_HEADER, str(data["summary"])]
        if self._carry is not None:
            parts += self._carry(event)
        summary = {"role": "user", "content": "\n\n".join(parts)}
        origins, messages = self._origins, self._messages
        start, end = bisect_left(origins, first), bisect_right(origins, last)
        # New lists, not edits: a model (the scripted one) may hold the old list as it was sent.
        self._messages = [*messages[:start], summary, *messages[end:]]
        self._origins = [*origins[:start], first, *origins[end:]]

    def _apply_assistant(self, seq: int, data: dict[str, Any]) -> None:
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
            self._pending_seq = seq
        reasoning = data.get("reasoning_content")
        if reasoning is not None:
            message["reasoning_content"] = reasoning
        thinking = data.get("thinking")
        if thinking:  # blocks with signatures, which a provider wants back as they came
            message["thinking"] = thinking
        self._add(seq, message)

    def _apply_result(self, seq: int, data: dict[str, Any]) -> None:
        # Read every field before consuming the call: a malformed result must leave the call
        # open (to be answered as interrupted), not silently unanswered.
        call_id = data["call_id"]
        message = {"role": "tool", "tool_call_id": call_id, "content": data["text"]}
        if data.get("is_error"):  # only when set: most results, and older readers, lack it
            message["is_error"] = True
        if self._pending.pop(call_id, None) is None:
            self._problems.append(f"seq {seq}: result for {call_id!r} answers no open call")
            return
        self._add(seq, message)

    def _close_pending(self) -> None:
        if self._pending:
            for call_id in self._pending:
                self._add(self._pending_seq, _interrupted(call_id))
            self._pending = {}


def _interrupted(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_TEXT, "is_error": True}


def derive_messages(
    events: Iterable[Event],
    surface_types: Container[str] = CORE_SURFACE,
    *,
    carry: Carry | None = None,
) -> list[Message]:
    """The message history a fresh replay of `events` produces (surface events only)."""
    projection = MessageProjection(surface_types, carry)
    projection.apply_all(events)
    return projection.request_messages()
