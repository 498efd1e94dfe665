"""Output without a terminal: plain lines (pipes, logs, `harness show`) and JSON Lines (`--json`).

Plain lines carry no control codes at all: model text is cleaned, and nothing is redrawn, so
the plan appears as a block each time the model writes it.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TextIO

import orjson

from ..log import Event, SessionLog
from ..loop import TurnOutcome
from ..tools import ToolRegistry
from ._present import call_label, clean, one_line, result_suffix
from ._strip import PlanStrip, Todo, plain_strip

__all__ = [
    "JsonLinesView",
    "LineBuffer",
    "PlainView",
    "PlanWrites",
    "outcome_line",
    "prompt_lines",
    "text_lines",
    "tool_line",
]

RESULT_LINES: Final = 12  # tool output lines a transcript shows per call
NEST: Final = "  │ "  # prefix for a subagent's lines


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

    def __init__(self, tools: ToolRegistry, out: TextIO, *, transcript: bool = False) -> None:
        self._tools = tools
        self._out = out
        self._transcript = transcript  # `harness show`: headers, turn marks, tool output
        self._main: SessionLog | None = None
        self._strip = PlanStrip()
        self._text = LineBuffer()
        self._streamed = False
        self._labels: dict[str, str] = {}
        self._plan_writes = PlanWrites()

    # -- TurnView --------------------------------------------------------------------------

    def bind(self, session: SessionLog) -> None:
        self._main = session

    def standing_plan(self, todos: tuple[Todo, ...]) -> None:
        if todos:
            lines = plain_strip(todos)
            self._write([f"{lines[0]} (standing, from the last turn)", *lines[1:]])

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

    def on_event(self, session: SessionLog, event: Event) -> None:
        nested = self._main is not None and session is not self._main
        if event.type == "todo/write":
            self._plan_writes.wrote(session)
        if event.type == "tool/result":
            self._result(event, nested, plan=self._plan_writes.take(session))
            return
        handler = _HANDLERS.get(event.type)
        if handler is not None:
            handler(self, event, nested)

    # -- events ----------------------------------------------------------------------------

    def _session_start(self, event: Event, nested: bool) -> None:
        if not self._transcript or nested:
            return
        data = event.data
        parts = [f"session {data.get('id')}", f"created {data.get('created')}"]
        if data.get("cwd"):
            parts.append(f"cwd {data['cwd']}")
        if data.get("parent_session"):
            parts.append(f"subagent of {data['parent_session']}")
        self._write([" · ".join(parts)])

    def _turn_start(self, event: Event, nested: bool) -> None:
        if nested:
            return
        self._strip.apply(event)
        if self._transcript:
            self._write(["", f"── turn {event.turn} ──"])

    def _user(self, event: Event, nested: bool) -> None:
        if nested:
            return
        self._write(prompt_lines(str(event.data.get("text", ""))))

    def _assistant(self, event: Event, nested: bool) -> None:
        data = event.data
        if not nested:
            streamed = self._streamed and not self._transcript
            self._write(self._text.flush() if streamed else text_lines(str(data.get("text") or "")))
            self._streamed = False
        for call in data.get("tool_calls") or ():
            if isinstance(call, dict):
                label = call_label(self._tools, str(call.get("name")), str(call.get("arguments")))
                self._labels[str(call.get("id"))] = label

    def _result(self, event: Event, nested: bool, *, plan: bool) -> None:
        data = event.data
        label = self._labels.pop(str(data.get("call_id")), str(data.get("tool_name")))
        line = tool_line(self._tools, label, data, plan=plan)
        self._write([NEST + line if nested else line])
        if self._transcript and not nested:
            self._write(_result_text(data))

    def _todo(self, event: Event, nested: bool) -> None:
        if nested:
            return
        self._strip.apply(event)
        self._write(plain_strip(self._strip.todos) or ["Plan · (empty)"])

    def _turn_end(self, event: Event, nested: bool) -> None:
        if not self._transcript or nested:
            return
        status = event.data.get("status")
        error = event.data.get("error")
        detail = f": {one_line(str(error))}" if error and status != "cancelled" else ""
        self._write([f"── turn {event.turn} {status}{detail} ──"])

    def _write(self, lines: list[str]) -> None:
        for line in lines:
            self._out.write(line + "\n")
        self._out.flush()


def tool_line(tools: ToolRegistry, label: str, data: dict[str, Any], *, plan: bool) -> str:
    """`✓ $ ls  exit 0` or `✗ todo_write  Error: ...`.

    `plan`: the call wrote the todo list, which the plan strip presents, so the tool's own
    rendering of its result (a checklist) would only say it twice.
    """
    mark = "✗" if data.get("is_error") else "✓"
    suffix = None if plan else result_suffix(tools, str(data.get("tool_name")), data)
    return f"{mark} {label}" + (f"  {suffix}" if suffix else "")


class PlanWrites:
    """Which sessions just had their plan written: the next result there is the writer's.

    A plan-writing tool is exclusive (it runs alone), so its `todo/write` is followed by its
    own `tool/result` before any other call of that session reports.
    """

    __slots__ = ("_sessions",)

    def __init__(self) -> None:
        self._sessions: set[int] = set()

    def wrote(self, session: SessionLog) -> None:
        self._sessions.add(id(session))

    def take(self, session: SessionLog) -> bool:
        """Whether the result now arriving on `session` belongs to a plan write."""
        if id(session) in self._sessions:
            self._sessions.discard(id(session))
            return True
        return False


def _result_text(data: dict[str, Any]) -> list[str]:
    lines = text_lines(str(data.get("text", "")))
    shown = [f"    {line}" for line in lines[:RESULT_LINES]]
    if len(lines) > RESULT_LINES:
        shown.append(
            f"    … {len(lines) - RESULT_LINES} more lines (`harness events` has them all)"
        )
    return shown


_HANDLERS: Final = {
    "session/start": PlainView._session_start,
    "turn/start": PlainView._turn_start,
    "message/user": PlainView._user,
    "message/assistant": PlainView._assistant,
    "todo/write": PlainView._todo,
    "turn/end": PlainView._turn_end,
}


class JsonLinesView:
    """`run --json`: every event appended to the session, as its on-disk envelope, at once."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._main: SessionLog | None = None

    def bind(self, session: SessionLog) -> None:
        self._main = session

    def standing_plan(self, todos: tuple[Todo, ...]) -> None:
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
