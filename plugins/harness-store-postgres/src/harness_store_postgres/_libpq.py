"""A small read-only client over libpq itself (ctypes), for the store's one-shot queries.

`import psycopg` costs more than the rest of `harness sessions` or `harness todos ID` (it
builds its adapters, error classes and type registry), while those commands send one or two
short queries. They go through libpq directly: the very library psycopg[binary] ships (found
without importing psycopg), else the system's `libpq.so.5`. When neither loads, `library()`
is None and the store uses psycopg for them too. Writers, LISTEN and the bulk reads stay on
psycopg.

Only what the queries need: text parameters (str, int, a list of str), and results in binary
format for the column types the store's tables use, as the Python values psycopg gives.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, Final

__all__ = ["Libpq", "LibpqError", "LiteConnection", "conninfo", "library"]

_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i = ctypes.c_int

# name: (result, arguments), from libpq-fe.h.
_SIGNATURES: Final[dict[str, tuple[Any, list[Any]]]] = {
    "PQconnectdbParams": (_p, [ctypes.POINTER(_s), ctypes.POINTER(_s), _i]),
    "PQstatus": (_i, [_p]),
    "PQerrorMessage": (_s, [_p]),
    "PQfinish": (None, [_p]),
    "PQexecParams": (_p, [_p, _s, _i, _p, ctypes.POINTER(_s), _p, _p, _i]),
    "PQresultStatus": (_i, [_p]),
    "PQresultErrorField": (_s, [_p, _i]),
    "PQntuples": (_i, [_p]),
    "PQnfields": (_i, [_p]),
    "PQftype": (ctypes.c_uint, [_p, _i]),
    "PQgetisnull": (_i, [_p, _i, _i]),
    "PQgetlength": (_i, [_p, _i, _i]),
    "PQgetvalue": (_p, [_p, _i, _i]),
    "PQclear": (None, [_p]),
    "PQconninfoParse": (_p, [_s, ctypes.POINTER(_p)]),
    "PQconninfoFree": (None, [_p]),
    "PQfreemem": (None, [_p]),
}

CONNECTION_OK: Final = 0
PGRES_COMMAND_OK: Final = 1
PGRES_TUPLES_OK: Final = 2
PG_DIAG_MESSAGE_PRIMARY: Final = ord("M")
PG_DIAG_SQLSTATE: Final = ord("C")
BINARY: Final = 1

# Binary result values by type oid: what psycopg would return for them.
_BOOL, _BYTEA, _NAME, _INT8, _INT2, _INT4, _TEXT, _VARCHAR = 16, 17, 19, 20, 21, 23, 25, 1043


class LibpqError(Exception):
    """libpq's or the server's reason, as psycopg's error would word it; `sqlstate` is the
    server's error code, as on psycopg's errors (None for a failure on this side)."""

    def __init__(self, message: str, sqlstate: str | None = None) -> None:
        super().__init__(message)
        self.sqlstate = sqlstate


class _ConninfoOption(ctypes.Structure):
    _fields_ = [
        ("keyword", _s),
        ("envvar", _s),
        ("compiled", _s),
        ("val", _s),
        ("label", _s),
        ("dispchar", _s),
        ("dispsize", _i),
    ]


class Libpq:
    """The loaded library, its functions typed."""

    def __init__(self, dll: ctypes.CDLL) -> None:
        self.dll = dll
        for name, (result, arguments) in _SIGNATURES.items():
            function = getattr(dll, name)
            function.restype, function.argtypes = result, arguments


def _candidates() -> Iterator[str]:
    """psycopg[binary]'s own libpq (beside the package in `psycopg_binary.libs` on Linux and
    Windows, named `libpq-<hash>...`; inside it in `.dylibs` on macOS), then the system's: by
    its soname first, which costs nothing, and only then by `find_library` (which runs
    ldconfig or a compiler)."""
    import importlib.util

    spec = importlib.util.find_spec("psycopg_binary")
    if spec is not None and spec.origin is not None:
        package = Path(spec.origin).parent
        for libs in (package.parent / "psycopg_binary.libs", package / ".dylibs"):
            if libs.is_dir():
                yield from sorted(str(p) for p in libs.iterdir() if p.name.startswith("libpq"))
    yield "libpq.so.5"
    import ctypes.util

    system = ctypes.util.find_library("pq")
    if system:
        yield system


@cache
def library() -> Libpq | None:
    """libpq, loaded once; None when none loads (psycopg then serves every query)."""
    for candidate in _candidates():
        try:
            return Libpq(ctypes.CDLL(candidate))
        except (OSError, AttributeError):  # absent, or too old to have a function we use
            continue
    return None


def conninfo(lib: Libpq, url: str) -> dict[str, str] | None:
    """The connection parameters libpq reads from `url` (those set), None if malformed."""
    error = _p()
    options = lib.dll.PQconninfoParse(url.encode(), ctypes.byref(error))
    if error.value:
        lib.dll.PQfreemem(error)
    if not options:
        return None
    try:
        found: dict[str, str] = {}
        array = ctypes.cast(options, ctypes.POINTER(_ConninfoOption))
        for n in range(1000):  # the array ends with a NULL keyword
            option = array[n]
            if option.keyword is None:
                break
            if option.val is not None:
                found[option.keyword.decode()] = option.val.decode(errors="replace")
        return found
    finally:
        lib.dll.PQconninfoFree(options)


class LiteConnection:
    """One libpq connection for read-only queries; a lock serialises them, as psycopg does
    (libpq's connection is not safe in two threads at once)."""

    def __init__(self, lib: Libpq, url: str, timeout: int) -> None:
        self._dll = lib.dll
        self._lock = threading.Lock()
        # Later parameters win over the URL's (`expand_dbname`), as psycopg's keywords do.
        keywords = [b"dbname", b"connect_timeout", b"client_encoding", None]
        values = [url.encode(), str(timeout).encode(), b"UTF8", None]
        self._conn: int | None = self._dll.PQconnectdbParams(
            (_s * 4)(*keywords), (_s * 4)(*values), 1
        )
        if self.broken:
            message = self._message()
            self.close()
            raise LibpqError(message)

    @property
    def broken(self) -> bool:
        return self._conn is None or self._dll.PQstatus(self._conn) != CONNECTION_OK

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            self._dll.PQfinish(conn)

    def _message(self) -> str:
        raw = self._dll.PQerrorMessage(self._conn) if self._conn else None
        return (raw or b"").decode(errors="replace").strip() or "connection lost"

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple[Any, ...]]:
        """The rows of one statement; `%s` marks its parameters, as for psycopg."""
        texts = [_param(value) for value in params]
        with self._lock:
            if self._conn is None:
                raise LibpqError("the connection is closed")
            result = self._dll.PQexecParams(
                self._conn, _numbered(sql).encode(), len(texts), None,
                (_s * max(len(texts), 1))(*texts), None, None, BINARY,
            )  # fmt: skip
            try:
                return self._read(result)
            finally:
                self._dll.PQclear(result)

    def _read(self, result: int | None) -> list[tuple[Any, ...]]:
        dll = self._dll
        if not result:  # out of memory, or the connection is gone
            raise LibpqError(self._message())
        if dll.PQresultStatus(result) not in (PGRES_TUPLES_OK, PGRES_COMMAND_OK):
            primary = dll.PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY)
            code = dll.PQresultErrorField(result, PG_DIAG_SQLSTATE)
            raise LibpqError(
                primary.decode(errors="replace") if primary else self._message(),
                code.decode() if code else None,
            )
        types = [dll.PQftype(result, col) for col in range(dll.PQnfields(result))]
        rows = []
        for row in range(dll.PQntuples(result)):
            rows.append(tuple(self._value(result, row, col, oid) for col, oid in enumerate(types)))
        return rows

    def _value(self, result: int, row: int, col: int, oid: int) -> object:
        length = self._dll.PQgetlength(result, row, col)
        if length == 0 and self._dll.PQgetisnull(result, row, col):
            return None
        raw = ctypes.string_at(self._dll.PQgetvalue(result, row, col), length)
        return _decode(oid, raw)


def _decode(oid: int, raw: bytes) -> object:
    if oid in (_TEXT, _VARCHAR, _NAME):
        return raw.decode()
    if oid in (_INT8, _INT4, _INT2):
        return int.from_bytes(raw, "big", signed=True)
    if oid == _BYTEA:
        return raw
    if oid == _BOOL:
        return raw != b"\x00"
    raise LibpqError(f"unexpected column type (oid {oid})")  # a query of ours changed


def _param(value: object) -> bytes:
    """A parameter in text format: what the server parses for the type it infers."""
    if isinstance(value, list):
        items = (str(item).replace("\\", "\\\\").replace('"', '\\"') for item in value)
        return ("{" + ",".join(f'"{item}"' for item in items) + "}").encode()
    return str(value).encode()


def _numbered(sql: str) -> str:
    """psycopg's `%s` placeholders as libpq's `$1`, `$2`, ... (the store's SQL has no other
    `%`)."""
    parts = sql.split("%s")
    return "".join(f"{part}${n}" for n, part in enumerate(parts[:-1], 1)) + parts[-1]
