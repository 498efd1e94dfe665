"""An in-memory session store: sessions that live as long as the process, for embedding and
tests (a `harness_core.log.Store`, like LangGraph's `InMemorySaver` beside its database savers).

It is written against the public store interface only, as a third store would be: a class
for the store, a `SessionLog` subclass supplying the persistence (`persist`, `make_durable`,
`stored_blocks`, `unread_lines`, `release`), and `replay` when a session is opened. It passes
the same conformance suite as the file and Postgres stores (`store_conformance`), except what
needs a second process: its sessions are this process's alone.

    store = MemoryStore(registry)
    with store.create(system_prompt="...") as log:
        log.append(...)
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial

from ..log import (
    Event,
    EventSink,
    EventTypeRegistry,
    LogWriteError,
    Notify,
    SessionLocked,
    SessionLog,
    SessionNotFound,
    SessionStart,
    SessionSummary,
    check_session_id,
    check_title,
)

__all__ = ["MemoryLog", "MemoryStore"]


@dataclass
class _Session:
    lines: list[bytes] = field(default_factory=list)  # committed envelope lines, no newline
    title: str | None = None  # what `rename` gave
    held: bool = False  # a writer has it


class MemoryStore:
    """Sessions in this process's memory (a `Store`); safe to share between threads."""

    def __init__(self, registry: EventTypeRegistry, *, on_append: EventSink | None = None) -> None:
        self.registry = registry
        self.on_append = on_append
        self._sessions: dict[str, _Session] = {}
        self._subscribers: list[Notify] = []
        self.lock = threading.Lock()  # guards the sessions; a log commits under it

    @property
    def url(self) -> str:
        return f"memory://{id(self):x}"

    def initialise(self) -> None:
        return None

    def create(
        self,
        *,
        system_prompt: str | None = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        parent_call_id: str | None = None,
    ) -> MemoryLog:
        start = SessionStart.new(
            system_prompt=system_prompt,
            cwd=cwd,
            parent_session=parent_session,
            parent_call_id=parent_call_id,
        )
        with self.lock:
            if start.id in self._sessions:  # another writer is making the same id right now
                raise SessionLocked(start.id, os.getpid())
            session = self._sessions[start.id] = _Session(held=True)
        log = self._writer(start.id, session)
        try:
            log.append("session/start", start)
            log.commit()
        except BaseException:
            with self.lock:
                del self._sessions[start.id]  # nothing was committed: no session
            raise
        return log

    def open(self, session_id: str, *, writable: bool = True) -> MemoryLog:
        with self.lock:
            session = self._get(session_id)
            if writable and session.held:
                raise SessionLocked(session_id, os.getpid())
            session.held = session.held or writable
            lines = list(session.lines)
        log = self._writer(session_id, session) if writable else MemoryLog(self, session_id)
        log.replay(lines)
        log.read = len(lines)
        return log

    def _writer(self, session_id: str, session: _Session) -> MemoryLog:
        log = MemoryLog(self, session_id, session)
        if self.on_append is not None:
            log.listeners.append(partial(self.on_append, log))
        return log

    def _get(self, session_id: str) -> _Session:
        session = self._sessions.get(check_session_id(session_id))
        if session is None:
            raise SessionNotFound(f"no session {session_id!r} in {self.url}")
        return session

    def list(self) -> list[SessionSummary]:
        with self.lock:
            found = [(i, list(s.lines), s.title) for i, s in self._sessions.items() if s.lines]
        summaries = [_summary(i, lines, title) for i, lines, title in found]
        return sorted(summaries, key=lambda s: (s.updated, s.id), reverse=True)

    def latest(self, session_id: str, types: Collection[str]) -> Event | None:
        for line in reversed(self.committed_lines(session_id)):
            event = _event(line)
            if event.type in types:
                return event
        return None

    def read(self, session_id: str) -> Iterator[Event]:
        yield from self.open(session_id, writable=False).events

    def lines(self, session_id: str) -> Iterator[bytes]:
        return iter(self.committed_lines(session_id))

    def committed_lines(self, session_id: str) -> builtins.list[bytes]:
        with self.lock:
            return list(self._get(session_id).lines)

    def delete(self, session_id: str) -> None:
        with self.lock:
            if self._get(session_id).held:
                raise SessionLocked(session_id, os.getpid())
            del self._sessions[session_id]

    def rename(self, session_id: str, title: str) -> None:
        title = check_title(title)
        with self.lock:
            self._get(session_id).title = title

    def adopt(self, session_id: str, lines: Sequence[bytes]) -> None:
        check_session_id(session_id)
        with self.lock:
            if session_id in self._sessions:
                raise LogWriteError(f"session {session_id} is already in {self.url}")
            self._sessions[session_id] = _Session([line.removesuffix(b"\n") for line in lines])

    def subscribe(self, notify: Notify) -> Callable[[], None]:
        with self.lock:
            self._subscribers.append(notify)

        def stop() -> None:
            with self.lock:
                self._subscribers.remove(notify)

        return stop

    def committed(self, session_id: str, session: _Session, lines: builtins.list[bytes]) -> None:
        """A writer's commit: its lines become the session's, and subscribers hear of it."""
        with self.lock:
            session.lines += lines
            subscribers = list(self._subscribers)
        seq = _event(lines[-1]).seq
        for notify in subscribers:
            notify(session_id, seq)

    def released(self, session: _Session) -> None:
        with self.lock:
            session.held = False


class MemoryLog(SessionLog):
    """A session of a `MemoryStore`: a writer (`session` given) or a reader."""

    def __init__(self, store: MemoryStore, session_id: str, session: _Session | None = None):
        super().__init__(session_id, store.registry, writable=session is not None)
        self.store = store
        self.session = session
        self.pending: list[bytes] = []
        self.read = 0  # a reader's lines read so far

    def persist(self, line: bytes, seq: int, type: str) -> None:
        self.pending.append(line.removesuffix(b"\n"))

    def make_durable(self) -> None:
        if self.pending and self.session is not None:
            self.store.committed(self.session_id, self.session, self.pending)
            self.pending = []

    def stored_blocks(self) -> Iterator[list[bytes]]:
        if self.session is None:
            yield self.store.committed_lines(self.session_id)
            return
        with self.store.lock:
            committed = list(self.session.lines)
        yield committed + self.pending

    def unread_lines(self) -> list[bytes]:
        lines = self.store.committed_lines(self.session_id)[self.read :]
        self.read += len(lines)
        return lines

    def release(self) -> None:
        if self.session is not None:
            self.store.released(self.session)


def _event(line: bytes) -> Event:
    return Event.from_json(json.loads(line))


def _summary(session_id: str, lines: list[bytes], title: str | None) -> SessionSummary:
    start, last = _event(lines[0]), _event(lines[-1])
    first_prompt = next(
        (e.data.get("text") for e in map(_event, lines) if e.type == "message/user"), None
    )
    return SessionSummary(
        id=session_id,
        created=str(start.data.get("created") or start.ts),
        updated=last.ts,
        events=len(lines),
        title=title or (first_prompt if isinstance(first_prompt, str) else None),
        parent_session=start.data.get("parent_session"),
        cwd=start.data.get("cwd"),
    )
