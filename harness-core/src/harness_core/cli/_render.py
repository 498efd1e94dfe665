"""The live terminal display: streamed text, one line per tool call, and the plan strip.

A rich `Live` region sits at the bottom of the output while a turn runs. It holds what is
still changing: the assistant's unfinished line, the calls that are running, and the plan
strip. Everything final (complete lines, ✓/✗ call lines) is printed above it and scrolls
away normally. The strip is folded from `todo/write` and `turn/start` events of the session
being driven (ARCHITECTURE §6): a new turn clears it until the model writes again.

Model text is wrapped in `Text` objects, never parsed as markup, so `[bold]` in an answer is
shown as written; `Text` also drops control codes.
"""

from __future__ import annotations

from typing import Final, Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from ..log import Event, SessionLog
from ..loop import TurnOutcome
from ..tools import ToolRegistry
from ._plain import (
    NEST,
    LineBuffer,
    PlanWrites,
    outcome_line,
    prompt_lines,
    text_lines,
    tool_line,
)
from ._present import call_label
from ._strip import PlanStrip, Row, Todo, strip_header, strip_rows

__all__ = ["LiveView", "strip_renderable"]

ROW_STYLES: Final = {
    "completed": ("green", "dim"),
    "in_progress": ("bold yellow", "bold yellow"),
    "pending": ("", ""),
    None: ("dim", "dim"),
}


def strip_renderable(todos: tuple[Todo, ...], *, note: str = "") -> RenderableType:
    """The strip: a header with the count, then one row a task (collapsed when long)."""
    header = Text(strip_header(todos), style="bold")
    if note:
        header.append(f"  {note}", style="dim")
    return Group(header, *(_row(row) for row in strip_rows(todos)))


def _row(row: Row) -> Text:
    mark_style, text_style = ROW_STYLES[row.status]
    line = Text("  ")
    line.append(row.mark, style=mark_style)
    line.append(" ")
    line.append(row.text, style=text_style)
    return line


class LiveView:
    """Renders a session's turns on a terminal."""

    def __init__(
        self, tools: ToolRegistry, *, echo_prompt: bool, console: Console | None = None
    ) -> None:
        self._tools = tools
        self._echo = echo_prompt
        self.console = console or Console(highlight=False)
        self._main: SessionLog | None = None
        self._live: Live | None = None
        self._strip = PlanStrip()
        self._text = LineBuffer()
        self._reasoning = LineBuffer()
        self._streamed = False
        # call id -> (label, nested): the calls still waiting for their result
        self._running: dict[str, tuple[str, bool]] = {}
        self._plan_writes = PlanWrites()

    # -- TurnView --------------------------------------------------------------------------

    def bind(self, session: SessionLog) -> None:
        self._main = session

    def standing_plan(self, todos: tuple[Todo, ...]) -> None:
        if todos:
            self.console.print(strip_renderable(todos, note="standing, from the last turn"))
            self.console.print()

    def turn_started(self) -> None:
        self._streamed = False
        self._live = Live(
            self._region(),
            console=self.console,
            auto_refresh=False,  # redrawn on each event and delta: no timer thread, no flicker
            transient=False,  # the final strip stays on screen as part of the transcript
            redirect_stdout=True,
            redirect_stderr=True,
        )
        self._live.start(refresh=True)

    def on_delta(self, kind: Literal["text", "reasoning"], chunk: str) -> None:
        if kind == "text":
            if not self._streamed:
                self._print_lines(self._reasoning.flush(), style="dim italic")
            self._streamed = True
            self._print_lines(self._text.feed(chunk))
        else:
            self._print_lines(self._reasoning.feed(chunk), style="dim italic")
        self._refresh()

    def on_event(self, session: SessionLog, event: Event) -> None:
        nested = self._main is not None and session is not self._main
        kind = event.type
        if kind == "todo/write":
            self._plan_writes.wrote(session)
        if kind in ("turn/start", "todo/write") and not nested:
            self._strip.apply(event)
        elif kind == "message/user" and not nested and self._echo:
            self._print_lines(prompt_lines(str(event.data.get("text", ""))), style="bold")
        elif kind == "message/assistant":
            self._assistant(event, nested)
        elif kind == "tool/result":
            self._result(event, nested, plan=self._plan_writes.take(session))
        self._refresh()

    def turn_finished(self, outcome: TurnOutcome, *, report: bool) -> None:
        self._print_lines(self._reasoning.flush(), style="dim italic")
        self._print_lines(self._text.flush())
        self._running.clear()
        if self._live is not None:
            self._live.update(self._region(), refresh=True)
            self._live.stop()
            self._live = None
        line = outcome_line(outcome)
        if report and line:
            self.console.print(Text(line, style="red" if outcome.status == "error" else "yellow"))

    def note(self, text: str) -> None:
        # soft_wrap: a long command stays one line when copied, however the terminal wraps it.
        self.console.print(Text(text, style="dim"), soft_wrap=True)

    # -- events ----------------------------------------------------------------------------

    def _assistant(self, event: Event, nested: bool) -> None:
        data = event.data
        if not nested:
            self._print_lines(self._reasoning.flush(), style="dim italic")
            if self._streamed:
                self._print_lines(self._text.flush())
            else:
                self._print_lines(text_lines(str(data.get("text") or "")))
            self._streamed = False
        for call in data.get("tool_calls") or ():
            if isinstance(call, dict):
                label = call_label(self._tools, str(call.get("name")), str(call.get("arguments")))
                self._running[str(call.get("id"))] = (label, nested)

    def _result(self, event: Event, nested: bool, *, plan: bool) -> None:
        data = event.data
        label, _ = self._running.pop(str(data.get("call_id")), (str(data.get("tool_name")), nested))
        line = tool_line(self._tools, label, data, plan=plan)
        text = Text(NEST if nested else "")
        text.append(line[0], style="red" if data.get("is_error") else "green")
        text.append(line[1:])
        self._print(text)

    # -- drawing ---------------------------------------------------------------------------

    def _region(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._reasoning.partial.strip():
            parts.append(Text(self._reasoning.partial, style="dim italic"))
        if self._text.partial.strip():
            parts.append(Text(self._text.partial))
        parts += [
            Text(f"{NEST if nested else ''}⋯ {label}", style="dim")
            for label, nested in self._running.values()
        ]
        if self._strip.todos:
            if parts:
                parts.append(Text(""))
            parts.append(strip_renderable(self._strip.todos))
        return Group(*parts)

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._region(), refresh=True)

    def _print_lines(self, lines: list[str], style: str = "") -> None:
        for line in lines:
            self._print(Text(line, style=style))

    def _print(self, text: Text) -> None:
        # While live, console.print lands above the region; otherwise it is a plain print.
        self.console.print(text, soft_wrap=False)
