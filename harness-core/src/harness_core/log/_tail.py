"""Tail queries: the newest event of some types, read backwards from the end of the file.

The cost depends on how far back the answer is, not on the session's length, which is what
a query such as `harness todos ID` needs to answer at once on a long session.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from pathlib import Path

import orjson

from ._envelope import EnvelopeError, Event, decode_line
from ._open import open_regular

__all__ = ["find_latest", "last_event", "last_event_in"]

# Reads start small (a line is usually a few kB) and double, so a listing of a thousand
# sessions reads a few kB of each, while a long line still costs O(log n) reads.
_FIRST_BLOCK = 4 * 1024
_MAX_BLOCK = 1024 * 1024

# A run of whole lines, newest first: `buffer[lo:hi]`, the lines joined by newlines.
Run = tuple[bytearray, int, int]


def find_latest(path: Path, types: Collection[str]) -> Event | None:
    """The newest well-formed event whose type is in `types` (or is `types`, a str), or None."""
    # A bare str is one type name, not a collection of characters to test membership in.
    types = frozenset((types,) if isinstance(types, str) else types)
    markers = _type_markers(types)
    fd = open_regular(path)
    try:
        for line in _marked_lines_backwards(fd, markers):
            try:
                event = decode_line(line)
            except EnvelopeError:
                continue
            if event.type in types:  # the marker may sit in a payload: the envelope decides
                return event
    finally:
        os.close(fd)
    return None


def _type_markers(types: frozenset[str]) -> tuple[bytes, ...]:
    """Each type's name as a line spells it: `"todo/write"` as this log writes it (UTF-8), and
    with ASCII escapes as Python's json writes it. A match is a candidate line, no more."""
    return tuple({orjson.dumps(t) for t in types} | {json.dumps(t).encode() for t in types})


def _marked_lines_backwards(fd: int, markers: tuple[bytes, ...]) -> Iterator[bytes]:
    """Complete lines that contain one of `markers`, newest first, torn tail ignored.

    The plan query reads back over a whole session when the plan was written long ago: each
    run is searched with `rfind` in C, and only lines holding a marker are copied out and
    parsed, so the scan runs at the speed of reading the file.
    """
    for buffer, lo, hi in _runs_backwards(fd):
        limit = hi
        while (found := max(buffer.rfind(m, lo, limit) for m in markers)) >= 0:
            start = buffer.rfind(b"\n", lo, found) + 1 or lo
            end = buffer.find(b"\n", found, hi)
            yield bytes(buffer[start : end if end >= 0 else hi])
            limit = start


def last_event(path: Path) -> Event | None:
    """The newest well-formed event of any type."""
    fd = open_regular(path)
    try:
        return last_event_in(fd)
    finally:
        os.close(fd)


def last_event_in(fd: int) -> Event | None:
    """`last_event` of a file already open (and checked to be a regular file)."""
    for buffer, lo, hi in _runs_backwards(fd):
        end = hi
        while end >= lo:  # the run's lines, newest first, until one decodes
            start = buffer.rfind(b"\n", lo, end) + 1 or lo
            if start < end:
                try:
                    return decode_line(bytes(buffer[start:end]))
                except EnvelopeError:
                    pass
            end = start - 1
    return None


def _runs_backwards(fd: int) -> Iterator[Run]:
    """The file's complete lines in runs, newest first; bytes after the last newline (a torn
    tail) are left out. One buffer is reused for every run (a fresh block per read would cost
    more in page faults than the search itself), so a caller is done with a run before it
    asks for the next."""
    start = os.fstat(fd).st_size
    buffer = bytearray()
    carry = 0  # buffer[:carry]: the end of a line whose start is further back
    block = _FIRST_BLOCK
    torn = True  # until the last newline is read, the bytes read are a torn tail
    while start > 0:
        size = min(block, start)
        block = min(block * 2, _MAX_BLOCK)
        start -= size
        if not _prepend_block(fd, buffer, start, size, carry):
            return  # the file shrank while it was read: what is left of it is not a line
        hi = size + carry
        if torn:
            hi = buffer.rfind(b"\n", 0, hi)
            if hi < 0:
                carry = 0
                continue
            torn = False
        lo = buffer.find(b"\n", 0, hi) + 1 if start > 0 else 0
        if lo == 0 and start > 0:
            carry = hi  # a line longer than the buffer: read further back first
            continue
        yield buffer, lo, hi
        carry = max(lo - 1, 0)


def _prepend_block(fd: int, buffer: bytearray, offset: int, size: int, carry: int) -> bool:
    """Make `buffer` hold the file's `size` bytes at `offset`, then its first `carry` bytes."""
    if len(buffer) < size + carry:
        buffer.extend(bytearray(size + carry - len(buffer)))
    buffer[size : size + carry] = buffer[:carry]
    with memoryview(buffer) as view:
        return os.preadv(fd, [view[:size]], offset) == size
