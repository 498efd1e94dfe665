"""harness-store-postgres: sessions in PostgreSQL, for `postgresql://` and `postgres://` URLs.

A namespace plugin: `name`, `inject` and hook implementations. `harness_session_store` answers
for its two schemes with a `PostgresStore` (`_store.py`), which connects on first use, so a
command that never reads a session never reaches the database. `harness store init` creates
or migrates the schema; `harness store copy SRC DST` moves sessions between any two stores
(`_command.py`). The module stays light: psycopg loads when a session is opened or written,
never for the one-shot queries (`sessions`, `todos ID`), which go through libpq (`_libpq.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    from harness_core.hosts import Command
    from harness_core.log import EventSink, EventTypeRegistry, Store

__all__ = ["SCHEMES", "harness_cli_commands", "harness_session_store", "inject", "name"]

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


@hookimpl
def harness_cli_commands() -> Sequence[Command]:
    from ._command import STORE

    return [STORE]
