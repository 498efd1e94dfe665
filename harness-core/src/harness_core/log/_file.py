"""A session as a JSON Lines file: open and replay, write and sync, torn-tail recovery.

Durability model: `append` writes the line to the file at once (so a reader, or the page cache
after a `kill -9`, already has it) and `commit` fdatasyncs, after which the events survive
power loss. The loop commits at step boundaries. The writer holds an exclusive `flock` and
keeps the tail index (`_index.py`). What is the same on every store is `SessionLog`
(`_session.py`). See docs/log.md.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import suppress
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ._envelope import EnvelopeError, decode_line
from ._index import SAVE_EVERY, TailIndex, forget_index, load_index, save_index
from ._lock import lock_exclusive
from ._open import NotASession, open_regular
from ._session import (
    EventSink,
    LogWriteError,
    ReadOnlyLog,
    SessionLog,
    _unknown_types,
    logger,
    parse_lines,
)
from ._tail import caught_up
from ._types import EventTypeRegistry

if TYPE_CHECKING:
    from pydantic import BaseModel

__all__ = [
    "EventSink",
    "FileLog",
    "LogWriteError",
    "ReadOnlyLog",
    "SessionLog",
    "fsync_dir",
    "parse_lines",
    "read_lines",
]

_READ_BLOCK = 1024 * 1024  # `read_lines` parses and hands over a session this much at a time


def read_lines(path: Path, registry: EventTypeRegistry) -> Iterator[bytes]:
    """Each well-formed envelope line of a session as stored, oldest first, newline excluded.

    For a reader that prints the events (`harness events`): the lines this version wrote are
    already the encoding it would print, so nothing is encoded again, and the file is read a
    block at a time, so memory stays at one block however long the session is. The checks and
    warnings are those of opening the session for reading: each skipped line is named, then
    each unknown type; bytes after the last newline (a writer may be mid-line) are left out.
    """
    seen: set[str] = set()
    with os.fdopen(open_regular(path), "rb") as handle:
        block = handle.read(_READ_BLOCK)
        _check_header(path, block, writable=False)
        carry, expected, number = b"", 0, 1
        while block:
            carry += block
            cut = carry.rfind(b"\n") + 1
            if cut:
                whole = carry[:cut].split(b"\n")
                whole.pop()  # the empty string after the final newline
                lines: list[bytes] = []
                events, problems = parse_lines(whole, expected, number, raw=lines)
                for problem in problems:
                    logger.warning("%s: %s", path.name, problem)
                if events:
                    expected = events[-1].seq + 1
                    seen.update(e.type for e in events)
                number += len(whole)
                yield from lines
                carry = carry[cut:]  # a line that goes on in the next block, or a torn tail
            block = handle.read(_READ_BLOCK)
    for problem in _unknown_types(seen, registry):
        logger.warning("%s: %s", path.name, problem)


class FileLog(SessionLog):
    """A session's JSON Lines file, open for writing (locked) or reading."""

    def __init__(self, path: Path, registry: EventTypeRegistry, fd: int | None) -> None:
        super().__init__(path.stem, registry, writable=fd is not None)
        self.path = path
        self._fd = fd
        self._size = 0  # bytes of complete lines; the file never holds a partial line past it
        # The tail index a writer keeps (`_index.py`): the newest line of each type it knows
        # of, from `_index_start` on, and how far the saved index reaches.
        self._latest: dict[str, tuple[int, int]] = {}
        self._index_start = self._index_saved = 0

    def describe(self) -> str:
        return self.path.name

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: Path,
        registry: EventTypeRegistry,
        start: BaseModel,
        *,
        observer: EventSink | None = None,
    ) -> FileLog:
        """Create a new session file (exclusively), lock it and commit its session/start.

        `observer` sees every append of this log, session/start included. The file is private
        to its owner (0600). If the session/start cannot be written (a full disk, a payload
        JSON cannot carry), the file is removed again: a failed create never leaves an empty
        session behind.
        """
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            lock_exclusive(fd, path)
            fsync_dir(path.parent)
            log = cls(path, registry, fd)
            forget_index(path)  # a session of the same name before this one
            if observer is not None:
                log.listeners.append(partial(observer, log))
            log.append("session/start", start)
            log.commit()
        except BaseException:
            os.close(fd)
            with suppress(OSError):
                path.unlink()
            raise
        return log

    @classmethod
    def open(
        cls,
        path: Path,
        registry: EventTypeRegistry,
        *,
        writable: bool = True,
        observer: EventSink | None = None,
    ) -> FileLog:
        """Open and replay a session. A writer takes the lock and moves a torn tail aside.

        `observer` sees every later append of a writer (a reader appends nothing). Only a
        regular file is opened (never through a symlink, see `_open.py`); a writer also
        refuses a file whose first line is not a valid session/start, before it writes
        anything. A reader refuses an empty file and shows what it can of any other.
        """
        fd = open_regular(path, os.O_RDWR | os.O_APPEND if writable else os.O_RDONLY)
        try:
            if writable:
                lock_exclusive(fd, path)
            # Line by line, not one read of the whole file: a fresh buffer the size of a long
            # session costs more in page faults and copies than parsing it.
            with os.fdopen(fd, "rb", closefd=False) as handle:
                first = handle.readline()
                _check_header(path, first, writable=writable)
                log = cls(path, registry, fd if writable else None)
                log._load(_WholeLines(handle, first))
        except BaseException:
            os.close(fd)
            raise
        if not writable:
            os.close(fd)
        if observer is not None and writable:
            log.listeners.append(partial(observer, log))
        return log

    def _load(self, whole: _WholeLines) -> None:
        self.replay(whole)
        self._size, self._lines = whole.size, whole.count
        if whole.torn:
            if self._fd is not None:
                self._move_torn_tail_aside(whole.torn, whole.size)
            else:
                message = f"ignoring {len(whole.torn)} bytes after the last newline"
                self.problems.insert(0, message)
        if self._fd is not None:
            self._adopt_index()

    def _adopt_index(self) -> None:
        """Go on with the saved tail index when it describes the file as it is, or as it was
        at the last save of a writer that crashed; else index from here on (a reader then
        scans back past `_index_start` for anything older)."""
        self._index_start = self._index_saved = self._size
        index = load_index(self.path)
        if index is None or self._last_seq < 0 or self._fd is None:
            return
        if index.size < self._size:  # appended after the last save: a writer that crashed
            index = caught_up(self._fd, index, self._size)
        if index is not None and (index.size, index.seq) == (self._size, self._last_seq):
            self._index_start, self._latest = index.start, index.latest

    def _move_torn_tail_aside(self, torn: bytes, good: int) -> None:
        """Save the bytes after the last newline next to the session, then cut them off."""
        assert self._fd is not None
        aside = _create_aside(self.path, good, torn)
        os.ftruncate(self._fd, good)
        os.fsync(self._fd)
        message = f"torn last line ({len(torn)} bytes) moved aside to {aside.name}"
        logger.warning("%s: %s", self.path.name, message)
        self.problems.insert(0, message)

    # -- the store's side of SessionLog -----------------------------------------------------

    def persist(self, line: bytes, seq: int, type: str) -> None:
        fd = self._fd
        assert fd is not None
        try:
            written = os.write(fd, line)
            while written < len(line):
                # A short write (the disk filled up mid-line): write the rest, which either
                # completes the line or fails with the reason (ENOSPC, EFBIG), as libc does.
                more = os.write(fd, line[written:])
                if not more:
                    raise OSError(f"short write: {written} of {len(line)} bytes")
                written += more
        except OSError as exc:
            # Never leave a partial line for the next append to glue onto.
            os.ftruncate(fd, self._size)
            raise LogWriteError(f"could not append to {self.path}: {exc}") from exc
        self._latest[type] = (seq, self._size)
        self._size += written

    def make_durable(self) -> None:
        assert self._fd is not None
        _datasync(self._fd)
        if self._size - self._index_saved >= SAVE_EVERY:
            self._save_index()

    def stored_blocks(self) -> Iterator[list[bytes]]:
        with os.fdopen(open_regular(self.path), "rb") as handle:
            yield from _WholeLines(handle, handle.readline()).blocks()

    def unread_lines(self) -> list[bytes]:
        with os.fdopen(open_regular(self.path), "rb") as handle:
            handle.seek(self._size)
            chunk = handle.read()
        good = chunk.rfind(b"\n") + 1
        if not good:
            return []
        lines = chunk[:good].split(b"\n")
        lines.pop()  # the empty string after the final newline
        self._size += good
        return lines

    def release(self) -> None:
        assert self._fd is not None
        try:
            if self._size != self._index_saved:
                self._save_index()
        finally:
            os.close(self._fd)
            self._fd = None

    def _save_index(self) -> None:
        """Save the tail index up to here: only after a commit, so it covers durable lines."""
        index = TailIndex(self._index_start, self._size, self._last_seq, self._latest)
        save_index(self.path, index)
        self._index_saved = self._size


class _WholeLines:
    """A file's lines as it is read, each with its newline, starting with `first` (read
    already); a last line without one (a writer mid-line, or a crash) is kept apart as `torn`.
    `size` and `count` are of the whole lines, once they are all read.

    The lines come a block at a time (`readlines`), chained in C: a generator resumed per line
    would cost more than the check for a torn line, which only the last block needs.
    """

    __slots__ = ("count", "first", "handle", "size", "torn")

    def __init__(self, handle: BinaryIO, first: bytes) -> None:
        self.handle = handle
        self.first = first
        self.count = self.size = 0
        self.torn = b""

    def __iter__(self) -> Iterator[bytes]:
        return chain.from_iterable(self.blocks())

    def blocks(self) -> Iterator[list[bytes]]:
        lines = [self.first]
        while lines:
            if not lines[-1].endswith(b"\n"):  # only the file's last line can lack one
                self.torn = lines.pop()
            self.count += len(lines)
            self.size += sum(map(len, lines))
            yield lines
            # A host reads sessions in worker threads: let its event loop's thread have the
            # interpreter between blocks (the switch interval would leave it waiting).
            time.sleep(0)
            lines = self.handle.readlines(_READ_BLOCK)


def refuse_empty(path: Path) -> None:
    """NotASession for an empty file (a symlink or FIFO is refused where it is opened)."""
    if os.path.isfile(path) and not os.path.islink(path) and os.path.getsize(path) == 0:
        _check_header(path, b"", writable=False)


def _check_header(path: Path, buf: bytes, *, writable: bool) -> None:
    """Refuse an empty file, and for a writer anything not starting with a session/start."""
    if not buf:
        action = "nothing was written to it" if writable else "it has no events to show"
        raise NotASession(
            f"session {path.stem} is an empty file, not a session; {action}", "an empty file"
        )
    if not writable:
        return  # a reader shows what it can; problems are reported line by line
    problem = _header_problem(buf)
    if problem is not None:
        raise NotASession(
            f"session {path.stem} is not a session file: {problem}; harness continues only "
            "a file that starts with a session/start line, and wrote nothing to it",
            problem,
        )


def _header_problem(buf: bytes) -> str | None:
    end = buf.find(b"\n")
    if end < 0:
        return "it has no complete first line"
    try:
        header = decode_line(buf[:end])
    except EnvelopeError as exc:
        return f"its first line is not an event ({exc})"
    if header.type != "session/start" or header.seq != 0:
        return f"its first line is {header.type!r} at seq {header.seq}, not session/start at 0"
    from pydantic import ValidationError  # writers only: a reader never imports pydantic

    from ._events import SessionStart

    try:
        SessionStart.model_validate(header.data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "data"
        return f"its session/start is invalid ({where}: {first['msg']})"
    return None


def _datasync(fd: int) -> None:
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _create_aside(path: Path, offset: int, data: bytes) -> Path:
    """Write `data` to a new file beside `path`; never overwrite an earlier one."""
    for attempt in range(1000):
        suffix = f".torn-{offset}" + (f"-{attempt}" if attempt else "")
        aside = path.with_name(path.name + suffix)
        try:
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            continue
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)
        return aside
    raise FileExistsError(f"too many torn-tail files beside {path}")
