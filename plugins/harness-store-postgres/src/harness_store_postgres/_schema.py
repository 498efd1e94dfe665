"""The store's schema: created and migrated by `harness store init`, checked on first use.

The tables live in the connection's current schema (`search_path`; `public` unless the URL
says otherwise, as in `?options=-csearch_path%3Dteam`), so one database can hold several
stores. `harness_schema` records the version; a database at a newer version than this plugin
knows is refused rather than written in a layout it does not understand.

    harness_sessions  one row a session: its summary (kept current by each commit, so a
                      listing reads one row a session), the host and pid of its last writer,
                      and `name`, the title `Store.rename` gave it (version 2), which the
                      listing shows instead of `title`, the first prompt
    harness_events    one row an event: the envelope line as written (so `harness events`
                      prints the very bytes a file would hold) and its seq, type, turn and ts
                      as columns. The primary key (session_id, seq) makes a duplicate seq
                      impossible, and (session_id, type, seq) answers the plan query
                      ("the newest todo/write") with one index lookup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from harness_core.log import StoreError

if TYPE_CHECKING:
    import psycopg

__all__ = ["VERSION", "check", "init"]

VERSION: Final = 2

# Each step takes the schema from the version before it to its own; init runs those not done.
_MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    1: (
        """CREATE TABLE harness_sessions (
            id text PRIMARY KEY,
            created text NOT NULL,
            updated text NOT NULL,
            events bigint NOT NULL DEFAULT 0,
            title text,
            parent_session text,
            cwd text,
            writer_host text,
            writer_pid integer
        )""",
        """CREATE TABLE harness_events (
            session_id text NOT NULL REFERENCES harness_sessions (id) ON DELETE CASCADE,
            seq bigint NOT NULL,
            type text NOT NULL,
            turn bigint,
            ts text NOT NULL,
            line bytea NOT NULL,
            PRIMARY KEY (session_id, seq)
        )""",
        "CREATE INDEX harness_events_type ON harness_events (session_id, type, seq)",
        "CREATE INDEX harness_sessions_updated ON harness_sessions (updated DESC, id DESC)",
    ),
    2: ("ALTER TABLE harness_sessions ADD COLUMN name text",),
}

# Two `store init` at once: the second waits for the first instead of failing halfway.
_INIT_LOCK: Final = 0x6861726E657373  # "harness"


def init(conn: psycopg.Connection[tuple[object, ...]], shown: str) -> tuple[int, int]:
    """Create or migrate the schema in one transaction; (version before, version now)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_INIT_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS harness_schema (version integer NOT NULL)")
        row = conn.execute("SELECT max(version) FROM harness_schema").fetchone()
        before = int(row[0]) if row and row[0] is not None else 0  # type: ignore[call-overload]
        _refuse_newer(before, shown)
        for version in range(before + 1, VERSION + 1):
            for statement in _MIGRATIONS[version]:
                conn.execute(statement)
        conn.execute("DELETE FROM harness_schema")
        conn.execute("INSERT INTO harness_schema (version) VALUES (%s)", (max(before, VERSION),))
    return before, max(before, VERSION)


def check(conn: psycopg.Connection[tuple[object, ...]], shown: str) -> str:
    """StoreError in one line unless the schema is one this plugin reads and writes; else
    the current schema's name. One round trip: the version is read, and a missing table is
    the answer "never initialised"."""
    from psycopg.errors import UndefinedTable

    try:
        found = conn.execute("SELECT max(version), current_schema() FROM harness_schema").fetchall()
    except UndefinedTable:
        found = []
    version = found[0][0] if found and isinstance(found[0][0], int) else 0
    name = found[0][1] if found else None
    if version == 0:
        raise StoreError(
            f"the store {shown} was never initialised: run `harness store init --store URL` "
            "once (it creates the tables)"
        )
    _refuse_newer(version, shown)
    if version < VERSION:
        raise StoreError(
            f"the store {shown} has schema version {version}, older than this plugin's "
            f"{VERSION}: run `harness store init --store URL` to migrate it"
        )
    return str(name or "")


def _refuse_newer(version: int, shown: str) -> None:
    if version > VERSION:
        raise StoreError(
            f"the store {shown} has schema version {version}, newer than this "
            f"harness-store-postgres knows ({VERSION}): upgrade the plugin"
        )
