"""Running turns from a terminal: the event loop in a worker thread, the terminal in the main one.

The main thread keeps what only it can do well: the readline prompt of `chat` (readline is
used only on the main thread) and signals. The agent runs on an anyio blocking portal, whose
event loop lives as long as the command, so a model's HTTP connections survive from one chat
turn to the next. Ctrl-C during a turn cancels that turn's cancel scope: the loop ends it as
`cancelled` with every open call answered, and the prompt comes back. SIGTERM and SIGHUP
close the turn the same way and then end the command (status 143 or 129).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Final, Literal, Protocol

from anyio.from_thread import BlockingPortal, start_blocking_portal

from ..log import Event, LogWriteError, SessionLog
from ..loop import Answer, ApprovalRequest, TurnOutcome
from ..models import Model, ModelError
from ._app import CliError
from ._ask import Questions

if TYPE_CHECKING:
    from ..runtime import SessionRuntime
    from ._app import App

__all__ = ["TurnDriver", "TurnView", "choose_view", "loop_thread", "unconsumed_steps"]

_CANCELLING: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class TurnView(Protocol):
    """What a command shows while turns run: live (TTY), plain lines, or JSON Lines."""

    def bind(self, session: SessionLog, *, replay: bool = True) -> None:
        """The session the user drives; events of other sessions (subagents) are nested.

        Pinned strips catch up with the session's events so far, unless `replay` is False
        (a transcript that feeds every event itself).
        """

    def resumed(self) -> None:
        """Show what a resumed session's strips pin, before the new turn starts."""

    def turn_started(self) -> None: ...

    def on_event(self, session: SessionLog, event: Event) -> None: ...

    def on_delta(self, kind: Literal["text", "reasoning"], chunk: str) -> None: ...

    def turn_finished(self, outcome: TurnOutcome, *, report: bool) -> None:
        """The turn is over; `report` asks the view to say how a failed turn ended."""

    def note(self, text: str) -> None:
        """A line for the person at the terminal (resume hints); JSON output drops it."""

    def ask(self, request: ApprovalRequest) -> Answer:
        """Ask the person at the terminal whether a call may run (main thread only)."""


def choose_view(app: App, *, json_lines: bool, echo_prompt: bool) -> TurnView:
    """JSON Lines for scripts, the live display on a terminal, plain lines otherwise."""
    if json_lines:
        from ._plain import JsonLinesView

        return JsonLinesView(sys.stdout)
    if sys.stdout.isatty() and os.environ.get("TERM") != "dumb":
        from ._render import LiveView

        return LiveView(app.host.tools, app.host.hooks.terminal_strips, echo_prompt=echo_prompt)
    from ._plain import PlainView

    return PlainView(app.host.tools, sys.stdout, app.host.hooks.terminal_strips)


@contextmanager
def loop_thread(session: SessionRuntime) -> Iterator[BlockingPortal]:
    """The event loop the command's turns run on, in a worker thread; closes `session` after
    (its models and its writer).

    The models' clients (HTTP connections) belong to this loop, so they are closed on it.
    """
    with start_blocking_portal() as running:
        try:
            yield running
        finally:
            running.call(session.aclose)


class _Interrupted(Exception):
    """Ctrl-C (or SIGTERM, SIGHUP) while an approval question waits for its answer."""


class TurnDriver:
    """Runs one session's turns on the portal, with Ctrl-C cancelling the running turn.

    With `questions` (the agent's Asker queue, docs/security.md), the main thread asks the
    approval questions the turn raises while it waits for the turn.
    """

    def __init__(
        self,
        portal: BlockingPortal,
        session: SessionRuntime,
        view: TurnView,
        questions: Questions | None = None,
    ) -> None:
        self.portal = portal
        self.session = session
        self.view = view
        self.questions = questions
        self.stopped_by: int | None = None  # SIGTERM or SIGHUP: end the command after the turn
        self._asking = False

    def run(self, prompt: str, *, report: bool) -> TurnOutcome:
        """One turn, blocking the main thread until it ends (cancelled turns included).

        Raises CliError after the turn is closed when SIGTERM or SIGHUP stopped it: the
        command must end then, with the shell's 128 + signal status.
        """
        self.view.turn_started()
        outcome: TurnOutcome | None = None
        # The handlers go in before the turn starts, so no signal lands in between.
        with self._signals_cancel():
            try:
                turn = self.portal.start_task_soon(self.session.run, prompt)
                if self.questions is not None:
                    self.questions.serve(turn, self.portal, self._ask, _Interrupted)
                outcome = turn.result()
            except LogWriteError as exc:
                outcome = TurnOutcome("error", error=str(exc))
                raise CliError(self._not_saved(exc)) from exc
            finally:
                finished = outcome or TurnOutcome("cancelled", error="cancelled")
                self.view.turn_finished(finished, report=report)
        if self.stopped_by is not None:
            name = signal.Signals(self.stopped_by).name
            raise CliError(
                f"stopped by {name}: the turn was cancelled and the session keeps what it did",
                128 + self.stopped_by,
            )
        return finished

    def compact(self) -> int | None:
        """Compact the session by hand: the events summarized, or None when cancelled.

        Ctrl-C cancels it like a turn; a failure (the model's, or nothing to compact) is a
        CliError, and the log is as it was.
        """
        with self._signals_cancel():
            try:
                return self.portal.start_task_soon(self.session.compact).result()
            except ModelError as exc:  # NothingToCompact too
                raise CliError(f"nothing was compacted: {exc}") from exc

    def _ask(self, request: ApprovalRequest) -> Answer:
        self._asking = True
        try:
            return self.view.ask(request)
        finally:
            self._asking = False

    def _not_saved(self, exc: LogWriteError) -> str:
        """A full disk (or a failing one) mid-turn: say plainly what is lost and what is not."""
        log = self.session.log  # held for the whole command: what it appended is in it
        turn = log.next_turn - 1 if log is not None else "?"
        reason = exc.__cause__.strerror if isinstance(exc.__cause__, OSError) else None
        return (
            f"turn {turn} was not saved: the session log refused a write "
            f"({reason or exc}); anything shown above for this turn is not on the log. "
            f"Free some space; the next `harness run --session {self.session.id}` "
            "closes the turn as an error and continues"
        )

    @contextmanager
    def _signals_cancel(self) -> Iterator[None]:
        """Ctrl-C cancels the running turn; SIGTERM and SIGHUP cancel it and end the command.

        Without this, SIGTERM would kill the process on the spot: the turn would stay open in
        the log and a running command's process group would outlive it.
        """
        if threading.current_thread() is not threading.main_thread():
            yield  # only the main thread may set signal handlers (an embedding host's thread)
            return

        def on_signal(signum: int, frame: FrameType | None) -> None:
            if signum != signal.SIGINT:
                self.stopped_by = signum
            # On the event loop's thread; a Ctrl-C before the turn got going is remembered.
            self.portal.call(self.session.interrupt)
            if self._asking:
                raise _Interrupted  # out of the question's read, which would otherwise go on

        previous = {sig: signal.signal(sig, on_signal) for sig in _CANCELLING}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def unconsumed_steps(model: Model) -> int:
    """Steps a scripted model still holds after a run (a contract error, docs/loop.md)."""
    return model.remaining or 0
