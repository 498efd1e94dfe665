"""Tail queries: the newest event of some types, read backwards from the end of the file.

The cost depends on how far back the answer is, not on the session's length, which is what
the plan strip and the web snapshot need on every refresh.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import BinaryIO

from ._envelope import TYPE_PREFIX, EnvelopeError, Event, decode_line
from ._open import open_regular

__all__ = ["find_latest", "last_event", "last_event_in"]

# Reads start small (a line is usually a few kB) and double, so a listing of a thousand
# sessions reads a few kB of each, while a long line still costs O(log n) reads.
_FIRST_BLOCK = 4 * 1024
_MAX_BLOCK = 1024 * 1024


def find_latest(path: Path, types: Collection[str]) -> Event | None:
    """The newest well-formed event whose type is in `types` (or is `types`, a str), or None."""
    # A bare str is one type name, not a collection of characters to test membership in.
    types = frozenset((types,) if isinstance(types, str) else types)
    with os.fdopen(open_regular(path), "rb") as handle:
        for line in _lines_backwards(handle):
            match = TYPE_PREFIX.match(line)
            # Lines this project wrote name their type in the first bytes: skip the others
            # without parsing their payload. Anything else is parsed in full.
            if match is not None and b"\\" not in match[2] and match[2].decode() not in types:
                continue
            try:
                event = decode_line(line)
            except EnvelopeError:
                continue
            if event.type in types:
                return event
    return None


def last_event(path: Path) -> Event | None:
    """The newest well-formed event of any type."""
    with os.fdopen(open_regular(path), "rb") as handle:
        return last_event_in(handle)


def last_event_in(handle: BinaryIO) -> Event | None:
    """`last_event` of a file already open (and checked to be a regular file)."""
    for line in _lines_backwards(handle):
        try:
            return decode_line(line)
        except EnvelopeError:
            continue
    return None


def _lines_backwards(handle: BinaryIO) -> Iterator[bytes]:
    """Complete lines, newest first; bytes after the last newline (a torn tail) are ignored."""
    end = _last_newline(handle)
    carry = b""
    block = _FIRST_BLOCK
    while end > 0:
        start = max(0, end - block)
        block = min(block * 2, _MAX_BLOCK)
        handle.seek(start)
        lines = (handle.read(end - start) + carry).split(b"\n")
        end = start
        # The first piece may start mid-line unless the block reached the start of the file.
        carry = lines.pop(0) if start > 0 else b""
        for line in reversed(lines):
            if line:
                yield line


def _last_newline(handle: BinaryIO) -> int:
    """The offset of the file's last newline byte, or 0 when it has none."""
    end = handle.seek(0, 2)
    block = _FIRST_BLOCK
    while end > 0:
        start = max(0, end - block)
        block = min(block * 2, _MAX_BLOCK)
        handle.seek(start)
        found = handle.read(end - start).rfind(b"\n")
        if found >= 0:
            return start + found
        end = start
    return 0
