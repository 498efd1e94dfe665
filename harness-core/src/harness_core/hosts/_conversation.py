"""The conversation as every host shows it: messages, each tool call paired with its result.

`Conversation.apply(event)` folds one session's events in seq order and says what changed,
so a host renders changes instead of re-deriving anything: the terminal prints a line, the
web host pushes an update, the ACP bridge sends a notification. A fix here fixes them all.

Like the model's message projection, the fold tolerates what a crash leaves behind: a result
that answers no open call is ignored, and calls left open when a turn ends (or when the next
message arrives) are closed as errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

if TYPE_CHECKING:
    from ..log import Event

__all__ = [
    "Change",
    "ChangeKind",
    "Conversation",
    "Entry",
    "RowState",
    "ToolRow",
    "TurnState",
    "approval_note",
    "compaction_line",
]

RowState = Literal["running", "ok", "error"]
ChangeKind = Literal[
    "session",
    "turn_started",
    "user",
    "assistant",
    "approval",
    "row_finished",
    "turn_ended",
    "compacted",
    "other",
]
_UNANSWERED: Final = "no result: the turn ended before the call returned"


@dataclass(slots=True)
class ToolRow:
    """One tool call and, once it returned, its result."""

    call_id: str
    name: str
    arguments: str  # raw, as the model sent it
    state: RowState = "running"
    text: str | None = None  # the text the model saw
    data: Any = None  # structured result data for hosts
    result_seq: int | None = None
    approval: dict[str, Any] | None = None  # its tool/approval data, once decided


@dataclass(slots=True)
class Entry:
    """A user or assistant message, with the assistant's tool calls as rows."""

    role: Literal["user", "assistant"]
    seq: int
    turn: int | None
    text: str
    reasoning: str | None = None
    rows: list[ToolRow] = field(default_factory=list)


@dataclass(slots=True)
class TurnState:
    """The open turn (or None), and how the latest finished turn ended."""

    open: int | None = None
    last: int | None = None
    status: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """What one event changed: a new entry, a finished row, a turn boundary, or nothing."""

    kind: ChangeKind
    event: Event
    entry: Entry | None = None
    row: ToolRow | None = None


class Conversation:
    """One session's conversation, folded event by event.

    With `keep` False it remembers only the calls still open: a host that renders each change
    as it comes (the terminal, the ACP bridge live) has no use for finished entries, and a
    long session's would otherwise stay in memory for as long as the host runs.
    """

    __slots__ = ("_keep", "_open", "entries", "session", "turn")

    def __init__(self, *, keep: bool = True) -> None:
        self._keep = keep
        self.entries: list[Entry] = []
        self.turn = TurnState()
        self.session: dict[str, Any] = {}  # session/start data
        self._open: dict[str, ToolRow] = {}  # calls of the latest assistant message

    @property
    def running(self) -> list[ToolRow]:
        """Calls still waiting for their result."""
        return list(self._open.values())

    def apply(self, event: Event) -> Change:
        kind = event.type
        data = event.data
        if kind == "tool/result":
            row = self._open.pop(str(data.get("call_id")), None)
            if row is None:
                return Change("other", event)
            _finish(row, event)
            return Change("row_finished", event, row=row)
        if kind == "tool/approval":
            row = self._open.get(str(data.get("call_id")))
            if row is None:
                return Change("other", event)
            row.approval = dict(data)
            return Change("approval", event, row=row)
        if kind == "message/assistant":
            return Change("assistant", event, entry=self._assistant(event))
        if kind == "message/user":
            self._close_open()
            entry = Entry("user", event.seq, event.turn, str(data.get("text", "")))
            if self._keep:
                self.entries.append(entry)
            return Change("user", event, entry=entry)
        return self._structure(event)

    def _structure(self, event: Event) -> Change:
        if event.type == "turn/start":
            self.turn.open = event.turn
            return Change("turn_started", event)
        if event.type == "turn/end":
            self._close_open()
            self.turn = TurnState(
                None, event.turn, str(event.data.get("status")), event.data.get("error")
            )
            return Change("turn_ended", event)
        if event.type == "session/start":
            self.session = dict(event.data)
            return Change("session", event)
        if event.type == "context/compact":
            return Change("compacted", event)
        return Change("other", event)

    def _assistant(self, event: Event) -> Entry:
        self._close_open()
        data = event.data
        reasoning = data.get("reasoning_content")
        entry = Entry(
            "assistant",
            event.seq,
            event.turn,
            str(data.get("text") or ""),
            reasoning if isinstance(reasoning, str) else None,
        )
        for call in data.get("tool_calls") or ():
            if isinstance(call, dict):
                row = _row(call)
                entry.rows.append(row)
                self._open[row.call_id] = row
        if self._keep:
            self.entries.append(entry)
        return entry

    def _close_open(self) -> None:
        """Calls nobody answered (a crash, a torn log) show as errors, never as running."""
        for row in self._open.values():
            row.state, row.text = "error", _UNANSWERED
        self._open.clear()


def _row(call: dict[str, Any]) -> ToolRow:
    return ToolRow(str(call.get("id")), str(call.get("name")), str(call.get("arguments")))


def _finish(row: ToolRow, result: Event) -> None:
    data = result.data
    row.state = "error" if data.get("is_error") else "ok"
    row.text, row.data, row.result_seq = str(data.get("text", "")), data.get("data"), result.seq


def call_row(
    call_id: str, made: Event, approval: Event | None, result: Event | None, *, running: bool
) -> ToolRow | None:
    """The row of call `call_id` made by the assistant message `made`, approved by
    `approval` and answered by `result` (each one the conversation folded for it), as
    `Conversation` would hold it; `running`: whether the call is still open. None when `made`
    makes no such call."""
    calls = made.data.get("tool_calls") or ()
    found = [c for c in calls if isinstance(c, dict) and str(c.get("id")) == call_id]
    if not found:
        return None
    row = _row(found[-1])  # the last of a repeated id, as the conversation keeps it
    if approval is not None:
        row.approval = dict(approval.data)
    if result is not None:
        _finish(row, result)
    elif not running:
        row.state, row.text = "error", _UNANSWERED
    return row


def approval_note(row: ToolRow) -> str | None:
    """Who let the call run, when a person did: `allowed by the user` (`... for this
    session`). A refusal says so in the result's own text; the policy's allow is the default
    and says nothing."""
    approval = row.approval or {}
    if approval.get("decision") != "allow" or approval.get("by") != "user":
        return None
    return "allowed by the user" + (
        " for this session" if approval.get("scope") == "session" else ""
    )


def compaction_line(event: Event) -> str:
    """`context compacted: N events summarized`: how every host shows a compaction."""
    data = event.data
    try:
        count = int(data["last_seq"]) - int(data["first_seq"]) + 1
    except (KeyError, TypeError, ValueError):
        return "context compacted"
    return f"context compacted: {count} events summarized"
