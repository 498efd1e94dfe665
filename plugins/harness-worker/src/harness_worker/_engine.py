"""DBOS, as harness uses it: one partitioned queue of turns in the store's database.

Each turn is a DBOS workflow (`harness_turn`, `_turn.py`) enqueued on the queue `QUEUE`
with its session id as the partition key; a partition runs one workflow at a time across
every worker, so a session's turns run one at a time and in the order they were queued.
Submitting needs only a `DBOSClient` (no workflow code, no launch); a worker launches DBOS
with its identity as the executor id, so one restarted with the same id recovers its own
pending turns, and `recover` hands a dead worker's turns back to the queue.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from harness_core.hosts import CommandError
from harness_core.log import Store

if TYPE_CHECKING:
    import psycopg
    from dbos import DBOSClient

    Connection = psycopg.Connection[tuple[Any, ...]]

__all__ = [
    "QUEUE",
    "VERSION",
    "WORKFLOW",
    "client",
    "database_url",
    "enqueue",
    "launch",
    "outcome",
    "pending",
    "postgres_url",
    "queue_schema",
    "quiet_dbos",
    "recover",
    "store_ready",
    "system_schema",
    "with_application_name",
]

QUEUE: Final = "harness_turns"
WORKFLOW: Final = "harness_turn"
# Every worker and submitter names the same application version: DBOS runs a workflow only
# on executors of the version it was queued under, and harness's workflow is one function
# whose meaning this version pins (not a hash of its source, DBOS's default).
VERSION: Final = "harness-worker-1"
# How often a worker looks at the queue (DBOS's default is a second). Each look costs about
# 5 ms of CPU on the development VM: an idle worker used 3% of a core at 1 s, 8% at 0.1 s and
# 11% at 0.05 s. At 0.1 s a queued turn starts within a tenth of a second.
POLL_SECONDS: Final = 0.1


def postgres_url(store: Store) -> str | None:
    """The PostgreSQL URL of the store (DBOS keeps its tables in the same database), or None
    for a store that is not a PostgreSQL one."""
    from harness_store_postgres import database_url

    raw = database_url(store)
    if raw is None or not raw.startswith(("postgresql://", "postgres://")):
        return None
    return "postgresql://" + raw.split("://", 1)[1]


def with_application_name(url: str, name: str) -> str:
    """`url` with its connections named `name` (libpq's `application_name` parameter)."""
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit

    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, True) if k != "application_name"]
    query.append(("application_name", name))
    return parts._replace(query=urlencode(query, quote_via=quote)).geturl()


def database_url(store: Store) -> str:
    """`postgres_url`, or a one-line error for a store that is not a PostgreSQL one."""
    url = postgres_url(store)
    if url is None:
        raise CommandError(
            f"workers share a PostgreSQL store, and the store is {store.url}: name one with "
            "--store postgresql://USER@HOST/DATABASE (or HARNESS_STORE)"
        )
    return url


def store_ready(store: Store) -> None:
    """The store's own check of its schema, before anything is made beside it: on a database
    where `harness store init` never ran this is its one line naming that command, and
    neither DBOS's tables nor harness-worker's are made. (Any query of the store checks its
    schema first; this one asks for a session no store holds, by a well-formed id, so the
    query is made.)"""
    from harness_core.log import SessionNotFound

    with suppress(SessionNotFound):
        store.latest("no-such-session", ("session/start",))


def quiet_dbos() -> None:
    """DBOS logs each launch, queue and recovery at INFO; harness's own lines say what
    matters, so only DBOS's warnings show."""
    logging.getLogger("dbos").setLevel(logging.WARNING)


@contextmanager
def translated(url: str, doing: str) -> Iterator[None]:
    """A database error inside (psycopg's, or SQLAlchemy's and DBOS's around it) becomes
    the store's one line: host, port, database and the server's reason, no password."""
    try:
        yield
    except Exception as exc:
        if not type(exc).__module__.startswith(("psycopg", "sqlalchemy", "dbos")):
            raise
        from harness_store_postgres import failure

        raise failure(url, getattr(exc, "orig", None) or exc, doing) from None


def system_schema(store_schema: str) -> str:
    """DBOS's schema beside the store's: `dbos` for a store in `public`, else one per store
    schema, so two stores in one database (`search_path`) never share a queue."""
    return "dbos" if store_schema == "public" else f"dbos_{store_schema}"[:63]


def queue_schema(conn: Connection, url: str) -> str:
    """DBOS's schema for the store `conn` is on (the database `url` names), harness-worker's
    tables and DBOS's made first where they are missing (a submit may come before any worker
    ever started). A worker's launch migrates DBOS's tables; a submitter makes them only
    where there are none, the one case it imports DBOS."""
    from . import _tables

    schema = system_schema(_tables.ensure(conn))
    if not _tables.exists(conn, schema, "workflow_status"):
        quiet_dbos()
        from dbos import DBOS

        with translated(url, "cannot make the queue's tables"):
            DBOS.migrate(url, schema=schema)
    return schema


def client(url: str) -> DBOSClient:
    """A client of the queue in `url`'s database (`serve --queue` asks it what runs and
    waits, and cancels)."""
    from . import _tables

    with _tables.connect(url) as conn:
        schema = queue_schema(conn, url)
    quiet_dbos()
    from dbos import DBOSClient

    with translated(url, "cannot reach the queue"):
        return DBOSClient(
            system_database_url=url, dbos_system_schema=schema, retry_connection_errors=False
        )


def enqueue(
    conn: Connection, schema: str, job: dict[str, Any], workflow_id: str | None = None
) -> str:
    """Queue the turn `job` describes behind its session's earlier turns: its workflow id
    (`workflow_id`, else SESSION/UUID).

    Through DBOS's own SQL client, `enqueue_workflow` (its documented function for queueing
    from the database, arguments as portable JSON), on the store's connection: a submitting
    process need not import DBOS, which costs it a third of a second. Every id starts with
    the session's, so what a session has queued is one prefix (`_queue.py`).
    """
    import json
    import uuid

    from psycopg import sql

    query = sql.SQL(
        "SELECT {}.enqueue_workflow(workflow_name => %s, queue_name => %s, "
        "positional_args => ARRAY[%s::json], workflow_id => %s, app_version => %s, "
        "queue_partition_key => %s)"
    ).format(sql.Identifier(schema))
    chosen = workflow_id or f"{job['session']}/{uuid.uuid4()}"
    row = conn.execute(
        query, (WORKFLOW, QUEUE, json.dumps(job), chosen, VERSION, job["session"])
    ).fetchone()
    return str(row[0]) if row else chosen


def outcome(conn: Connection, schema: str, workflow_id: str) -> tuple[str, Any, str | None]:
    """The workflow's status and, once it ended, its result (the turn's summary) or error,
    from DBOS's documented system tables."""
    import json

    from psycopg import sql

    query = sql.SQL(
        "SELECT s.status, o.output, o.error FROM {0}.workflow_status s "
        "LEFT JOIN {0}.workflow_output o USING (workflow_uuid) WHERE s.workflow_uuid = %s"
    ).format(sql.Identifier(schema))
    row = conn.execute(query, (workflow_id,)).fetchone()
    if row is None:
        return "UNKNOWN", None, None
    status, output, error = row
    return str(status), json.loads(output) if output else None, error


def pending(conn: Connection, schema: str, worker_id: str) -> int:
    """How many of the queue's workflows DBOS holds PENDING for the executor `worker_id`,
    from its documented system table (read after DBOS was shut down in this process)."""
    from psycopg import sql

    query = sql.SQL(
        "SELECT count(*) FROM {}.workflow_status "
        "WHERE executor_id = %s AND queue_name = %s AND status = 'PENDING'"
    ).format(sql.Identifier(schema))
    row = conn.execute(query, (worker_id, QUEUE)).fetchone()
    return int(row[0]) if row else 0


def launch(url: str, schema: str, worker_id: str, concurrency: int, app_name: str) -> None:
    """Start DBOS in this process as the executor `worker_id`, taking up to `concurrency`
    turns at once from the queue (and first its own turns a previous run left pending), each
    of its connections named `app_name`."""
    quiet_dbos()
    from dbos import DBOS

    from . import _turn  # registers the workflow before launch, as DBOS requires

    del _turn
    DBOS(
        config={
            "name": "harness",
            "system_database_url": url,
            "dbos_system_schema": schema,
            "executor_id": worker_id,
            "application_version": VERSION,
            "log_level": "WARNING",
            "sys_db_pool_size": max(4, 2 * concurrency + 2),
            # DBOS names its connections `dbos_transact` unless told otherwise.
            "db_engine_kwargs": {"connect_args": {"application_name": app_name}},
        }
    )
    with translated(url, "cannot start the worker"):
        DBOS.launch()
        DBOS.register_queue(
            QUEUE,
            worker_concurrency=concurrency,
            partition_concurrency=1,
            polling_interval_sec=POLL_SECONDS,
            on_conflict="always_update",
        )


def recover(worker_ids: list[str]) -> int:
    """Hand the turns the workers `worker_ids` were running back to the queue, to be run
    by whichever worker takes them next: how many there were.

    DBOS recovers an executor's pending workflows when an executor with the same id starts
    again, and not on its own when one dies for good. Its public API does it here: the
    peer's PENDING workflows (`DBOS.list_workflows`), each resumed on the queue
    (`DBOS.resume_workflow`, which enqueues it again in its partition and leaves a workflow
    that has ended alone); the workflow then runs again from its recorded steps.
    """
    from dbos import DBOS

    flows = DBOS.list_workflows(
        status="PENDING",
        executor_id=worker_ids,
        queue_name=QUEUE,
        load_input=False,
        load_output=False,
    )
    for flow in flows:
        DBOS.resume_workflow(flow.workflow_id, queue_name=QUEUE)
    return len(flows)
