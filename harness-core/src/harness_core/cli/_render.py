"""The live terminal display: streamed text, one line per tool call, and pinned strips.

A rich `Live` region sits at the bottom of the output while a turn runs. It holds what is
still changing: the assistant's unfinished line, the calls that are running, and the strips
plugins pin (the todo plugin's plan). Everything final (complete lines, ✓/✗ call lines) is
printed above it and scrolls away normally. Strips are folded from the events of the session
being driven.

Model text is wrapped in `Text` objects, never parsed as markup, so `[bold]` in an answer is
shown as written, and every line has passed the hosts' sanitizer first.
"""

from __future__ import annotations

import sys
from typing import Literal

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.text import Text

from .. import secret
from ..hosts import (
    Change,
    StripLine,
    ToolRow,
    approval_note,
    clean,
    compaction_line,
    visible,
)
from ..hosts._present import call_label
from ..log import Event, SessionLog
from ..loop import Answer, ApprovalRequest, TurnOutcome
from ..tools import ToolRegistry
from ._ask import ask_terminal
from ._pinned import Pinned
from ._plain import (
    NEST,
    RESUMED,
    LineBuffer,
    Sessions,
    StripFactory,
    outcome_line,
    prompt_lines,
    text_lines,
    tool_line,
)

__all__ = ["LiveView", "strip_text"]


def strip_text(line: StripLine) -> Text:
    """One pinned line as rich `Text`: each run sanitized, never parsed as markup."""
    text = Text()
    for part in line:
        text.append(clean(part.text), style=part.style)
    return text


class LiveView:
    """Renders a session's turns on a terminal."""

    def __init__(
        self,
        tools: ToolRegistry,
        strips: StripFactory,
        *,
        echo_prompt: bool,
        console: Console | None = None,
    ) -> None:
        self._tools = tools
        self._echo = echo_prompt
        self.console = console or Console(highlight=False)
        self._sessions = Sessions()
        self._pinned = Pinned(strips)
        self._live: Live | None = None
        self._text = LineBuffer()
        self._reasoning = LineBuffer()
        self._streamed = False

    # -- TurnView --------------------------------------------------------------------------

    def bind(self, session: SessionLog, *, replay: bool = True) -> None:
        self._sessions.main = session
        self._pinned.bind(session.history() if replay else ())

    def resumed(self) -> None:
        lines = [strip_text(line) for line in self._pinned.lines()]
        if lines:
            lines[0].append(f"  {RESUMED}", style="dim")
            self.console.print(Group(*lines))
            self.console.print()

    def turn_started(self) -> None:
        self._streamed = False
        self._start_live()

    def ask(self, request: ApprovalRequest) -> Answer:
        # The live region is cleared while the question is open, so the question and the
        # answer read as plain lines, then redrawn below them.
        live = self._live
        if live is not None:
            live.transient = True
            live.stop()
        try:
            return ask_terminal(request, sys.stderr)
        finally:
            if live is not None:
                self._start_live()

    def _start_live(self) -> None:
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
        change, nested = self._sessions.apply(session, event)
        if not nested:
            self._pinned.apply(event)
        if change.kind == "user" and not nested and self._echo and change.entry is not None:
            self._print_lines(prompt_lines(change.entry.text), style="bold")
        elif change.kind == "assistant" and not nested:
            self._assistant(change)
        elif change.kind == "row_finished":
            self._result(change, nested)
        elif change.kind == "compacted":
            self._print_lines([compaction_line(change.event)], style="dim")
        self._refresh()

    def turn_finished(self, outcome: TurnOutcome, *, report: bool) -> None:
        self._print_lines(self._reasoning.flush(), style="dim italic")
        self._print_lines(self._text.flush())
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

    # -- changes ---------------------------------------------------------------------------

    def _assistant(self, change: Change) -> None:
        assert change.entry is not None
        self._print_lines(self._reasoning.flush(), style="dim italic")
        if self._streamed:
            self._print_lines(self._text.flush())
        else:
            self._print_lines(text_lines(change.entry.text))
        self._streamed = False

    def _result(self, change: Change, nested: bool) -> None:
        assert change.row is not None
        line = tool_line(
            self._tools, self._label(change.row), change.event.data, approval_note(change.row)
        )
        text = Text(NEST if nested else "")
        text.append(line[0], style="red" if line[0] == "✗" else "green")
        text.append(line[1:])
        self._print(text)

    # -- drawing ---------------------------------------------------------------------------

    def _region(self) -> RenderableType:
        parts: list[RenderableType] = []
        redact = secret.current().redact  # a value shows once whole, as [redacted]
        if self._reasoning.partial.strip():
            parts.append(Text(redact(self._reasoning.partial), style="dim italic"))
        if self._text.partial.strip():
            parts.append(Text(redact(self._text.partial)))
        parts += [
            Text(f"{NEST if nested else ''}⋯ {self._label(row)}", style="dim")
            for row, nested in self._sessions.running()
        ]
        pinned = self._pinned.lines()
        if pinned:
            if parts:
                parts.append(Text(""))
            parts += [strip_text(line) for line in pinned]
        return Group(*parts)

    def _label(self, row: ToolRow) -> str:
        # Escaped: the row shows while the approval question is asked, and must read as it runs.
        return visible(call_label(self._tools, row.name, row.arguments))

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._region(), refresh=True)

    def _print_lines(self, lines: list[str], style: str = "") -> None:
        # Whole lines, so a secret streamed in pieces is redacted too (harness_core.secret).
        redact = secret.current().redact
        for line in lines:
            self._print(Text(redact(line), style=style))

    def _print(self, text: Text) -> None:
        # While live, console.print lands above the region; otherwise it is a plain print.
        self.console.print(text, soft_wrap=False)
