"""The Postgres store beyond the conformance suite: writers in other processes (refused,
killed with -9), the schema's versions, the never-initialised database, live notifications,
connection failures in one line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from harness_core.log import SessionLocked, StoreError
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.testing.store_conformance import conformance_registry
from harness_core.tools import ToolRegistry
from harness_store_postgres._connect import connect
from harness_store_postgres._schema import VERSION, init
from harness_store_postgres._store import PostgresStore

WRITER = Path(__file__).with_name("pg_writer.py")


@contextmanager
def writer(url: str, mode: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """A writer process that holds a new session (its id), killed with -9 on exit."""
    process = subprocess.Popen(
        [sys.executable, str(WRITER), url, mode], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        session_id = process.stdout.readline().strip()
        assert session_id, "the writer process printed no session id"
        yield process, session_id
    finally:
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_a_second_writer_process_is_refused_naming_host_and_pid_until_the_first_dies(
    store_url: str,
) -> None:
    store = PostgresStore(store_url, conformance_registry())
    with writer(store_url, "hold") as (process, session_id):
        with pytest.raises(SessionLocked) as refused:
            store.open(session_id)
        message = str(refused.value)
        assert f"process {process.pid} on {socket.gethostname()}" in message
        assert refused.value.holder == process.pid
        assert (refused.value.host, refused.value.path) == (socket.gethostname(), None)
        assert [e.data.get("text") for e in store.read(session_id)][2] == "committed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    # The server let the lock go with the dead writer's connection: no stale lock.
    with store.open(session_id) as log:
        assert log.next_seq == 4


def test_a_session_its_writer_closed_opens_again_while_the_old_connection_lingers(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing a connection returns before the server's process for it ends, and a lock
    held by that process lasts until it does: on a busy machine the next open in the same
    process met the session still locked. A close that leaves the connection open stands in
    for such a server here; the writer lets its lock go before it closes."""
    store = PostgresStore(store_url, conformance_registry())
    with store.create() as log:
        session_id = log.session_id
    lingering: list[psycopg.Connection[object]] = []
    monkeypatch.setattr(psycopg.Connection, "close", lambda conn: lingering.append(conn))
    try:
        with store.open(session_id):
            pass
        assert lingering, "the writer closed no connection"
        with store.open(session_id) as log:
            assert log.next_seq == 1
    finally:
        monkeypatch.undo()
        for conn in lingering:
            conn.close()


def test_kill_9_mid_turn_keeps_what_was_committed_and_the_next_open_repairs_the_turn(
    store_url: str,
) -> None:
    store = PostgresStore(store_url, conformance_registry())
    with writer(store_url, "crash") as (process, session_id):
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
    types = [e.type for e in store.read(session_id)]
    assert types[4:] == [
        "turn/start",
        "message/user",
        "message/assistant",
    ]  # the note appended after the last commit never reached the database
    with store.open(session_id) as log:
        assert Agent(log, ScriptedModel([]), ToolRegistry()).repair()
    events = list(store.read(session_id))
    assert [e.type for e in events[-2:]] == ["tool/result", "turn/end"]
    assert events[-1].data["status"] == "error"
    assert [e.seq for e in events] == list(range(len(events)))


def test_store_init_is_idempotent_and_a_newer_schema_is_refused(postgres_url: str) -> None:
    with connect(postgres_url) as conn:
        assert init(conn, "db") == (0, VERSION)
        assert init(conn, "db") == (VERSION, VERSION)
        conn.execute("UPDATE harness_schema SET version = %s", (VERSION + 1,))
        with pytest.raises(StoreError, match=f"schema version {VERSION + 1}, newer than"):
            init(conn, "db")
    store = PostgresStore(postgres_url, conformance_registry())
    with pytest.raises(StoreError, match="upgrade the plugin") as refused:
        store.list()
    assert "\n" not in str(refused.value)


def test_a_database_never_initialised_names_harness_store_init(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, conformance_registry())
    for attempt in (store.list, lambda: store.create(), lambda: store.open("x", writable=False)):
        with pytest.raises(StoreError, match=r"never initialised: run `harness store init"):
            attempt()


def test_a_live_reader_is_notified_of_another_processs_commit(store_url: str) -> None:
    store = PostgresStore(store_url, conformance_registry())
    with store.create() as log:
        session_id = log.session_id
    heard: list[tuple[str, int]] = []
    arrived = threading.Event()

    def notify(session: str, seq: int) -> None:
        heard.append((session, seq))
        arrived.set()

    stop = store.subscribe(notify)
    try:
        appended = subprocess.run(
            [sys.executable, str(WRITER), store_url, "append", session_id],
            capture_output=True,
            text=True,
            check=True,
        )
        assert arrived.wait(10), "no notification within 10 s"
    finally:
        stop()
    assert heard == [(session_id, int(appended.stdout) + 1)]  # the turn/end after the note
    reader = store.open(session_id, writable=False)
    assert reader.events[-2].data["text"] == "from another process"


def test_a_reader_catches_up_with_refresh(store_url: str) -> None:
    store = PostgresStore(store_url, conformance_registry())
    with store.create() as log:
        reader = store.open(log.session_id, writable=False)
        log.append("turn/start", {}, turn=1)
        assert reader.refresh() == []  # not committed yet: a reader sees commits only
        log.commit()
        (event,) = reader.refresh()
        assert (event.seq, event.type) == (1, "turn/start")


def test_a_commit_after_the_connection_dropped_is_retried_on_a_new_one(store_url: str) -> None:
    """The server ended the writer's connection between two commits: the lock went with it,
    nobody took the session meanwhile, so the commit goes through on a new connection."""
    store = PostgresStore(store_url, conformance_registry())
    with store.create() as log:
        pid = log._writer.info.backend_pid  # type: ignore[union-attr]
        with connect(store_url) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        log.append("turn/start", {}, turn=1)
        log.commit()
        session_id = log.session_id
    assert [e.type for e in store.read(session_id)] == ["session/start", "turn/start"]


def test_a_connection_failure_is_one_line_without_the_password(postgres_server: str) -> None:
    info = psycopg.conninfo.conninfo_to_dict(postgres_server)
    url = f"postgresql://{info.get('user')}:wrong-s3cret-pw@{info['host']}:{info.get('port', 5432)}/{info['dbname']}"
    store = PostgresStore(url, conformance_registry())
    with pytest.raises(StoreError) as failed:
        store.list()
    message = str(failed.value)
    assert "\n" not in message and "wrong-s3cret-pw" not in message
    assert f"{info['host']}:{info.get('port', 5432)}/{info['dbname']}: cannot connect:" in message
    assert "[redacted]" in store.url and "wrong-s3cret-pw" not in store.url


def test_store_init_migrates_a_version_1_schema_keeping_its_sessions(postgres_url: str) -> None:
    """Schema 2 adds the title `rename` gives: a store made by the first version is refused
    until `init` migrates it, and its sessions are listed and renamed after."""
    from harness_store_postgres._schema import _MIGRATIONS

    with connect(postgres_url) as conn:
        conn.execute("CREATE TABLE harness_schema (version integer NOT NULL)")
        for statement in _MIGRATIONS[1]:
            conn.execute(statement)
        conn.execute("INSERT INTO harness_schema (version) VALUES (1)")
        conn.execute(
            "INSERT INTO harness_sessions (id, created, updated, events, title) "
            "VALUES ('20200101-000000-abcdef', 'c', 'u', 0, 'first prompt')"
        )
    store = PostgresStore(postgres_url, conformance_registry())
    with pytest.raises(StoreError, match=r"schema version 1, older .* `harness store init"):
        store.list()
    with connect(postgres_url) as conn:
        assert init(conn, "db") == (1, VERSION)
    store = PostgresStore(postgres_url, conformance_registry())
    assert [s.title for s in store.list()] == ["first prompt"]
    store.rename("20200101-000000-abcdef", "named")
    assert [s.title for s in store.list()] == ["named"]
