"""The strips plugins pin under a terminal's output, folded from the session being driven.

The CLI holds no knowledge a plugin owns: the plan strip is the todo plugin's
(`harness_terminal_strip`). This module only feeds strips the session's events, exactly once
each, and turns their lines into plain text or rich `Text`, always through the sanitizer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from ..hosts import StripLine, TerminalStrip, clean
from ..log import Event

__all__ = ["Pinned", "plain_line"]

logger = logging.getLogger("harness.cli")


def plain_line(line: StripLine) -> str:
    return clean("".join(part.text for part in line))


class Pinned:
    """Every contributed strip of one session, fed that session's events in seq order."""

    __slots__ = ("_make", "_seq", "_strips")

    def __init__(self, make: Callable[[], Sequence[TerminalStrip]]) -> None:
        self._make = make
        self._strips: list[TerminalStrip] = []
        self._seq = -1

    def bind(self, events: Iterable[Event]) -> None:
        """Fresh strips, caught up with `events` (a resumed session's history)."""
        self._strips = list(self._make())
        self._seq = -1
        for event in events:
            self.apply(event)

    def apply(self, event: Event) -> bool:
        """Feed one event (each seq once); True when any strip changed."""
        if event.seq <= self._seq:
            return False
        self._seq = event.seq
        changed = False
        for strip in list(self._strips):
            try:
                changed = strip.apply(event) or changed
            except Exception:
                # A plugin's display bug must not end the turn: drop its strip, say so once.
                logger.exception("a terminal strip (%s) failed; it is hidden", type(strip).__name__)
                self._strips.remove(strip)
        return changed

    def lines(self) -> list[StripLine]:
        lines: list[StripLine] = []
        for strip in list(self._strips):
            try:
                lines += strip.lines()
            except Exception:
                logger.exception("a terminal strip (%s) failed; it is hidden", type(strip).__name__)
                self._strips.remove(strip)
        return lines

    def plain(self) -> list[str]:
        return [plain_line(line) for line in self.lines()]
