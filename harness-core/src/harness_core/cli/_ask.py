"""Approval questions on a terminal: asked by the loop's thread, answered on the main thread.

The agent runs on the event loop's thread (`_turns.loop_thread`); `input()` and Ctrl-C belong
to the main thread. So the loop's `Asker` puts each question on a queue and waits; the main
thread, which is waiting for the turn anyway, takes the question, asks it, and hands the
answer back. Ctrl-C while a question is open cancels the turn (the call is answered
"interrupted") and leaves the question unanswered.
"""

from __future__ import annotations

import queue
import sys
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Final, TextIO

import anyio
from anyio.from_thread import BlockingPortal

from ..hosts import visible
from ..loop import Answer, ApprovalRequest

__all__ = ["Questions", "ask_terminal"]

CHOICES: Final[dict[str, Answer]] = {
    "y": "once",
    "yes": "once",
    "a": "session",
    "always": "session",
    "n": "deny",
    "no": "deny",
}
PROMPT: Final = "Allow? [y] yes, once  [a] always, for this session  [n] no: "
HIDDEN_NOTE: Final = (
    "  (it holds invisible or reordering characters, shown as \\uXXXX; \\\\ is one backslash)"
)


@dataclass(eq=False)
class _Question:
    request: ApprovalRequest
    answered: anyio.Event
    answer: Answer = "deny"
    abandoned: bool = False  # the turn was cancelled while it waited: do not ask it


@dataclass
class Questions:
    """The queue between the loop's `ask` and the main thread's `serve`."""

    _queue: queue.Queue[_Question | None] = field(default_factory=queue.Queue)

    async def ask(self, request: ApprovalRequest) -> Answer:
        """The agent's Asker (on the loop's thread): wait until the main thread answers."""
        question = _Question(request, anyio.Event())
        self._queue.put(question)
        try:
            await question.answered.wait()
        finally:
            question.abandoned = not question.answered.is_set()
        return question.answer

    def serve(
        self,
        turn: Future[Any],
        portal: BlockingPortal,
        ask: Callable[[ApprovalRequest], Answer],
        interrupted: type[BaseException],
    ) -> None:
        """On the main thread, until `turn` is done: ask each question with `ask`.

        `ask` raising `interrupted` (Ctrl-C at the question) leaves it unanswered: the turn,
        which the signal handler cancelled, ends the wait.
        """
        turn.add_done_callback(lambda _: self._queue.put(None))
        while (question := self._queue.get()) is not None:
            if question.abandoned:
                continue
            try:
                question.answer = ask(question.request)
            except interrupted:
                continue
            portal.call(question.answered.set)


def ask_terminal(request: ApprovalRequest, out: TextIO) -> Answer:
    """Print the question on `out` and read the answer from stdin; end of input is a no."""
    # Escaped, not cleaned: a control or bidi character left out or left to the terminal
    # would make the question read differently from the call that runs.
    summary = visible(request.summary)
    detail = None if request.detail is None else visible(request.detail)
    lines = [f"harness: {request.tool} wants to run: {summary}"]
    if detail is not None:
        lines += [f"  {line}" for line in detail.split("\n")]
    if summary != request.summary or detail != request.detail:
        lines.append(HIDDEN_NOTE)
    out.write("\n".join(lines) + "\n")
    while True:
        out.write(PROMPT)
        out.flush()
        try:
            reply = sys.stdin.readline()
        except UnicodeDecodeError:
            reply = "?\n"
        if not reply:  # end of input: nobody is there to say yes
            out.write("\n")
            return "deny"
        answer = CHOICES.get(reply.strip().lower())
        if answer is not None:
            return answer
        out.write("Type y, a or n.\n")
