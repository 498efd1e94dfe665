"""Output without a terminal: plain lines (pipes, logs, `harness show`) and JSON Lines (`--json`).

Plain lines carry no control codes at all: model text is cleaned, and nothing is redrawn, so
a pinned strip (the todo plugin's plan) appears as a block each time it changes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TextIO

import orjson

from .. import secret
from ..hosts import (
    Change,
    Conversation,
    TerminalStrip,
    ToolRow,
    approval_note,
    clean,
    compaction_line,
    one_line,
    visible,
)
from ..hosts._present import call_label, failed, result_suffix
from ..log import Event, SessionLog
from ..loop import Answer, ApprovalRequest, TurnOutcome
from ..tools import ToolRegistry
from ._ask import ask_terminal
from ._pinned import Pinned

__all__ = [
    "JsonLinesView",
    "LineBuffer",
    "PlainView",
    "Sessions",
    "outcome_line",
    "prompt_lines",
    "text_lines",
    "tool_line",
]

RESULT_LINES: Final = 12  # tool output lines a transcript shows per call
NEST: Final = "  │ "  # prefix for a subagent's lines
RESUMED: Final = "standing, from the last turn"  # a resumed session's pinned strip says so

StripFactory = Callable[[], Sequence[TerminalStrip]]


class Sessions:
    """The conversation projection of each session a view shows (the driven one, subagents)."""

    __slots__ = ("_by_session", "main")

    def __init__(self) -> None:
        self.main: SessionLog | None = None
        self._by_session: dict[int, Conversation] = {}

    def apply(self, session: SessionLog, event: Event) -> tuple[Change, bool]:
        """What `event` changed in its session's conversation, and whether it is nested."""
        conversation = self._by_session.setdefault(id(session), Conversation(keep=False))
        return conversation.apply(event), self.main is not None and session is not self.main

    def running(self) -> list[tuple[ToolRow, bool]]:
        """Every call still waiting for its result, and whether it is a subagent's."""
        main = id(self.main)
        return [
            (row, key != main)
            for key, conversation in self._by_session.items()
            for row in conversation.running
        ]


class LineBuffer:
    """Collects streamed chunks and hands out complete lines (right-stripped, cleaned)."""

    __slots__ = ("partial",)

    def __init__(self) -> None:
        self.partial = ""

    def feed(self, chunk: str) -> list[str]:
        *lines, self.partial = (self.partial + clean(chunk)).split("\n")
        return [line.rstrip() for line in lines]

    def flush(self) -> list[str]:
        """The rest, as lines (nothing when only whitespace is left)."""
        rest, self.partial = self.partial, ""
        return [rest.rstrip()] if rest.strip() else []


def outcome_line(outcome: TurnOutcome) -> str | None:
    """How a turn that did not complete ended, for the person watching; None when it did."""
    if outcome.status == "completed":
        return None
    if outcome.status == "cancelled":
        return "turn cancelled"
    return f"turn ended: {outcome.status}" + (
        f": {one_line(outcome.error)}" if outcome.error else ""
    )


def text_lines(text: str) -> list[str]:
    return [line.rstrip() for line in clean(text).strip("\n").split("\n")] if text.strip() else []


def prompt_lines(text: str) -> list[str]:
    """The user's prompt as the transcript shows it: `› first line`, the rest indented."""
    lines = text_lines(text)
    return [f"› {lines[0]}", *(f"  {line}" for line in lines[1:])] if lines else ["›"]


class PlainView:
    """One line per thing that happened, written as it happens."""

    def __init__(
        self,
        tools: ToolRegistry,
        out: TextIO,
        strips: StripFactory,
        *,
        transcript: bool = False,
    ) -> None:
        self._tools = tools
        self._out = out
        self._transcript = transcript  # `harness show`: headers, turn marks, tool output
        self._sessions = Sessions()
        self._pinned = Pinned(strips)
        self._text = LineBuffer()
        self._streamed = False

    # -- TurnView --------------------------------------------------------------------------

    def bind(self, session: SessionLog, *, replay: bool = True) -> None:
        self._sessions.main = session
        self._pinned.bind(session.history() if replay else ())

    def resumed(self) -> None:
        lines = self._pinned.plain()
        if lines:
            self._write([f"{lines[0]} ({RESUMED})", *lines[1:]])

    def turn_started(self) -> None:
        self._streamed = False

    def on_delta(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        if kind == "text":
            self._streamed = True
            self._write(self._text.feed(chunk))

    def turn_finished(self, outcome: TurnOutcome, *, report: bool) -> None:
        self._write(self._text.flush())
        line = outcome_line(outcome)
        if report and line:
            self._write([line])

    def note(self, text: str) -> None:
        self._write(text.split("\n"))

    def ask(self, request: ApprovalRequest) -> Answer:
        self._out.flush()
        return ask_terminal(request, sys.stderr)

    def on_event(self, session: SessionLog, event: Event) -> None:
        change, nested = self._sessions.apply(session, event)
        handler = _HANDLERS.get(change.kind)
        if handler is not None:
            handler(self, change, nested)
        # A strip that changed is printed as a block; a new turn clearing it prints nothing.
        if not nested and self._pinned.apply(event) and event.type != "turn/start":
            self._write(self._pinned.plain())

    # -- changes ---------------------------------------------------------------------------

    def _session_start(self, change: Change, nested: bool) -> None:
        if not self._transcript or nested:
            return
        data = change.event.data
        parts = [f"session {data.get('id')}", f"created {data.get('created')}"]
        if data.get("cwd"):
            parts.append(f"cwd {data['cwd']}")
        if data.get("parent_session"):
            parts.append(f"subagent of {data['parent_session']}")
        self._write([one_line(" · ".join(parts), width=2000)])

    def _turn_start(self, change: Change, nested: bool) -> None:
        if self._transcript and not nested:
            self._write(["", f"── turn {change.event.turn} ──"])

    def _user(self, change: Change, nested: bool) -> None:
        if not nested and change.entry is not None:
            self._write(prompt_lines(change.entry.text))

    def _assistant(self, change: Change, nested: bool) -> None:
        if nested or change.entry is None:
            return
        streamed = self._streamed and not self._transcript
        self._write(self._text.flush() if streamed else text_lines(change.entry.text))
        self._streamed = False

    def _result(self, change: Change, nested: bool) -> None:
        row = change.row
        assert row is not None
        # Escaped as the approval question shows it: the line must read as the call ran.
        label = visible(call_label(self._tools, row.name, row.arguments))
        line = tool_line(self._tools, label, change.event.data, approval_note(row))
        self._write([NEST + line if nested else line])
        if self._transcript and not nested:
            self._write(_result_text(change.event.data))

    def _compacted(self, change: Change, nested: bool) -> None:
        line = compaction_line(change.event)
        self._write([NEST + line if nested else line])

    def _turn_end(self, change: Change, nested: bool) -> None:
        if not self._transcript or nested:
            return
        event = change.event
        status = event.data.get("status")
        error = event.data.get("error")
        detail = f": {one_line(str(error))}" if error and status != "cancelled" else ""
        self._write([f"── turn {event.turn} {status}{detail} ──"])

    def _write(self, lines: list[str]) -> None:
        # Whole lines, so a secret streamed in pieces is redacted too (harness_core.secret).
        redact = secret.current().redact
        for line in lines:
            self._out.write(redact(line) + "\n")
        self._out.flush()


def tool_line(
    tools: ToolRegistry, label: str, data: dict[str, Any], note: str | None = None
) -> str:
    """`✓ $ ls  exit 0`, `✗ $ false  exit 1` or `✗ todo_write  Error: ...`: the tool's own
    call and result lines, and `(allowed by the user)` when a person approved the call."""
    mark = "✗" if failed(data) else "✓"
    suffix = result_suffix(tools, str(data.get("tool_name")), data)
    return f"{mark} {label}" + (f"  {suffix}" if suffix else "") + (f"  ({note})" if note else "")


def _result_text(data: dict[str, Any]) -> list[str]:
    lines = text_lines(str(data.get("text", "")))
    shown = [f"    {line}" for line in lines[:RESULT_LINES]]
    if len(lines) > RESULT_LINES:
        shown.append(
            f"    … {len(lines) - RESULT_LINES} more lines (`harness events` has them all)"
        )
    return shown


_HANDLERS: Final[dict[str, Callable[[PlainView, Change, bool], None]]] = {
    "session": PlainView._session_start,
    "turn_started": PlainView._turn_start,
    "user": PlainView._user,
    "assistant": PlainView._assistant,
    "row_finished": PlainView._result,
    "turn_ended": PlainView._turn_end,
    "compacted": PlainView._compacted,
}


class JsonLinesView:
    """`run --json`: every event appended to the session, as its on-disk envelope, at once."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._main: SessionLog | None = None

    def bind(self, session: SessionLog, *, replay: bool = True) -> None:
        self._main = session

    def resumed(self) -> None:
        pass

    def turn_started(self) -> None:
        pass

    def on_delta(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        pass

    def on_event(self, session: SessionLog, event: Event) -> None:
        # A subagent's events live in its own session (`harness events CHILD` prints them);
        # its id is in the subagent tool's result data.
        if session is self._main:
            self._out.write(orjson.dumps(event.to_json()).decode() + "\n")
            self._out.flush()

    def turn_finished(self, outcome: TurnOutcome, *, report: bool) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def ask(self, request: ApprovalRequest) -> Answer:
        return ask_terminal(request, sys.stderr)  # stdout carries JSON Lines only
