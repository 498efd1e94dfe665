"""The libpq read path (`_libpq`): the values psycopg would give, the store's queries
answered alike with and without it, and a dropped connection made again."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import psycopg
import pytest
from harness_core.log import EventTypeRegistry, StoreError
from harness_store_postgres import _libpq
from harness_store_postgres._libpq import LibpqError, LiteConnection, library
from harness_store_postgres._store import PostgresStore

VALUES = (
    "SELECT NULL::text, ''::text, 'caf\u00e9 \u2713'::text, true, false, 42::bigint, "
    "-7::int4, 3::int2, '\\x00ff0a'::bytea, current_schema(), %s::bigint"
)
ARRAY = "SELECT item FROM unnest(%s::text[]) WITH ORDINALITY AS u (item, n) ORDER BY n"
TRICKY = ['a"b', "c\\d", "", "e,f", "{g}", "NULL"]


@pytest.fixture
def lite(store_url: str) -> Iterator[LiteConnection]:
    lib = library()
    assert lib is not None, "libpq did not load: psycopg[binary] ships one"
    conn = LiteConnection(lib, store_url, 10)
    yield conn
    conn.close()


@pytest.fixture
def without_libpq(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As on a machine where no libpq can be loaded."""
    monkeypatch.setattr(_libpq, "_candidates", lambda: iter(()))
    library.cache_clear()
    yield
    library.cache_clear()


def test_values_are_those_psycopg_gives(store_url: str, lite: LiteConnection) -> None:
    with psycopg.connect(store_url) as conn:
        expected = conn.execute(VALUES, (2**40,)).fetchall()
    assert lite.rows(VALUES, (2**40,)) == expected
    assert lite.rows(ARRAY, (TRICKY,)) == [(item,) for item in TRICKY]  # parameters' quoting


def test_a_refused_query_is_the_servers_reason(lite: LiteConnection) -> None:
    with pytest.raises(LibpqError, match='relation "no_such_table" does not exist') as refused:
        lite.rows("SELECT * FROM no_such_table", ())
    assert refused.value.sqlstate == "42P01"  # as psycopg's UndefinedTable carries it
    assert lite.rows("SELECT 1::int4", ()) == [(1,)]  # the connection is still good


def _fill(url: str) -> tuple[PostgresStore, str]:
    store = PostgresStore(url, EventTypeRegistry())
    with store.create(system_prompt="sys") as log:
        log.append("turn/start", {}, turn=1)
        log.append("message/user", {"text": "hi \u2713"}, turn=1)
        log.append("turn/end", {"status": "completed"}, turn=1)
    with store.create(system_prompt="sys") as other:
        other.append("turn/start", {}, turn=1)
    return store, log.session_id


def _answers(store: PostgresStore, session: str) -> tuple[object, ...]:
    try:
        missing: object = store.latest("nope", ["turn/start"])
    except LookupError as exc:
        missing = str(exc)
    return (
        store.list(),
        store.latest(session, ["message/user", "turn/start"]),
        store.latest(session, ["no/such-type"]),
        missing,
    )


def test_the_store_answers_alike_without_libpq(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, session = _fill(store_url)
    store = PostgresStore(store_url, EventTypeRegistry())
    light = _answers(store, session)
    assert store._lite is not None and store._shared is None  # never psycopg for these
    monkeypatch.setattr(_libpq, "_candidates", lambda: iter(()))
    library.cache_clear()
    try:
        fallback = PostgresStore(store_url, EventTypeRegistry())
        assert _answers(fallback, session) == light
        assert fallback._lite is None and fallback._shared is not None
    finally:
        library.cache_clear()
    summary = light[0][1]  # type: ignore[index]
    assert summary.title == "hi \u2713" and summary.path is None


def test_never_initialised_is_refused_on_the_libpq_path(postgres_url: str) -> None:
    store = PostgresStore(postgres_url, EventTypeRegistry())
    with pytest.raises(StoreError, match="never initialised"):
        store.list()


def test_a_dropped_connection_is_made_again(store_url: str) -> None:
    store, _ = _fill(store_url)
    assert len(store.list()) == 2
    assert store._lite is not None
    ((pid,),) = store._lite.rows("SELECT pg_backend_pid()", ())
    with psycopg.connect(store_url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    # The first query after the cut may fail, in one line (as on psycopg); the next one
    # runs on a new connection.
    with contextlib.suppress(StoreError):
        store.list()
    assert len(store.list()) == 2


def test_no_libpq_falls_back_to_psycopg(store_url: str, without_libpq: None) -> None:
    assert library() is None
    store, session = _fill(store_url)
    assert [s.id for s in store.list()][-1] == session
    assert store._lite is None
