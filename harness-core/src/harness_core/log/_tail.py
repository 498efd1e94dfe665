"""Tail queries: the newest event of some types, read backwards from the end of the file.

The cost depends on how far back the answer is, not on the session's length, which is what
a query such as `harness todos ID` needs to answer at once on a long session; with the
writer's tail index (`_index.py`) it does not depend on how far back the answer is either.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from pathlib import Path

import orjson

from ._envelope import EnvelopeError, Event, decode_line
from ._index import TailIndex, load_index
from ._open import open_regular

__all__ = ["caught_up", "find_latest", "last_event", "last_event_in"]

# A writer reads at most this much after its index's end to go on with it (`caught_up`).
_MAX_CATCH_UP = 16 * 1024 * 1024

# Reads start small (a line is usually a few kB) and double, so a listing of a thousand
# sessions reads a few kB of each, while a long line still costs O(log n) reads.
_FIRST_BLOCK = 4 * 1024
_MAX_BLOCK = 1024 * 1024

# A run of whole lines, newest first: `buffer[lo:hi]`, the lines joined by newlines.
Run = tuple[bytearray, int, int]


def find_latest(path: Path, types: Collection[str]) -> Event | None:
    """The newest well-formed event whose type is in `types` (or is `types`, a str), or None.

    It reads back from the end over what the session's tail index (`_index.py`) does not
    cover, then takes the index's answer once the log confirms it, so the cost does not grow
    with how far back the answer is either.
    """
    # A bare str is one type name, not a collection of characters to test membership in.
    types = frozenset((types,) if isinstance(types, str) else types)
    markers = _type_markers(types)
    fd = open_regular(path)
    try:
        index = load_index(path)
        if index is not None and not _describes(fd, index):
            index = None  # a log edited, cut or replaced since: the scan answers alone
        found = _scan(fd, types, markers, None, index.size if index is not None else 0)
        if found is not None or index is None:
            return found
        return _from_index(fd, index, types, markers)
    finally:
        os.close(fd)


def _describes(fd: int, index: TailIndex) -> bool:
    """Whether the log still holds what `index` covers: a whole line ends where the index
    ends, and it is the event the index names."""
    if index.size > os.fstat(fd).st_size:
        return False
    last = _event_ending_at(fd, index.size)
    return last is not None and last.seq == index.seq


def caught_up(fd: int, index: TailIndex, end: int) -> TailIndex | None:
    """`index` extended over the whole lines of `[index.size, end)`: what a writer appended
    after its last save, before a crash. None when the index does not describe the file, when a
    line there is not an event, or when there is too much to read (a writer then indexes from
    where it opens the file)."""
    if not 0 < end - index.size <= _MAX_CATCH_UP or not _describes(fd, index):
        return None
    data = os.pread(fd, end - index.size, index.size)
    if len(data) != end - index.size or not data.endswith(b"\n"):
        return None
    latest, seq, offset = dict(index.latest), index.seq, index.size
    for line in data.split(b"\n")[:-1]:
        event = _decoded(line)
        if event is None:
            return None
        latest[event.type], seq = (event.seq, offset), event.seq
        offset += len(line) + 1
    return TailIndex(index.start, end, seq, latest)


def _from_index(
    fd: int, index: TailIndex, types: frozenset[str], markers: tuple[bytes, ...]
) -> Event | None:
    """The index's answer for `types`, checked against the log; else the scan's of what the
    index covers."""
    newest = index.newest(types)
    if newest is None:
        return _scan(fd, types, markers, index.start)  # none since the writer's start
    seq, offset = newest
    event = _event_at(fd, offset)
    if event is not None and event.seq == seq and event.type in types:
        return event
    return _scan(fd, types, markers, index.size)


def _scan(
    fd: int, types: frozenset[str], markers: tuple[bytes, ...], end: int | None, stop: int = 0
) -> Event | None:
    """The newest event of `types` in the whole lines of `[stop, end)` (`end` None: to the
    end of the file, a torn tail left out)."""
    for line in _marked_lines_backwards(fd, markers, end, stop):
        try:
            event = decode_line(line)
        except EnvelopeError:
            continue
        if event.type in types:  # the marker may sit in a payload: the envelope decides
            return event
    return None


def _event_ending_at(fd: int, end: int) -> Event | None:
    """The event on the line that ends (with its newline) at byte `end`, or None."""
    if end <= 0 or os.pread(fd, 1, end - 1) != b"\n":
        return None
    for buffer, lo, hi in _runs_backwards(fd, end):
        start = buffer.rfind(b"\n", lo, hi) + 1 or lo
        return _decoded(bytes(buffer[start:hi]))
    return None


def _event_at(fd: int, offset: int) -> Event | None:
    """The event on the line that starts at byte `offset`, or None."""
    if offset > 0 and os.pread(fd, 1, offset - 1) != b"\n":
        return None  # not the start of a line
    chunks: list[bytes] = []
    block = _FIRST_BLOCK
    while chunk := os.pread(fd, block, offset):
        cut = chunk.find(b"\n")
        if cut >= 0:
            chunks.append(chunk[:cut])
            return _decoded(b"".join(chunks))
        chunks.append(chunk)
        offset += len(chunk)
        block = min(block * 2, _MAX_BLOCK)
    return None  # no newline before the end: a torn line


def _decoded(line: bytes) -> Event | None:
    try:
        return decode_line(line)
    except EnvelopeError:
        return None


def _type_markers(types: frozenset[str]) -> tuple[bytes, ...]:
    """Each type's name as a line spells it: `"todo/write"` as this log writes it (UTF-8), and
    with ASCII escapes as Python's json writes it. A match is a candidate line, no more."""
    return tuple({orjson.dumps(t) for t in types} | {json.dumps(t).encode() for t in types})


def _marked_lines_backwards(
    fd: int, markers: tuple[bytes, ...], end: int | None = None, stop: int = 0
) -> Iterator[bytes]:
    """Complete lines of `[stop, end)` that contain one of `markers`, newest first, a torn
    tail ignored.

    Without an index, the plan query reads back over a whole session when the plan was
    written long ago: each run is searched with `rfind` in C, and only lines holding a marker
    are copied out and parsed, so the scan runs at the speed of reading the file.
    """
    for buffer, lo, hi in _runs_backwards(fd, end, stop):
        limit = hi
        while (found := max(buffer.rfind(m, lo, limit) for m in markers)) >= 0:
            start = buffer.rfind(b"\n", lo, found) + 1 or lo
            line_end = buffer.find(b"\n", found, hi)
            yield bytes(buffer[start : line_end if line_end >= 0 else hi])
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


def _runs_backwards(fd: int, end: int | None = None, stop: int = 0) -> Iterator[Run]:
    """The complete lines of `[stop, end)` in runs, newest first (`end` None: the end of the
    file; `stop` is the start of a line); bytes after the last newline (a torn tail) are left
    out. One buffer is reused for every run (a fresh block per read would cost
    more in page faults than the search itself), so a caller is done with a run before it
    asks for the next."""
    start = os.fstat(fd).st_size if end is None else end
    buffer = bytearray()
    carry = 0  # buffer[:carry]: the end of a line whose start is further back
    block = _FIRST_BLOCK
    torn = True  # until the last newline is read, the bytes read are a torn tail
    while start > stop:
        size = min(block, start - stop)
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
        lo = buffer.find(b"\n", 0, hi) + 1 if start > stop else 0
        if lo == 0 and start > stop:
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
