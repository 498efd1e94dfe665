"""A real PostgreSQL for tests, never a mock: the server HARNESS_TEST_POSTGRES names, and a
fresh schema of it for each test.

Without HARNESS_TEST_POSTGRES, or with no server answering, `server_url()` skips the test with
one line saying how to enable it; with HARNESS_TEST_POSTGRES_REQUIRED=1 (CI, `.ci/run`, which
installs and starts a server) it fails instead.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote

__all__ = ["ENABLE", "fresh_schema", "initialised", "server_url"]

ENABLE = (
    "PostgreSQL tests skipped: set HARNESS_TEST_POSTGRES=postgresql://USER:PASSWORD@HOST/DB "
    "(.ci/run, as root, installs and starts one)"
)


def server_url() -> str:
    """HARNESS_TEST_POSTGRES, once a server answers there; else skip (or fail in CI)."""
    import psycopg
    import pytest

    url = os.environ.get("HARNESS_TEST_POSTGRES")
    problem = "HARNESS_TEST_POSTGRES is not set"
    if url:
        try:
            psycopg.connect(url, connect_timeout=5).close()
            return url
        except psycopg.Error as exc:
            problem = f"no server answers at HARNESS_TEST_POSTGRES: {str(exc).strip()}"
    if os.environ.get("HARNESS_TEST_POSTGRES_REQUIRED") == "1":
        pytest.fail(f"HARNESS_TEST_POSTGRES_REQUIRED=1 but {problem}")
    pytest.skip(ENABLE)


@contextmanager
def fresh_schema(server: str) -> Iterator[str]:
    """A URL of `server` whose tables land in a new, empty schema (`search_path`), dropped
    on exit: tests share one database and never see each other's sessions."""
    import psycopg
    from psycopg import sql

    schema = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    separator = "&" if "?" in server else "?"
    try:
        yield f"{server}{separator}options={quote(f'-csearch_path={schema}')}"
    finally:
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def initialised(url: str) -> str:
    """`url` with the store's tables created (`harness store init`)."""
    from ._connect import connect
    from ._schema import init

    with connect(url) as conn:
        init(conn, "test")
    return url
