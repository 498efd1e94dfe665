"""Connecting to the database a URL names, and the one line a failure becomes.

A failure names the host, port and database and gives the server's reason, never the
password (the URL is shown redacted, and the password's text is cut from the reason too, in
case a server or libpq ever echoes it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Final

from harness_core.log import StoreError, redact_url

if TYPE_CHECKING:
    import psycopg

__all__ = ["connect", "failure", "translated", "where"]

# libpq waits for ever by default; a store that cannot be reached should say so.
CONNECT_TIMEOUT: Final = 10


def _params(url: str) -> dict[str, str] | None:
    """The parameters libpq reads from `url` (psycopg's reading of it), None for a malformed
    one."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {key: str(value) for key, value in conninfo_to_dict(url).items()}
    except Exception:
        return None


def where(url: str) -> str:
    """`host:port/database` of `url`, as libpq would resolve them."""
    params = _params(url)
    if params is None:  # a malformed URL: the redacted URL itself is the best name for it
        return redact_url(url)
    host = str(params.get("host") or "localhost")
    port = str(params.get("port") or 5432)
    database = str(params.get("dbname") or params.get("user") or "")
    return f"{host}:{port}/{database}"


def failure(url: str, exc: BaseException, doing: str) -> StoreError:
    """One line for a psycopg error while `doing`: where, and the server's reason."""
    return StoreError(f"PostgreSQL store {where(url)}: {doing}: {_reason(url, exc)}")


def _reason(url: str, exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    # libpq: 'connection failed: connection to server at "h" (1.2.3.4), port 5432 failed:
    # FATAL:  password authentication failed ...': the server's reason is the last part.
    text = text.rsplit(" failed: ", 1)[-1]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    reason = lines[0] if lines else type(exc).__name__
    # psycopg says "connection is bad: " before what libpq alone says.
    for prefix in ("FATAL:", "ERROR:", "connection is bad:"):
        reason = reason.removeprefix(prefix).strip()
    # libpq quotes a URL it cannot parse whole, password and all: show it redacted. A URL
    # it parsed may still have its password echoed: cut the password's text too.
    reason = reason.replace(url, redact_url(url))
    password = _password(url)
    return reason.replace(password, "[redacted]") if password else reason


def _password(url: str) -> str | None:
    return (_params(url) or {}).get("password") or None


def connect(url: str, *, autocommit: bool = True) -> psycopg.Connection[tuple[object, ...]]:
    """A connection to `url`, or StoreError in one line."""
    import psycopg

    try:
        return psycopg.connect(url, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as exc:
        raise failure(url, exc, "cannot connect") from None


@contextmanager
def translated(url: str, doing: str) -> Iterator[None]:
    """psycopg's errors inside become a one-line StoreError (a dropped connection, a query
    the server refused): a user sees the reason, not a traceback."""
    import psycopg

    try:
        yield
    except psycopg.Error as exc:
        raise failure(url, exc, doing) from None
