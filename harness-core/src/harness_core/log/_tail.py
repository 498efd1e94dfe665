"""Tail queries: the newest event of some types, read backwards from the end of the file.

The cost depends on how far back the answer is, not on the session's length, which is what
a query such as `harness todos ID` needs to answer at once on a long session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import BinaryIO

import orjson

from ._envelope import EnvelopeError, Event, decode_line
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
    markers = _type_markers(types)
    with os.fdopen(open_regular(path), "rb") as handle:
        for line in _marked_lines_backwards(handle, markers):
            try:
                event = decode_line(line)
            except EnvelopeError:
                continue
            if event.type in types:  # the marker may sit in a payload: the envelope decides
                return event
    return None


def _type_markers(types: frozenset[str]) -> tuple[bytes, ...]:
    """Each type's name as a line spells it: `"todo/write"` as this log writes it (UTF-8), and
    with ASCII escapes as Python's json writes it. A match is a candidate line, no more."""
    return tuple({orjson.dumps(t) for t in types} | {json.dumps(t).encode() for t in types})


def _marked_lines_backwards(handle: BinaryIO, markers: tuple[bytes, ...]) -> Iterator[bytes]:
    """Complete lines that contain one of `markers`, newest first, torn tail ignored.

    The plan query reads back over a whole session when the plan was written long ago: each
    block is searched with `rfind` in C, and only lines holding a marker are split out and
    parsed, so the scan runs at the speed of reading the file.
    """
    end = _last_newline(handle)
    window = b""  # bytes [start, end): whole lines, after a partial first one if start > 0
    start = end
    block = _FIRST_BLOCK
    while start > 0:
        begin = max(0, start - block)
        block = min(block * 2, _MAX_BLOCK)
        handle.seek(begin)
        window = handle.read(start - begin) + window
        start = begin
        # Lines after the window's first newline are whole; before it, a line may go on into
        # the previous block, unless the window reaches the start of the file.
        whole_from = 0
        if start > 0:
            whole_from = window.find(b"\n") + 1
            if whole_from == 0:
                continue  # a line longer than the window: read further back first
        limit = len(window)
        while (found := max(window.rfind(m, whole_from, limit) for m in markers)) >= 0:
            line_start = window.rfind(b"\n", 0, found) + 1
            line_end = window.find(b"\n", found)
            yield window[line_start : line_end if line_end >= 0 else len(window)]
            limit = line_start
        window = window[: max(whole_from - 1, 0)]  # the partial line, completed next round


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
