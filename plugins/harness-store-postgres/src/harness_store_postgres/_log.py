"""One session in PostgreSQL: the store's side of `SessionLog` (write, commit, read back).

A writer owns a connection of its own, on which it holds the session's advisory lock: the
server releases it when that connection ends, so a writer killed with -9 (or on a machine that
lost the network) never leaves a stale lock, and a writer on another machine is refused as
one on this machine is. Appends wait in memory until `commit`, which is one transaction: the
events' rows, the session's summary row and a NOTIFY to live readers, all or nothing. A reader
reads committed rows only, through the store's shared connection.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Final

import orjson
from harness_core.log import LogWriteError, SessionLog, StoreError

if TYPE_CHECKING:
    import psycopg

    from ._store import PostgresStore

__all__ = ["BLOCK", "PostgresLog", "Row"]

BLOCK: Final = 5000  # rows read a query at a time: memory stays at one block

# An event's row: session_id, seq, type, turn, ts, line (the envelope without its newline).
Row = tuple[str, int, str, int | None, str, bytes]

# A commit is one statement. In autocommit it is its own transaction (all or nothing, durable
# when it returns) and one round trip; as BEGIN, an INSERT a row, the UPDATE, the NOTIFY and
# COMMIT, it was a statement each for the server and eleven waits on the socket for psycopg.
# The statement's parts share one snapshot: a session's first commit inserts its summary row
# whole rather than updating the row it inserts.
_EVENTS: Final = (
    "events AS (INSERT INTO harness_events (session_id, seq, type, turn, ts, line) "
    "SELECT %(id)s::text, * FROM unnest(%(seq)s::bigint[], %(type)s::text[], "
    "%(turn)s::bigint[], %(ts)s::text[], %(line)s::bytea[]))"
)
# Only the id and seq are notified: a payload is limited to 8000 bytes; readers read the rows.
_NOTIFY: Final = "SELECT pg_notify(%(channel)s, %(id)s || ' ' || %(last)s::text)"
COMMIT: Final = (
    f"WITH {_EVENTS}, summary AS (UPDATE harness_sessions SET updated = %(updated)s, "
    "events = %(last)s::bigint + 1, title = coalesce(title, %(title)s) WHERE id = %(id)s) "
    f"{_NOTIFY}"
)
COMMIT_NEW: Final = (
    f"WITH {_EVENTS}, summary AS (INSERT INTO harness_sessions (id, created, updated, events, "
    "title, parent_session, cwd, writer_host, writer_pid) VALUES (%(id)s, %(created)s, "
    "%(updated)s, %(last)s::bigint + 1, %(title)s, %(parent)s, %(cwd)s, %(host)s, %(pid)s)) "
    f"{_NOTIFY}"
)
LOCK: Final = "SELECT pg_try_advisory_lock(hashtextextended(current_schema() || '/' || %s, 0))"


def let_go(writer: psycopg.Connection[Any]) -> None:
    """Close a writer's connection, its locks let go first. Closing alone returns before the
    server's process for the connection has ended, and the lock goes only as it ends: on a
    busy machine the next open of the session, even in this process, met it still held."""
    import psycopg

    try:
        writer.execute("SELECT pg_advisory_unlock_all()")
    except psycopg.Error:
        pass  # a dropped connection: its lock goes as the server's process ends
    finally:
        writer.close()


def row_of(session_id: str, line: bytes) -> Row:
    """An envelope line as its row: the columns are read from the line itself."""
    line = line.removesuffix(b"\n")
    obj = orjson.loads(line)
    return (session_id, obj["seq"], obj["type"], obj.get("turn"), obj["ts"], line)


def title_of(row: Row) -> str | None:
    """The listing's title: the text of the session's first message/user."""
    if row[2] != "message/user":
        return None
    text = orjson.loads(row[5]).get("data", {}).get("text")
    return text if isinstance(text, str) else None


def me() -> tuple[str, int]:
    """What a writer says of itself, so a refused one can name it."""
    import socket  # here: `harness todos ID` imports this module but never names a writer

    return socket.gethostname(), os.getpid()


class PostgresLog(SessionLog):
    """A session's rows, open for writing (its connection holds the lock) or reading."""

    def __init__(
        self,
        store: PostgresStore,
        session_id: str,
        writer: psycopg.Connection[Any] | None,
        *,
        start: tuple[str, str | None, str | None] | None = None,
    ) -> None:
        super().__init__(session_id, store.registry, writable=writer is not None)
        self._store = store
        self._writer = writer
        self._pending: list[Row] = []
        # A session being created: (created, parent_session, cwd) of the row its first
        # commit inserts, in the same transaction as its session/start.
        self._start = start
        # The first message/user this writer appends; the row keeps the first one ever
        # (`coalesce`), so a writer need not know whether the session has one.
        self._title: str | None = None

    # -- the store's side of SessionLog (its public persistence methods) --------------------

    def persist(self, line: bytes, seq: int, type: str) -> None:
        try:
            row = row_of(self.session_id, line)
        except (orjson.JSONDecodeError, KeyError) as exc:  # never: SessionLog built the line
            raise LogWriteError(f"session {self.session_id}: {exc}") from None
        if self._title is None:
            self._title = title_of(row)
        self._pending.append(row)

    def make_durable(self) -> None:
        rows = self._pending
        if not rows:
            return
        import psycopg

        assert self._writer is not None
        try:
            self._transaction(self._writer, rows)
        except psycopg.OperationalError as exc:
            if not self._writer.broken:
                raise LogWriteError(self._failed(exc)) from None
            self._retry(rows, exc)  # the connection dropped: again on a new one, if safe
        except psycopg.Error as exc:
            raise LogWriteError(self._failed(exc)) from None
        self._pending = []
        self._start = None

    def _transaction(self, conn: psycopg.Connection[Any], rows: list[Row]) -> None:
        """The commit: the rows, the summary and the notification, in one statement."""
        _, seq, kind, turn, ts, line = (list(column) for column in zip(*rows, strict=True))
        values: dict[str, object] = {
            "id": self.session_id,
            "seq": seq,
            "type": kind,
            "turn": turn,
            "ts": ts,
            "line": line,
            "updated": ts[-1],
            "last": seq[-1],
            "title": self._title,
            "channel": self._store.channel,
        }
        if self._start is None:
            conn.execute(COMMIT, values)
            return
        created, parent, cwd = self._start
        host, pid = me()
        more = {"created": created, "parent": parent, "cwd": cwd, "host": host, "pid": pid}
        conn.execute(COMMIT_NEW, values | more)

    def _retry(self, rows: list[Row], exc: Exception) -> None:
        """Commit `rows` on a new connection after the writer's dropped, when that is safe:
        the lock is ours again (it went with the old connection) and the session ends where
        it did before these rows. If it ends at their last one, the commit went through
        before the connection dropped, and nothing is written twice."""
        import psycopg

        try:
            conn = self._store.connect()
        except StoreError as again:
            raise LogWriteError(str(again)) from None
        try:
            locked = conn.execute(LOCK, (self.session_id,)).fetchone()
            if not (locked and locked[0]):
                raise LogWriteError(self._failed(exc, "another writer took the session"))
            got = conn.execute(
                "SELECT max(seq) FROM harness_events WHERE session_id = %s", (self.session_id,)
            ).fetchone()
            last = got[0] if got else None
            if last != rows[-1][1]:
                if last != (rows[0][1] - 1 if self._start is None else None):
                    raise LogWriteError(self._failed(exc, "the session changed meanwhile"))
                self._transaction(conn, rows)
        except psycopg.Error as again:
            conn.close()
            raise LogWriteError(self._failed(again)) from None
        except BaseException:
            conn.close()
            raise
        old, self._writer = self._writer, conn
        if old is not None:
            old.close()

    def _failed(self, exc: BaseException, why: str | None = None) -> str:
        from ._connect import failure

        doing = f"cannot commit session {self.session_id}" + (f" ({why})" if why else "")
        return str(failure(self._store.raw_url, exc, doing))

    def stored_blocks(self) -> Iterator[list[bytes]]:
        # What this writer appended and has not committed yet is part of its session too,
        # as the file store's unsynced lines are.
        pending = [row[5] for row in self._pending]
        yield from self._store.blocks(self.session_id, self._writer)
        if pending:
            yield pending

    def unread_lines(self) -> list[bytes]:
        lines: list[bytes] = []
        for block in self._store.blocks(self.session_id, None, after=self.next_seq - 1):
            lines += block
        return lines

    def release(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            let_go(writer)

    def describe(self) -> str:
        return f"session {self.session_id}"
