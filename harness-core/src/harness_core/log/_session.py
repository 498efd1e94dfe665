"""A session's event log as every store keeps it: replay, append and commit, the folds.

A store keeps a session as its envelope lines, in seq order (`_file.py`: a JSON Lines file;
a plugin's store: rows of a database). Everything else is the same on every store and lives
here: the envelope of each append, its validation and redaction, the dev-mode invariants,
the message projection, the small folds a turn reads (`_folds.py`) and the observers. A store
subclasses `SessionLog` and supplies the persistence, public methods that only `SessionLog`
calls (as a LangGraph checkpoint saver implements `put` and `list`):

    persist(line, seq, type)  write one envelope line (LogWriteError: nothing was written)
    make_durable()            make every line written so far durable (`commit`)
    stored_blocks()           the session's lines, a block at a time (`history`)
    unread_lines()            a reader's lines appended since it last read (`refresh`)
    release()                 a writer's close, after its last commit
    describe()                how its messages name the session (a file name, an id)

and calls `replay(lines)` once with the session's stored lines when it opens one, a writer
only once it holds the session's writer lock. See docs/log.md, "Stores".
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ..secret import current as current_secrets
from ._envelope import EnvelopeError, Event, now_ts
from ._folds import Grants, Newest
from ._invariants import InvariantChecker, dev_mode
from ._projection import MessageProjection
from ._types import EventTypeRegistry

if TYPE_CHECKING:  # payload models arrive with the first append; reading never needs them
    from pydantic import BaseModel, TypeAdapter

__all__ = [
    "EventSink",
    "LogWriteError",
    "ReadOnlyLog",
    "SessionLog",
    "parse_lines",
    "writer_taken",
]

logger = logging.getLogger("harness.log")

_GRANTS = frozenset({"message/assistant", "tool/approval"})  # the events `Grants` folds
# Lines a replay parses and folds at a time (`_fold_lines`): a chunk makes fewer objects than
# CPython's youngest generation holds before it is collected (700), so few of them are alive
# when the collector moves survivors on, and a 100,000-event replay starts no full pass
# (scripts/bench/web.py; 1,000 started three, each walking every object of the process).
_CHUNK = 100
_BOUNDARIES = frozenset({"turn/start", "turn/end"})

Listener = Callable[[Event], None]
# An observer of appends that also needs to know the session (hosts, the loop's on_event).
EventSink = Callable[["SessionLog", Event], None]


_T = TypeVar("_T")

# Who hears that a writer's replay begins, in this context (`writer_taken`).
_TAKEN: ContextVar[Callable[[], object] | None] = ContextVar("harness_writer_taken", default=None)


@contextmanager
def writer_taken(callback: Callable[[], object]) -> Iterator[None]:
    """Within this block (this thread's context), `callback()` runs when a store opening a
    session for writing begins its replay: it holds the writer lock then, so nothing but
    reading the log is left, and no other writer can refuse it any more. A host answers a
    request there instead of after a replay of the whole session (the web host's turns)."""
    with _set(_TAKEN, callback):
        yield


# Who folds the events of each chunk a replay parses, in this context (`replayed`).
_REPLAYED: ContextVar[Callable[[list[Event]], object] | None] = ContextVar(
    "harness_replayed", default=None
)


@contextmanager
def replayed(callback: Callable[[list[Event]], object]) -> Iterator[None]:
    """Within this block (this thread's context), `callback(events)` gets each chunk of
    events a store's replay parses, oldest first: a host folds its own view of a session (the
    web host's snapshot) as the session opens, instead of parsing it a second time (a reader
    keeps lines, see `SessionLog`)."""
    with _set(_REPLAYED, callback):
        yield


@contextmanager
def _set(var: ContextVar[_T | None], value: _T) -> Iterator[None]:
    """`var` is `value` within this block, in this context."""
    token = var.set(value)
    try:
        yield
    finally:
        var.reset(token)


class ReadOnlyLog(RuntimeError):
    """An append on a log opened for reading."""


class LogWriteError(OSError):
    """The store refused an append; the session is as it was before it."""


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


def _from_boundary(tail: list[Event], events: list[Event]) -> list[Event]:
    """`tail + events` from the last turn/start or turn/end on (all of it when none)."""
    for n in range(len(events) - 1, -1, -1):
        if events[n].type in _BOUNDARIES:
            return events[n:]
    return tail + events


def _parsed(lines: list[bytes]) -> list[Event]:
    """Lines a replay accepted, as events again (its problems were reported then)."""
    return parse_lines(lines)[0]


def _unknown_types(types: set[str], registry: EventTypeRegistry) -> list[str]:
    unknown = types - set(registry.names())
    return [f"unknown event type {t!r} kept and skipped" for t in sorted(unknown)]


class _Carried:
    """What plugins carry across a compaction (fixed when the log folded it, see `_fold`)."""

    __slots__ = ("_carry",)

    def __init__(self, carry: dict[int, list[str]]) -> None:
        self._carry = carry

    def __call__(self, compaction: Event) -> list[str]:
        return self._carry.pop(compaction.seq, [])


class SessionLog:
    """One session's event log, open for writing (the one writer) or reading.

    A reader keeps every event's line as read, and parses those asked for (`events`,
    `events_after`, `tail`): bytes are objects the garbage collector never walks, where a host
    showing a 100,000-event session as Event objects had each full collection walk them all.
    A writer holds none: only what its turns read (the message projection, the newest event of
    each type, the session's grants and its session/start), so its memory follows the model's
    history, not the session's length; anything older is read back from the store on demand
    (`history`).
    """

    def __init__(self, session_id: str, registry: EventTypeRegistry, *, writable: bool) -> None:
        self.session_id = session_id
        self.registry = registry
        self._writable = writable
        self._kept: list[bytes] | None = None if writable else []  # a reader's lines
        self._kept_seqs: list[int] = []  # their seqs, in order
        self.problems: list[str] = []
        # Compaction seq -> what plugins carry across it, until the projection folds it. The
        # projection gets the dict's own method, not one of this log's: a log in a reference
        # cycle with its projection waits for the cyclic collector to free all its events.
        self._carry: dict[int, list[str]] = {}
        self._projection = self._new_projection() if writable else None
        self.newest = Newest()
        self.grants = Grants()
        self.start: Event | None = None  # session/start
        self._last_seq = -1
        self.listeners: list[Listener] = []
        self.committed_seq = -1
        self._lines = 0  # lines read so far, so problems name the store's line numbers
        # A writer's appends are checked against the log's structural rules in development
        # mode (HARNESS_DEV=1), from the state its replay left (none yet: a new session).
        self._checker = InvariantChecker.from_tail([]) if writable and dev_mode() else None

    def _new_projection(self) -> MessageProjection:
        return MessageProjection(self.registry.surface, _Carried(self._carry))

    @property
    def projection(self) -> MessageProjection:
        """The history as the model is sent it. A writer's is folded as it opens (its turns
        read it every step); a reader's only when first asked for (`harness show --json`): a
        host that shows a session has no use for it, and would hold every message of a long
        session as objects that each full pass of its garbage collector walks."""
        if self._projection is None:
            projection = self._new_projection()
            projection.fold_all(self.history())
            self._projection = projection
        return self._projection

    # -- what a store supplies (SessionLog calls these; nothing else does) -----------------

    def persist(self, line: bytes, seq: int, type: str) -> None:
        """Write one envelope line (with its newline), the next seq; LogWriteError when the
        store refused it and nothing was written. Durable after the next `make_durable`."""
        raise NotImplementedError

    def make_durable(self) -> None:
        """Make every line persisted so far durable (an fdatasync, a transaction's commit)."""
        raise NotImplementedError

    def stored_blocks(self) -> Iterator[list[bytes]]:
        """The session's lines as stored, oldest first, a block at a time; a writer's lines
        not yet durable included."""
        raise NotImplementedError

    def unread_lines(self) -> list[bytes]:
        """A reader's: whole lines committed since it last read (by another process)."""
        raise NotImplementedError

    def release(self) -> None:
        """Let the writer go (its lock, its connection or file), after its last commit."""
        raise NotImplementedError

    def describe(self) -> str:
        """How messages name the session (a file name, an id)."""
        return self.session_id

    # -- replay ----------------------------------------------------------------------------

    def replay(self, lines: Iterable[bytes]) -> None:
        """Fold the session's stored lines, oldest first: what a store does once, when it
        opens a session. A line that is not a well-formed envelope in sequence is skipped
        with a problem (`problems`), an unknown type kept with one. A writer's development-
        mode checks go on from its last turn/start or turn/end. A writer's replay first
        tells whoever listens (`writer_taken`) that it holds the lock."""
        taken = _TAKEN.get() if self._writable else None
        if taken is not None:
            taken()
        tail = self._fold_lines(lines, 0, observe=_REPLAYED.get())
        if self._checker is not None:
            self._checker = InvariantChecker.from_tail(tail)

    def _fold_lines(
        self,
        lines: Iterable[bytes],
        first_seq: int,
        *,
        fresh: bool = False,
        observe: Callable[[list[Event]], object] | None = None,
    ) -> list[Event]:
        """Parse and fold `lines` a chunk at a time: a writer's replay lets each chunk's
        events go before it parses the next, so they die young instead of all living to the
        end of the replay, where each full pass of the garbage collector would walk them (on
        a host, with every other thread waiting for the interpreter). What is returned: a
        refresh's new events (`fresh`), else a checked writer's from the last turn boundary on.
        """
        kept = self._kept
        new: list[Event] = []
        tail: list[Event] = []
        problems: list[str] = []
        types: set[str] = set()
        expected, number = first_seq, self._lines + 1
        lines = iter(lines)
        while chunk := list(islice(lines, _CHUNK)):
            events, found = parse_lines(chunk, expected, number, raw=kept)
            number += len(chunk)
            problems += found
            if events:
                expected = events[-1].seq + 1
            if kept is not None:
                self._kept_seqs += [event.seq for event in events]
            if fresh:
                new += events
            elif self._checker is not None:
                tail = _from_boundary(tail, events)
            for event in events:
                self._fold(event)
            if self._projection is not None:
                self._projection.fold_all(events)  # opening yields a ready projection
            if observe is not None:
                observe(events)
            types.update(e.type for e in events)
        self.committed_seq = self._last_seq  # what a store reads back is committed
        problems += _unknown_types(types, self.registry)
        for problem in problems:
            logger.warning("%s: %s", self.describe(), problem)
        self.problems.extend(problems)
        return new if fresh else tail

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

    def refresh(self) -> list[Event]:
        """Read events appended by another process since the last read (readers only)."""
        lines = self.unread_lines()
        if not lines:
            return []
        events = self._fold_lines(lines, self.next_seq, fresh=True)
        self._lines += len(lines)
        return events

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
        """Every event, oldest first, parsed anew each time (see the class): for inspection
        and one-off reads, never a turn's path."""
        return list(self.history())

    def history(self) -> Iterator[Event]:
        """Every event, oldest first: a reader's a chunk of its lines at a time, a writer's a
        block of its store at a time."""
        if self._kept is not None:
            for start in range(0, len(self._kept), _CHUNK):
                yield from _parsed(self._kept[start : start + _CHUNK])
            return
        expected = 0
        for block in self.stored_blocks():
            events, _ = parse_lines(block, expected)  # problems were reported on open
            if events:
                expected = events[-1].seq + 1
            yield from events

    def events_after(self, seq: int) -> list[Event]:
        """The events after `seq`, oldest first (a reader finds them by seq)."""
        if self._kept is None:
            return [event for event in self.history() if event.seq > seq]
        return _parsed(self._kept[bisect.bisect_right(self._kept_seqs, seq) :])

    def events_at(self, seqs: Collection[int]) -> dict[int, Event]:
        """Those of the events of `seqs` the log holds, by seq (a reader finds each by seq)."""
        if self._kept is None:
            return {event.seq: event for event in self.history() if event.seq in seqs}
        kept, where = self._kept, self._kept_seqs
        found = []
        for seq in sorted(seqs):
            at = bisect.bisect_left(where, seq)
            if at < len(where) and where[at] == seq:
                found.append(kept[at])
        return {event.seq: event for event in _parsed(found)}

    def tail(self, limit: int, *, before: int | None = None) -> tuple[list[Event], bool]:
        """The last `limit` events before seq `before` (of all, when None), oldest first, and
        whether older ones exist: a page of the history (a reader finds it by seq)."""
        if self._kept is None:
            events = [e for e in self.history() if before is None or e.seq < before]
            return events[max(0, len(events) - limit) :], len(events) > limit
        seqs = self._kept_seqs
        end = len(seqs) if before is None else bisect.bisect_left(seqs, before)
        start = max(0, end - limit)
        return _parsed(self._kept[start:end]), start > 0

    @property
    def writable(self) -> bool:
        return self._writable

    def append(
        self, type: str, payload: BaseModel | dict[str, Any], *, turn: int | None = None
    ) -> Event:
        """Validate and write one event. It is durable after the next `commit`.

        The write path's hot function, kept flat on purpose: scripts/bench/log.py measures
        eight appends and a commit against bare writes and an fdatasync (goal: 1.2x). The
        store writes the line (`_write`); everything else is the same on every store.
        """
        if not self._writable:
            raise ReadOnlyLog(f"session {self.session_id} was opened read-only")
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
        self.persist(line, seq, type)
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

    def append_line(self, line: bytes) -> Event:
        """Write one envelope line as another store holds it, its bytes kept (`harness store
        copy`: file -> Postgres -> file gives the same file). It must be a well-formed
        envelope carrying the next seq. It is durable after the next `commit`.

        Unlike `append`, the dev-mode rules and the observers are left out: the event is not
        new, only moved, and the source store accepted it when it was.
        """
        if not self._writable:
            raise ReadOnlyLog(f"session {self.session_id} was opened read-only")
        line = line.removesuffix(b"\n")
        events, problems = parse_lines([line], self.next_seq)
        if problems or len(events) != 1:
            why = problems[0].removeprefix("line 1: ") if problems else "not an envelope"
            raise EnvelopeError(f"session {self.session_id}, seq {self.next_seq}: {why}")
        (event,) = events
        self.persist(line + b"\n", event.seq, event.type)
        self._fold(event)
        self.projection.apply(event)
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
        """Make every appended event durable (an fdatasync, a transaction's commit)."""
        if not self._writable or self.committed_seq == self._last_seq:
            return
        self.make_durable()
        self.committed_seq = self._last_seq

    # -- queries and lifetime --------------------------------------------------------------

    def latest(self, types: Iterable[str] | str) -> Event | None:
        """The newest event of one of `types` (or of `types`, a str)."""
        return self.newest.latest(types)

    def close(self) -> None:
        """Commit what was appended and let the writer go (idempotent)."""
        if self._writable:
            try:
                self.commit()
            finally:
                self._writable = False
                self.listeners.clear()  # observers hold the log (partial): no cycle outlives it
                self.release()

    def __enter__(self) -> SessionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_ADAPTERS: dict[type[BaseModel], TypeAdapter[Any]] = {}


def _adapter(model: type[BaseModel]) -> TypeAdapter[Any]:
    """The TypeAdapter of `model`, built on its first append: every append dumps through it."""
    adapter = _ADAPTERS.get(model)
    if adapter is None:
        from pydantic import TypeAdapter  # the write path: reading never loads pydantic

        adapter = _ADAPTERS[model] = TypeAdapter(model)
    return adapter
