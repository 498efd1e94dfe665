"""harness-worker's two tables, beside the store's in its database and schema.

`harness_workers`: each worker's identity, host, pid and heartbeat. A running worker also
holds a session-level advisory lock on its id, on the connection that beats: the server lets
go of it the moment that process dies, so a peer tells a dead worker from a slow one at once,
and the lapsed heartbeat covers a machine that vanished without closing its connections.

`harness_tasks`: a batch's samples, each a session with one queued turn (its task's id and
repeat index, which pair it with the other variants' samples), and what the worker that ran it
recorded (status, check, steps, tokens, seconds, whether the plan was used). `harness batch
retry` gives a sample whose turn did not complete a new session on the same row; only the
turn of the row's current session may write it.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "Task",
    "Workers",
    "app_name",
    "connect",
    "ensure",
    "exists",
    "insert_tasks",
    "made",
    "record",
    "replace_sample",
    "tasks",
]

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS harness_workers (
    id text PRIMARY KEY,
    host text NOT NULL,
    pid integer NOT NULL,
    started timestamptz NOT NULL DEFAULT now(),
    beat timestamptz NOT NULL DEFAULT now(),
    ended timestamptz
);
CREATE TABLE IF NOT EXISTS harness_tasks (
    batch text NOT NULL,
    position integer NOT NULL,
    session_id text NOT NULL,
    workflow_id text,
    variant text,
    has_check boolean NOT NULL,
    state text NOT NULL DEFAULT 'queued',
    check_result text,
    steps integer,
    tokens_input bigint,
    tokens_output bigint,
    tokens_cached bigint,
    seconds double precision,
    plan_used boolean,
    PRIMARY KEY (batch, position)
);
-- Added with repeats; a row from before them has no task (it pairs with nothing) and repeat 0.
ALTER TABLE harness_tasks ADD COLUMN IF NOT EXISTS task_key text;
ALTER TABLE harness_tasks ADD COLUMN IF NOT EXISTS repeat_index integer NOT NULL DEFAULT 0;
-- Added with workspaces and retries: the job as queued (a retry queues it again), and where
-- the sample's workspace copy is while it exists.
ALTER TABLE harness_tasks ADD COLUMN IF NOT EXISTS job jsonb;
ALTER TABLE harness_tasks ADD COLUMN IF NOT EXISTS workspace_copy text;
"""
# Two processes making the tables at once would race on the catalog: one waits here.
_SCHEMA_LOCK: Final = "SELECT pg_advisory_xact_lock(hashtext('harness-worker schema'))"
# Advisory locks are the database's, not a schema's: the key names the store's schema too, or
# a worker of one store would hold the name of a worker of another in the same database.
_ID_LOCK: Final = "hashtextextended(current_schema() || '/harness-worker/' || %s, 0)"
_UNSCOPED_ID_LOCK: Final = "hashtext('harness-worker ' || %s)"  # what older workers hold


def app_name(worker_id: str, schema: str) -> str:
    """The `application_name` of every connection of the worker `worker_id` of the store in
    `schema`: a name is the store's (a peer ends a lapsed worker's connections by it, and
    stores in two schemas of one database may each have a worker of that name)."""
    return f"harness-worker {schema}/{worker_id}"[:63]


def store_schema(url: str) -> str:
    """The schema of the store at `url` (a connection of its own, closed again)."""
    with connect(url) as conn:
        return _current_schema(conn)


def _current_schema(conn: psycopg.Connection[tuple[Any, ...]]) -> str:
    """The first schema of the connection's search path that exists."""
    row = conn.execute("SELECT current_schema()").fetchone()
    return str(row[0]) if row and row[0] else "public"


def connect(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    """The store's own connection (autocommit): a failure is its one line."""
    from harness_store_postgres import connect

    return connect(url)


def ensure(conn: psycopg.Connection[tuple[Any, ...]]) -> str:
    """Make the tables if they are missing (idempotent): the schema they are in."""
    with conn.transaction():
        conn.execute(_SCHEMA_LOCK)
        conn.execute(SCHEMA)
    return _current_schema(conn)


def made(conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
    """Whether `ensure` ever ran in the connection's schema."""
    row = conn.execute("SELECT to_regclass('harness_tasks')").fetchone()
    return bool(row and row[0])


def exists(conn: psycopg.Connection[tuple[Any, ...]], schema: str, table: str) -> bool:
    row = conn.execute(
        "SELECT to_regclass(format('%%I.%%I', %s::text, %s::text))", (schema, table)
    ).fetchone()
    return bool(row and row[0])


class Workers:
    """This worker's row and lock, and what it sees of its peers."""

    def __init__(
        self, conn: psycopg.Connection[tuple[Any, ...]], worker_id: str, schema: str
    ) -> None:
        self.conn = conn
        self.id = worker_id
        self.schema = schema  # the store's, which names its workers' connections

    def claim(self) -> str | None:
        """Take this identity: None, or who holds it now ("host H, pid P"), by this key or by
        the one older workers hold (`_free`)."""
        if not self._lock(_ID_LOCK, self.id) or not self._free_by(_UNSCOPED_ID_LOCK, self.id):
            held = self.conn.execute(
                "SELECT host, pid FROM harness_workers WHERE id = %s", (self.id,)
            ).fetchone()
            return f"host {held[0]}, pid {held[1]}" if held else "another process"
        self.conn.execute(
            "INSERT INTO harness_workers (id, host, pid) VALUES (%s, %s, %s) "
            "ON CONFLICT (id) DO UPDATE SET host = excluded.host, pid = excluded.pid, "
            "started = now(), beat = now(), ended = NULL",
            (self.id, socket.gethostname(), os.getpid()),
        )
        return None

    def beat(self) -> None:
        self.conn.execute("UPDATE harness_workers SET beat = now() WHERE id = %s", (self.id,))

    def leave(self) -> None:
        self.conn.execute("UPDATE harness_workers SET ended = now() WHERE id = %s", (self.id,))

    def alive(self) -> bool:
        """Whether this worker still holds its place: a beat on its connection answers (a
        peer that took it for dead ended that connection)."""
        try:
            self.beat()
        except Exception:  # psycopg's: the connection was ended, or the server left
            return False
        return True

    def gone(self, lapse: float) -> list[str]:
        """Peers whose turns are for the taking: each whose process is gone (its lock is
        free) or whose heartbeat is older than `lapse` seconds. Each is marked ended here,
        so one peer, not every one, hands its turns back."""
        gone = []
        peers = self.conn.execute(
            "SELECT id, beat < now() - make_interval(secs => %s) FROM harness_workers "
            "WHERE id <> %s AND ended IS NULL",
            (lapse, self.id),
        ).fetchall()
        for peer, lapsed in peers:
            if lapsed or self._free(peer):
                ended = self.conn.execute(
                    "UPDATE harness_workers SET ended = now() WHERE id = %s AND ended IS NULL "
                    "RETURNING id",
                    (peer,),
                ).fetchone()
                if ended is not None:
                    self._end_connections(str(peer))
                    gone.append(str(peer))
        return gone

    def _end_connections(self, peer: str) -> None:
        """End a silent peer's connections: the session writer lock it may hold goes with
        them, so its turn can go on elsewhere (a process that is gone has none left)."""
        self.conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = %s AND datname = current_database()",
            (app_name(peer, self.schema),),
        )

    def _free(self, peer: str) -> bool:
        """Whether no process holds the peer's lock, by this key or by the one workers held
        before it named the schema: a fleet upgraded one worker at a time must not take a
        live older peer for dead (at worst an older namesake elsewhere makes it wait for the
        peer's heartbeat to lapse)."""
        return self._free_by(_ID_LOCK, peer) and self._free_by(_UNSCOPED_ID_LOCK, peer)

    def _free_by(self, key: str, worker_id: str) -> bool:
        if not self._lock(key, worker_id):
            return False
        self.conn.execute(f"SELECT pg_advisory_unlock({key})", (worker_id,))
        return True

    def _lock(self, key: str, worker_id: str) -> bool:
        """Take the advisory lock `key` of `worker_id` on this connection, if it is free."""
        row = self.conn.execute(f"SELECT pg_try_advisory_lock({key})", (worker_id,)).fetchone()
        return bool(row and row[0])


@dataclass(frozen=True, slots=True)
class Task:
    """One row of `harness_tasks`."""

    position: int
    session: str
    task: str | None
    repeat: int
    variant: str | None
    has_check: bool
    state: str
    check: str | None
    steps: int | None
    tokens: tuple[int, int, int] | None
    seconds: float | None
    plan_used: bool | None
    workflow: str | None = None
    job: dict[str, Any] | None = None
    workspace_copy: str | None = None


def insert_tasks(
    conn: psycopg.Connection[tuple[Any, ...]],
    batch: str,
    rows: list[tuple[int, str, str, str, int, str | None, bool, dict[str, Any]]],
) -> None:
    """(position, session, workflow id, task, repeat, variant, has a check, job) for each
    sample of `batch`."""
    from psycopg.types.json import Jsonb

    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO harness_tasks (batch, position, session_id, workflow_id, task_key, "
            "repeat_index, variant, has_check, job) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [(batch, *row[:-1], Jsonb(row[-1])) for row in rows],
        )


def record(
    conn: psycopg.Connection[tuple[Any, ...]],
    batch: str,
    position: int,
    session: str | None = None,
    **fields: Any,
) -> None:
    """Set `fields` on the row of the task at `position` of `batch`, if it still belongs to
    `session` (a retried sample's earlier turn writes nothing on its new one)."""
    if not fields:
        return
    columns = ", ".join(f"{name} = %s" for name in fields)
    conn.execute(
        f"UPDATE harness_tasks SET {columns} WHERE batch = %s AND position = %s "
        "AND (%s::text IS NULL OR session_id = %s::text)",
        (*fields.values(), batch, position, session, session),
    )


def replace_sample(
    conn: psycopg.Connection[tuple[Any, ...]],
    batch: str,
    position: int,
    workflow: str,
    job: dict[str, Any],
) -> None:
    """The row of a retried sample: its new session, workflow and job, queued, no results."""
    from psycopg.types.json import Jsonb

    conn.execute(
        "UPDATE harness_tasks SET session_id = %s, workflow_id = %s, job = %s, "
        "state = 'queued', check_result = NULL, steps = NULL, tokens_input = NULL, "
        "tokens_output = NULL, tokens_cached = NULL, seconds = NULL, plan_used = NULL, "
        "workspace_copy = NULL WHERE batch = %s AND position = %s",
        (job["session"], workflow, Jsonb(job), batch, position),
    )


def tasks(
    conn: psycopg.Connection[tuple[Any, ...]], batch: str, *, lock: bool = False
) -> list[Task]:
    """The batch's rows in order; `lock`: each held until the transaction ends (a retry)."""
    rows = conn.execute(
        "SELECT position, session_id, task_key, repeat_index, variant, has_check, state, "
        "check_result, steps, tokens_input, tokens_output, tokens_cached, seconds, plan_used, "
        "workflow_id, job, workspace_copy FROM harness_tasks "
        "WHERE batch = %s ORDER BY position" + (" FOR UPDATE" if lock else ""),
        (batch,),
    ).fetchall()
    return [
        Task(
            position=row[0],
            session=row[1],
            task=row[2],
            repeat=row[3],
            variant=row[4],
            has_check=row[5],
            state=row[6],
            check=row[7],
            steps=row[8],
            tokens=None if row[9] is None else (row[9], row[10], row[11]),
            seconds=row[12],
            plan_used=row[13],
            workflow=row[14],
            job=row[15],
            workspace_copy=row[16],
        )
        for row in rows
    ]
