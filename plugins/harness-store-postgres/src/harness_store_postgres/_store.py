"""The Postgres store: sessions as rows of one database (a `harness_core.log.Store`).

It connects on first use, not when the plugin answers for the URL: `harness --version` and
`harness store init` never need a working schema, and psycopg is imported only then. Each new
connection first checks the schema and fails in one line naming `harness store init` on a
database that has none. The queries and the reads of whole sessions share one connection
(psycopg serialises them; every query reads its rows whole, a block at a time); each writer
has a connection of its own, which holds its session's lock (`_log.py`).
"""

from __future__ import annotations

import builtins
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from harness_core.log import (
    Event,
    SessionNotFound,
    SessionSummary,
    check_session_id,
    redact_url,
)

from ._connect import connect, translated

# The writer's side (`_log`: the envelope codec, SessionLog, socket) loads when a session is
# opened, not for a listing: each method that needs it imports it.
if TYPE_CHECKING:
    import psycopg
    from harness_core.log import EventSink, EventTypeRegistry, Notify

    from ._log import PostgresLog

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
    "SELECT id, created, updated, events, coalesce(name, title), parent_session, cwd "
    "FROM harness_sessions ORDER BY updated DESC, id DESC"
)


class PostgresStore:
    """Sessions in the PostgreSQL database `url` names (a `Store`)."""

    def __init__(
        self, url: str, registry: EventTypeRegistry, *, on_append: EventSink | None = None
    ) -> None:
        self.raw_url = url  # holds the password: never shown, only handed to psycopg
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
                if conn is not None:
                    conn.close()  # the server dropped it: its socket goes now
                conn = connect(self.raw_url)
                self._checked(conn)
                self._shared = conn
            return conn

    def _checked(self, conn: psycopg.Connection[Any]) -> None:
        """Check the schema on a new connection (closing it on failure), set the channel."""
        from ._schema import check

        try:
            with translated(self.raw_url, "cannot read the schema"):
                schema = check(conn, self.url)
        except BaseException:
            conn.close()
            raise
        # Notifications are per database: the channel names the schema, so stores in two
        # schemas of one database do not hear each other.
        self.channel = f"harness:{schema}"[:63]
        # Closed with the store, or at exit: a host never has to remember to.
        weakref.finalize(self, conn.close)

    def query(self, sql: str, params: Sequence[object]) -> builtins.list[tuple[Any, ...]]:
        """The rows of one query on the shared connection."""
        return self.shared().execute(sql, params).fetchall()

    def close(self) -> None:
        with self._connecting:
            if self._shared is not None:
                self._shared.close()
            self._shared = None

    def initialise(self) -> str:
        """Create or migrate the schema (`harness store init`): what was done."""
        from ._schema import init

        with connect(self.raw_url) as conn, translated(self.raw_url, "cannot initialise"):
            before, now = init(conn, self.url)
        if before == now:
            return f"schema version {now}, up to date"
        if before == 0:
            return f"created the tables (schema version {now})"
        return f"migrated from schema version {before} to {now}"

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

        from ._log import PostgresLog, let_go

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
            if self.on_append is not None:
                log.listeners.append(partial(self.on_append, log))
            log.append("session/start", start)
            log.commit()
        except BaseException:
            let_go(writer)  # nothing was committed: no row, no event
            raise
        return log

    def adopt(self, session_id: str, lines: Sequence[bytes]) -> None:
        """A session from another store (`harness store copy`), its lines as they are: one
        commit inserts them with the session's row, made from its session/start."""
        from ._log import PostgresLog

        check_session_id(session_id)  # an id from another store
        start = event_of(lines[0])
        writer = self._new_writer(session_id)
        created = str(start.data.get("created") or start.ts)
        parent, cwd = start.data.get("parent_session"), start.data.get("cwd")
        with PostgresLog(self, session_id, writer, start=(created, parent, cwd)) as log:
            for line in lines:
                log.append_line(line)

    def _new_writer(self, session_id: str) -> psycopg.Connection[Any]:
        """A connection holding the writer lock of a session that has no row yet."""
        from ._log import LOCK, let_go

        self.shared()  # the schema check, and the channel the first commit notifies
        writer = self.connect()
        try:
            with translated(self.raw_url, f"cannot create session {session_id}"):
                locked = writer.execute(LOCK, (session_id,)).fetchone()
            if not (locked and locked[0]):  # another writer is making the same id right now
                from harness_core.log import SessionLocked

                raise SessionLocked(session_id, None, None)
        except BaseException:
            let_go(writer)
            raise
        return writer

    def open(self, session_id: str, *, writable: bool = True) -> PostgresLog:
        from ._log import PostgresLog, let_go

        check_session_id(session_id)
        if not writable:
            log = PostgresLog(self, session_id, None)
            log.replay(self._lines(session_id, self.shared()))
            return log
        self.shared()
        writer = self.connect()
        try:
            log = self._take(session_id, writer)
        except BaseException:
            let_go(writer)
            raise
        if self.on_append is not None:
            log.listeners.append(partial(self.on_append, log))
        return log

    def _take(self, session_id: str, writer: psycopg.Connection[Any]) -> PostgresLog:
        """The session's writer on `writer`: its lock taken, the holder recorded, replayed."""
        from ._log import PostgresLog, me

        with translated(self.raw_url, f"cannot open session {session_id}"):
            self._lock(session_id, writer)
            writer.execute(
                "UPDATE harness_sessions SET writer_host = %s, writer_pid = %s WHERE id = %s",
                (*me(), session_id),
            )
            log = PostgresLog(self, session_id, writer)
            log.replay(self._lines(session_id, writer))
        return log

    def delete(self, session_id: str) -> None:
        """Remove the session's rows (its events go with it: ON DELETE CASCADE) under its
        writer lock, on a connection of its own, so no writer is cut off mid-turn."""
        check_session_id(session_id)
        with self.connect() as conn, translated(self.raw_url, f"cannot delete {session_id}"):
            self._lock(session_id, conn)
            with conn.transaction():
                conn.execute("DELETE FROM harness_sessions WHERE id = %s", (session_id,))

    def rename(self, session_id: str, title: str) -> None:
        """Set the session's `name`, which the listing shows over its first prompt: one
        statement, no lock (the events are not touched)."""
        from harness_core.log import check_title

        title = check_title(title)
        check_session_id(session_id)
        with translated(self.raw_url, f"cannot rename {session_id}"):
            renamed = self.shared().execute(
                "UPDATE harness_sessions SET name = %s WHERE id = %s", (title, session_id)
            )
        if renamed.rowcount == 0:
            raise SessionNotFound(f"no session {session_id!r} in {self.url}")

    def _lock(self, session_id: str, conn: psycopg.Connection[Any]) -> None:
        """Take the session's writer lock on `conn`: SessionNotFound for an unknown id,
        SessionLocked naming the holder (host and pid) while another connection has it."""
        from harness_core.log import SessionLocked

        from ._log import LOCK

        self._holder(session_id, conn)
        locked = conn.execute(LOCK, (session_id,)).fetchone()
        if not (locked and locked[0]):
            # The holder's row may be a moment behind its lock: read it again now.
            host, pid = self._holder(session_id, conn)
            raise SessionLocked(session_id, pid, host)

    def _holder(
        self, session_id: str, conn: psycopg.Connection[Any]
    ) -> tuple[str | None, int | None]:
        found = conn.execute(
            "SELECT writer_host, writer_pid FROM harness_sessions WHERE id = %s", (session_id,)
        ).fetchall()
        if not found:
            raise SessionNotFound(f"no session {session_id!r} in {self.url}")
        host, pid = found[0]
        return (host if isinstance(host, str) else None, pid if isinstance(pid, int) else None)

    # -- queries ---------------------------------------------------------------------------

    def list(self) -> list[SessionSummary]:
        with translated(self.raw_url, "cannot list the sessions"):
            rows = self.query(_LIST, ())
        return [
            SessionSummary(
                id=id,
                created=created,
                updated=updated,
                events=events,
                title=title,
                parent_session=parent,
                cwd=cwd,
            )
            for id, created, updated, events, title, parent, cwd in rows
        ]

    def latest(self, session_id: str, types: Collection[str]) -> Event | None:
        """One index lookup a type ((session_id, type, seq)), never a scan of the session."""
        check_session_id(session_id)
        with translated(self.raw_url, f"cannot read session {session_id}"):
            rows = self.query(_LATEST, (sorted(types), session_id))
            if not rows:
                self._holder(session_id, self.shared())  # SessionNotFound for an unknown id
                return None
        return event_of(bytes(rows[0][0]))

    def read(self, session_id: str) -> Iterator[Event]:
        yield from self.open(session_id, writable=False).events

    def lines(self, session_id: str) -> Iterator[bytes]:
        """The envelope lines as they were written: the bytes a file would hold."""
        check_session_id(session_id)
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
                self._holder(session_id, conn)  # SessionNotFound, or no rows yet

    def blocks(
        self, session_id: str, conn: psycopg.Connection[Any] | None, *, after: int = -1
    ) -> Iterator[builtins.list[bytes]]:
        """The session's lines after seq `after`, `BLOCK` rows a query (keyset by seq)."""
        from ._log import BLOCK

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


def event_of(line: bytes) -> Event:
    """The event of one stored envelope line (the store wrote it: it is well formed). The
    stdlib parser reads the same values from what orjson wrote, and for one line costs less
    than importing orjson (`harness todos ID` imports nothing else that needs it)."""
    import json

    return Event.from_json(json.loads(line))
