"""The Postgres store: sessions as rows of one database (a `harness_core.log.Store`).

It connects on first use, not when the plugin answers for the URL: `harness --version` and
`harness store init` never need a working schema. The first use checks the schema (once a
store) and fails in one line naming `harness store init` on a database that has none. Queries
share one connection (psycopg serialises them; every query reads its rows whole, a block at a
time); each writer has a connection of its own, which holds its session's lock (`_log.py`).
"""

from __future__ import annotations

import builtins
import threading
import weakref
from collections.abc import Callable, Collection, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness_core.log import (
    Event,
    EventSink,
    EventTypeRegistry,
    Notify,
    SessionNotFound,
    SessionSummary,
    redact_url,
)

from ._connect import connect, translated
from ._log import BLOCK, LOCK, PostgresLog, PostgresSessionLocked, event_of, me

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

_LATEST = """
SELECT e.line FROM unnest(%s::text[]) AS t (type)
CROSS JOIN LATERAL (
    SELECT seq, line FROM harness_events
    WHERE session_id = %s AND type = t.type ORDER BY seq DESC LIMIT 1
) AS e
ORDER BY e.seq DESC LIMIT 1
"""
_LIST = (
    "SELECT id, created, updated, events, title, parent_session, cwd FROM harness_sessions "
    "ORDER BY updated DESC, id DESC"
)


class PostgresStore:
    """Sessions in the PostgreSQL database `url` names (a `Store`)."""

    def __init__(
        self, url: str, registry: EventTypeRegistry, *, on_append: EventSink | None = None
    ) -> None:
        self.raw_url = url  # holds the password: never shown, only handed to libpq
        self.registry = registry
        self.on_append = on_append
        self.channel = ""  # the NOTIFY channel of this schema, set on first connect
        self._shared: psycopg.Connection[Any] | None = None
        self._connecting = threading.Lock()

    @property
    def url(self) -> str:
        return redact_url(self.raw_url)

    # -- connections -----------------------------------------------------------------------

    def connect(self) -> psycopg.Connection[Any]:
        """A new connection of this store's (a writer's, a subscriber's)."""
        return connect(self.raw_url)

    def shared(self) -> psycopg.Connection[Any]:
        """The queries' connection, checked against the schema when first made; made again
        when the server dropped it."""
        with self._connecting:
            conn = self._shared
            if conn is None or conn.closed or conn.broken:
                from ._schema import check

                conn = connect(self.raw_url)
                try:
                    with translated(self.raw_url, "cannot read the schema"):
                        check(conn, self.url)
                        row = conn.execute("SELECT current_schema()").fetchone()
                except BaseException:
                    conn.close()
                    raise
                # Notifications are per database: the channel names the schema, so stores
                # in two schemas of one database do not hear each other.
                self.channel = f"harness:{row[0] if row else ''}"[:63]
                self._shared = conn
                # Closed with the store, or at exit: a host never has to remember to.
                weakref.finalize(self, conn.close)
            return conn

    def close(self) -> None:
        with self._connecting:
            if self._shared is not None:
                self._shared.close()
                self._shared = None

    # -- sessions --------------------------------------------------------------------------

    def create(
        self,
        *,
        system_prompt: str | None = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        parent_call_id: str | None = None,
    ) -> PostgresLog:
        """A new session, its lock held, its session/start committed with its row."""
        from harness_core.log import SessionStart

        start = SessionStart.new(
            system_prompt=system_prompt,
            cwd=cwd,
            parent_session=parent_session,
            parent_call_id=parent_call_id,
        )
        session_id, created = start.id, start.created
        writer = self._new_writer(session_id)
        try:
            log = PostgresLog(self, session_id, writer, start=(created, parent_session, cwd))
            log._check_appends([])
            if self.on_append is not None:
                log.listeners.append(partial(self.on_append, log))
            log.append("session/start", start)
            log.commit()
        except BaseException:
            writer.close()  # nothing was committed: no row, no event
            raise
        return log

    def adopt(self, session_id: str, start: Event) -> PostgresLog:
        """The writer of a session that comes from another store (`harness store copy`):
        its row is inserted with the first commit, from `start`, its session/start."""
        writer = self._new_writer(session_id)
        created = str(start.data.get("created") or start.ts)
        parent, cwd = start.data.get("parent_session"), start.data.get("cwd")
        return PostgresLog(self, session_id, writer, start=(created, parent, cwd))

    def _new_writer(self, session_id: str) -> psycopg.Connection[Any]:
        """A connection holding the writer lock of a session that has no row yet."""
        self.shared()  # the schema check, and the channel the first commit notifies
        writer = self.connect()
        try:
            with translated(self.raw_url, f"cannot create session {session_id}"):
                writer.execute(LOCK, (session_id,))
        except BaseException:
            writer.close()
            raise
        return writer

    def open(self, session_id: str, *, writable: bool = True) -> PostgresLog:
        if not writable:
            log = PostgresLog(self, session_id, None)
            log._ingest(self._lines(session_id, self.shared()), 0)
            return log
        self.shared()
        writer = self.connect()
        try:
            log = self._take(session_id, writer)
        except BaseException:
            writer.close()
            raise
        if self.on_append is not None:
            log.listeners.append(partial(self.on_append, log))
        return log

    def _take(self, session_id: str, writer: psycopg.Connection[Any]) -> PostgresLog:
        """The session's writer on `writer`: its lock taken, the holder recorded, replayed."""
        with translated(self.raw_url, f"cannot open session {session_id}"):
            self._lock(session_id, writer)
            writer.execute(
                "UPDATE harness_sessions SET writer_host = %s, writer_pid = %s WHERE id = %s",
                (*me(), session_id),
            )
            log = PostgresLog(self, session_id, writer)
            replayed = log._ingest(self._lines(session_id, writer), 0)
        log._check_appends(replayed)
        return log

    def delete(self, session_id: str) -> None:
        """Remove the session's rows (its events go with it: ON DELETE CASCADE) under its
        writer lock, on a connection of its own, so no writer is cut off mid-turn."""
        with self.connect() as conn, translated(self.raw_url, f"cannot delete {session_id}"):
            self._lock(session_id, conn)
            with conn.transaction():
                conn.execute("DELETE FROM harness_sessions WHERE id = %s", (session_id,))

    def _lock(self, session_id: str, conn: psycopg.Connection[Any]) -> None:
        """Take the session's writer lock on `conn`: SessionNotFound for an unknown id,
        PostgresSessionLocked naming the holder while another connection has it."""
        self._holder(session_id, conn)
        locked = conn.execute(LOCK, (session_id,)).fetchone()
        if not (locked and locked[0]):
            # The holder's row may be a moment behind its lock: read it again now.
            raise PostgresSessionLocked(session_id, *self._holder(session_id, conn))

    def _holder(
        self, session_id: str, conn: psycopg.Connection[Any]
    ) -> tuple[str | None, int | None]:
        row = conn.execute(
            "SELECT writer_host, writer_pid FROM harness_sessions WHERE id = %s", (session_id,)
        ).fetchone()
        if row is None:
            raise SessionNotFound(f"no session {session_id!r} in {self.url}")
        host, pid = row
        return (host if isinstance(host, str) else None, pid if isinstance(pid, int) else None)

    # -- queries ---------------------------------------------------------------------------

    def list(self) -> list[SessionSummary]:
        with translated(self.raw_url, "cannot list the sessions"):
            rows = self.shared().execute(_LIST).fetchall()
        return [
            SessionSummary(
                id=id,
                created=created,
                updated=updated,
                events=events,
                title=title,
                parent_session=parent,
                path=Path(id),  # a summary names a path; a row has none, its id stands in
                cwd=cwd,
            )
            for id, created, updated, events, title, parent, cwd in rows
        ]

    def latest(self, session_id: str, types: Collection[str]) -> Event | None:
        """One index lookup a type ((session_id, type, seq)), never a scan of the session."""
        conn = self.shared()
        with translated(self.raw_url, f"cannot read session {session_id}"):
            row = conn.execute(_LATEST, (sorted(types), session_id)).fetchone()
            if row is None:
                self._holder(session_id, conn)  # SessionNotFound for an unknown id
                return None
        return event_of(bytes(row[0]))

    def read(self, session_id: str) -> Iterator[Event]:
        yield from self.open(session_id, writable=False).events

    def lines(self, session_id: str) -> Iterator[bytes]:
        """The envelope lines as they were written: the bytes a file would hold."""
        conn = self.shared()
        with translated(self.raw_url, f"cannot read session {session_id}"):
            self._holder(session_id, conn)
        return self._lines(session_id, conn)

    def _lines(self, session_id: str, conn: psycopg.Connection[Any]) -> Iterator[bytes]:
        found = False
        for block in self.blocks(session_id, conn):
            found = True
            yield from block
        if not found:
            with translated(self.raw_url, f"cannot read session {session_id}"):
                self._holder(session_id, conn)  # SessionNotFound, or a session with no rows

    def blocks(
        self, session_id: str, conn: psycopg.Connection[Any] | None, *, after: int = -1
    ) -> Iterator[builtins.list[bytes]]:
        """The session's lines after seq `after`, `BLOCK` rows a query (keyset by seq)."""
        conn = conn or self.shared()
        while True:
            with translated(self.raw_url, f"cannot read session {session_id}"):
                rows = conn.execute(
                    "SELECT seq, line FROM harness_events WHERE session_id = %s AND seq > %s "
                    "ORDER BY seq LIMIT %s",
                    (session_id, after, BLOCK),
                ).fetchall()
            if not rows:
                return
            after = rows[-1][0]
            yield [bytes(line) for _, line in rows]
            if len(rows) < BLOCK:
                return

    def subscribe(self, notify: Notify) -> Callable[[], None]:
        """A thread LISTENs on its own connection and calls `notify(session_id, seq)` for
        each commit, by any process on any machine."""
        from ._listen import listen

        self.shared()  # the schema check and the channel
        return listen(self, notify)
