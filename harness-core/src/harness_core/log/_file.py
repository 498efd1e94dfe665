"""A session's JSON Lines file: open and replay, append, commit, torn-tail recovery.

Durability model: `append` writes the line to the file at once (so a reader, or the page cache
after a `kill -9`, already has it) and `commit` fdatasyncs, after which the events survive
power loss. The loop commits at step boundaries. See docs/log.md.
"""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from functools import partial
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import orjson

from ..secret import current as current_secrets
from ._envelope import EnvelopeError, Event, decode_line, now_ts
from ._folds import Grants, Newest
from ._index import SAVE_EVERY, TailIndex, forget_index, load_index, save_index
from ._invariants import InvariantChecker, dev_mode
from ._lock import lock_exclusive
from ._open import NotASession, open_regular
from ._projection import MessageProjection
from ._tail import caught_up
from ._types import EventTypeRegistry

if TYPE_CHECKING:  # payload models arrive with the first append; reading never needs them
    from pydantic import BaseModel, TypeAdapter

__all__ = ["EventSink", "LogWriteError", "ReadOnlyLog", "SessionLog", "parse_lines", "read_lines"]

logger = logging.getLogger("harness.log")

_READ_BLOCK = 1024 * 1024  # `read_lines` parses and hands over a session this much at a time
_GRANTS = frozenset({"message/assistant", "tool/approval"})  # the events `Grants` folds

Listener = Callable[[Event], None]
# An observer of appends that also needs to know the session (hosts, the loop's on_event).
EventSink = Callable[["SessionLog", Event], None]


class ReadOnlyLog(RuntimeError):
    """An append on a log opened for reading."""


class LogWriteError(OSError):
    """The disk refused an append; the file was restored to its last complete line."""


def parse_lines(
    lines: Iterable[bytes],
    first_seq: int = 0,
    first_line: int = 1,
    *,
    raw: list[bytes] | None = None,
) -> tuple[list[Event], list[str]]:
    """Parse whole lines, each with or without its newline (JSON reads it as white space).

    `first_line` is the file line number of the first line, for the problems' messages.
    `raw`, when given, receives each accepted line as it was given.

    This is the replay hot path, inlined on purpose: it runs once per event on open, and the
    benchmark holds it to within 2x of bare `orjson.loads`. A line that is not a well-formed
    envelope, or whose seq does not advance, is kept on disk and skipped here with a problem.
    """
    events: list[Event] = []
    problems: list[str] = []
    loads = orjson.loads
    expected = first_seq
    for number, line in enumerate(lines, first_line):
        try:
            obj = loads(line)
        except orjson.JSONDecodeError:
            problems.append(f"line {number}: not JSON; skipped")
            continue
        if type(obj) is dict:
            seq = obj.get("seq")
            kind = obj.get("type")
            ts = obj.get("ts")
            data = obj.get("data")
            turn = obj.get("turn")
            if (
                type(seq) is int
                and seq >= expected
                and type(kind) is str
                and type(ts) is str
                and type(data) is dict
                and (turn is None or type(turn) is int)
            ):
                if seq != expected:
                    problems.append(f"line {number}: seq jumps from {expected - 1} to {seq}")
                events.append(Event(seq, kind, ts, data, turn))
                if raw is not None:
                    raw.append(line)
                expected = seq + 1
                continue
        problems.append(f"line {number}: not a well-formed envelope in sequence; skipped")
    return events, problems


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


def _unknown_types(types: set[str], registry: EventTypeRegistry) -> list[str]:
    unknown = types - set(registry.names())
    return [f"unknown event type {t!r} kept and skipped" for t in sorted(unknown)]


class SessionLog:
    """One session's event log, open for writing (locked) or reading.

    A reader holds every event (`events`). A writer holds none: only what its turns read
    (the message projection, the newest event of each type, the session's grants and its
    session/start), so its memory follows the model's history, not the session's length;
    anything older is read back from the file on demand (`history`).
    """

    def __init__(self, path: Path, registry: EventTypeRegistry, fd: int | None) -> None:
        self.path = path
        self.registry = registry
        self._fd = fd
        self._events: list[Event] | None = None if fd is not None else []
        self.problems: list[str] = []
        self.projection = MessageProjection(registry.surface, self._carried)
        self.newest = Newest()
        self.grants = Grants()
        self._carry: dict[int, list[str]] = {}  # compaction seq -> what plugins carry, until folded
        self.start: Event | None = None  # session/start
        self._last_seq = -1
        self.listeners: list[Listener] = []
        self.committed_seq = -1
        self._size = 0  # bytes of complete lines; the file never holds a partial line past it
        self._lines = 0  # complete lines read so far, so refresh reports file line numbers
        self._checker: InvariantChecker | None = None
        # The tail index a writer keeps (`_index.py`): the newest line of each type it knows
        # of, from `_index_start` on, and how far the saved index reaches.
        self._latest: dict[str, tuple[int, int]] = {}
        self._index_start = self._index_saved = 0

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        path: Path,
        registry: EventTypeRegistry,
        start: BaseModel,
        *,
        observer: EventSink | None = None,
    ) -> SessionLog:
        """Create a new session file (exclusively), lock it and commit its session/start.

        `observer` sees every append of this log, session/start included. The file is private
        to its owner (0600). If the session/start cannot be written (a full disk, a payload
        JSON cannot carry), the file is removed again: a failed create never leaves an empty
        session behind.
        """
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            lock_exclusive(fd, path)
            _fsync_dir(path.parent)
            log = cls(path, registry, fd)
            forget_index(path)  # a session of the same name before this one
            log._checker = InvariantChecker() if dev_mode() else None
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
    ) -> SessionLog:
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
        self._ingest(whole, 0)
        self._size, self._lines = whole.size, whole.count
        if whole.torn:
            if self._fd is not None:
                self._move_torn_tail_aside(whole.torn, whole.size)
            else:
                message = f"ignoring {len(whole.torn)} bytes after the last newline"
                self.problems.insert(0, message)
        self.committed_seq = self._last_seq
        if self._fd is not None:
            self._adopt_index()
            if dev_mode():
                self._checker = InvariantChecker.from_tail(self.events)

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

    def _ingest(self, lines: Iterable[bytes], first_seq: int) -> list[Event]:
        # Replay allocates one container per JSON object and keeps every one of them: the
        # cyclic collector would rescan the growing heap again and again for nothing, which
        # measured as most of the open time of a 100 MB session. Pause it for the bulk load.
        with _gc_paused():
            events, problems = parse_lines(lines, first_seq, self._lines + 1)
            if self._events is not None:
                self._events.extend(events)
            for event in events:
                self._fold(event)
            self.projection.fold_all(events)  # opening yields a ready projection
        problems += _unknown_types({e.type for e in events}, self.registry)
        for problem in problems:
            logger.warning("%s: %s", self.path.name, problem)
        self.problems.extend(problems)
        return events

    def _fold(self, event: Event) -> None:
        """Fold one event, in seq order, into what the log keeps besides the projection."""
        kind = event.type
        if kind == "context/compact":
            # Fixed now, from the events before it: the projection folds it later (lazily).
            self._carry[event.seq] = self.registry.carried(self.newest.frozen())
        elif kind in _GRANTS:
            self.grants.fold(event)
        elif kind == "session/start" and self.start is None:
            self.start = event
        self.newest.fold(event)
        self._last_seq = event.seq

    def _move_torn_tail_aside(self, torn: bytes, good: int) -> None:
        """Save the bytes after the last newline next to the session, then cut them off."""
        assert self._fd is not None
        aside = _create_aside(self.path, good, torn)
        os.ftruncate(self._fd, good)
        os.fsync(self._fd)
        message = f"torn last line ({len(torn)} bytes) moved aside to {aside.name}"
        logger.warning("%s: %s", self.path.name, message)
        self.problems.insert(0, message)

    def refresh(self) -> list[Event]:
        """Read events appended by another process since the last read (readers only)."""
        with os.fdopen(open_regular(self.path), "rb") as handle:
            handle.seek(self._size)
            chunk = handle.read()
        good = chunk.rfind(b"\n") + 1
        if not good:
            return []
        lines = chunk[:good].split(b"\n")
        lines.pop()  # the empty string after the final newline
        events = self._ingest(lines, self.next_seq)
        self._size += good
        self._lines += len(lines)
        self.committed_seq = self._last_seq
        return events

    # -- writing ---------------------------------------------------------------------------

    @property
    def next_seq(self) -> int:
        return self._last_seq + 1

    @property
    def next_turn(self) -> int:
        """The number the next turn gets: one past the newest turn/start's."""
        last = self.newest.latest("turn/start")
        return (last.turn or 0) + 1 if last is not None else 1

    @property
    def events(self) -> list[Event]:
        """Every event, oldest first. A reader holds them; a writer reads them back from its
        file each time (see the class), which is for inspection, never a turn's path."""
        return self._events if self._events is not None else list(self.history())

    def history(self) -> Iterator[Event]:
        """Every event, oldest first, a block of the file at a time for a writer."""
        if self._events is not None:
            yield from self._events
            return
        with os.fdopen(open_regular(self.path), "rb") as handle:
            expected = 0
            for block in _WholeLines(handle, handle.readline()).blocks():
                events, _ = parse_lines(block, expected)  # problems were reported on open
                if events:
                    expected = events[-1].seq + 1
                yield from events

    @property
    def writable(self) -> bool:
        return self._fd is not None

    def append(
        self, type: str, payload: BaseModel | dict[str, Any], *, turn: int | None = None
    ) -> Event:
        """Validate and write one event. It is durable after the next `commit`.

        The write path's hot function, kept flat on purpose: scripts/bench/log.py measures
        eight appends and a commit against bare writes and an fdatasync (goal: 1.2x).
        """
        fd = self._fd
        if fd is None:
            raise ReadOnlyLog(f"session {self.path.stem} was opened read-only")
        seq = self._last_seq + 1
        ts = now_ts()
        data = self._payload_json(type, payload)
        # The envelope is built here rather than through Event.to_json: same
        # keys, same order, one call fewer on the path every event takes.
        envelope = {"seq": seq, "type": type, "ts": ts, "data": data}
        if turn is not None:
            envelope["turn"] = turn
        try:
            line = orjson.dumps(envelope, option=orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError as exc:
            raise EnvelopeError(f"seq {seq} ({type}) cannot be written as JSON: {exc}") from None
        secrets = current_secrets()
        if secrets.in_line(line):
            # A key in the payload (a provider echoing it in an error, a tool printing it)
            # is replaced before anything is written or kept in memory (harness_core.secret).
            data = envelope["data"] = secrets.redact_json(data)
            line = orjson.dumps(envelope, option=orjson.OPT_APPEND_NEWLINE)
        event = Event(seq, type, ts, data, turn)
        # Everything that can refuse the event runs before the write, and nothing is updated
        # until the write succeeded: a refused append leaves the log as if it never happened.
        checker = self._checker
        if checker is not None:
            checker.validate(event)
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
        if checker is not None:
            checker.fold(event)
        self._fold(event)
        self.projection.apply(event)
        if self.listeners:
            # Each observer gets its own copy, parsed back from the line just written:
            # whatever it does to the data reaches neither the events the log's folds and its
            # readers see nor another observer. Only an observed append pays for the parse.
            for listener in tuple(self.listeners):
                listener(Event(seq, type, ts, orjson.loads(line)["data"], turn))
        return event

    def _payload_json(self, type: str, payload: BaseModel | dict[str, Any]) -> dict[str, Any]:
        declared = self.registry.get(type)
        if declared is None:
            raise ValueError(
                f"unknown event type {type!r}: declare it through the harness_event_types hook"
            )
        model = declared.payload
        try:
            if not isinstance(payload, model):
                payload = model.model_validate(payload)
        except ValueError as exc:  # pydantic's ValidationError, without importing pydantic
            raise ValueError(f"invalid {type} payload: {exc}") from None
        # Dumped as the declared model, so a subclass instance adds none of its own fields
        # (`payload.model_dump` would), through pydantic's public TypeAdapter.
        data: dict[str, Any] = _adapter(model).dump_python(payload, mode="json")
        return data

    def commit(self) -> None:
        """Make every appended event durable (fdatasync)."""
        if self._fd is None or self.committed_seq == self._last_seq:
            return
        _datasync(self._fd)
        self.committed_seq = self._last_seq
        if self._size - self._index_saved >= SAVE_EVERY:
            self._save_index()

    def _save_index(self) -> None:
        """Save the tail index up to here: only after a commit, so it covers durable lines."""
        index = TailIndex(self._index_start, self._size, self._last_seq, self._latest)
        save_index(self.path, index)
        self._index_saved = self._size

    # -- queries and lifetime --------------------------------------------------------------

    @property
    def session_id(self) -> str:
        return self.path.stem

    def _carried(self, compaction: Event) -> list[str]:
        """What plugins carry across `compaction` (fixed when it was folded, see `_fold`)."""
        return self._carry.pop(compaction.seq, [])

    def latest(self, types: Iterable[str] | str) -> Event | None:
        """The newest event of one of `types` (or of `types`, a str)."""
        return self.newest.latest(types)

    def close(self) -> None:
        """Commit what was appended and release the writer lock."""
        if self._fd is not None:
            try:
                self.commit()
                if self._size != self._index_saved:
                    self._save_index()
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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
            lines = self.handle.readlines(_READ_BLOCK)


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


@contextmanager
def _gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # Everything the load allocated sits in the youngest generation, so the collector's
        # next young pass would scan it all (a third of a second on a 100 MB session, for
        # nothing: replayed events hold no cycles). freeze+unfreeze moves every tracked object
        # to the oldest generation at once, without scanning it.
        gc.freeze()
        gc.unfreeze()
        if was_enabled:
            gc.enable()


def _datasync(fd: int) -> None:
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


def _fsync_dir(directory: Path) -> None:
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
        _fsync_dir(path.parent)
        return aside
    raise FileExistsError(f"too many torn-tail files beside {path}")


_ADAPTERS: dict[type[BaseModel], TypeAdapter[Any]] = {}


def _adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    """The TypeAdapter of `model`, built on its first append: every append dumps through it."""
    adapter = _ADAPTERS.get(model)
    if adapter is None:
        from pydantic import TypeAdapter  # the write path: reading never loads pydantic

        adapter = _ADAPTERS[model] = TypeAdapter(model)
    return adapter
