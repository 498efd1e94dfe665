"""harness-store-postgres: sessions in PostgreSQL, for `postgresql://` and `postgres://` URLs.

A namespace plugin: `name`, `inject` and hook implementations. `harness_session_store` answers
for its two schemes with a `PostgresStore` (`_store.py`), which connects on first use, so a
command that never reads a session never reaches the database. `harness store init` (a core
command) creates or migrates its schema through `PostgresStore.initialise`. The module stays
light: psycopg loads when the store first connects.

`database_url`, `connect` and `failure` serve a plugin that keeps tables of its own beside the
store's (harness-worker): the database a store is in, a connection, and a database error as
the store's own one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    import psycopg
    from harness_core.log import EventSink, EventTypeRegistry, Store, StoreError

__all__ = [
    "SCHEMES",
    "connect",
    "database_url",
    "failure",
    "harness_session_store",
    "inject",
    "name",
]

name = "postgres"
inject = ()

SCHEMES = ("postgresql", "postgres")


@hookimpl
def harness_session_store(
    url: str, registry: EventTypeRegistry, on_append: EventSink | None
) -> Store | None:
    from harness_core.log import scheme_of

    if scheme_of(url) not in SCHEMES:
        return None
    from ._store import PostgresStore

    return PostgresStore(url, registry, on_append=on_append)


def database_url(store: Store) -> str | None:
    """The URL, password included, of the database `store` keeps its sessions in when it is
    a PostgreSQL store (else None): what another plugin connects to for tables of its own."""
    from ._store import PostgresStore

    return store.raw_url if isinstance(store, PostgresStore) else None


def connect(url: str) -> psycopg.Connection[tuple[Any, ...]]:
    """A connection (autocommit) to the database `url` names, or a one-line StoreError
    naming host, port and database and the server's reason, never the password."""
    from ._connect import connect

    return connect(url)


def failure(url: str, exc: BaseException, doing: str) -> StoreError:
    """The one line a database error while `doing` becomes: `PostgreSQL store
    HOST:PORT/DB: DOING: the server's reason`, never the password."""
    from ._connect import failure

    return failure(url, exc, doing)
