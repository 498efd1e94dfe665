"""Listing the sessions directory: a summary of each file, from the file or from the cache.

A summary comes from the file's first bytes (the session/start header and the first prompt)
and its last complete line, never the whole file, so listing stays fast with long sessions. It
opens regular files only and reads a bounded prefix of each: a FIFO, a link to `/dev/zero` or a
file of garbage is listed as unreadable, with the reason, and never hangs the listing.

A thousand sessions still cost a thousand opens and reads, so each summary is kept in
`$HARNESS_HOME/cache/sessions.json` under the file's identity: inode, size, modification and
change times (nanoseconds) from the directory scan's `lstat`. An append changes the size, any
other write (or a rename or chmod) the change time, and a replaced file has a new inode, so a
summary is reused only for the very file it was read from. The identity is taken before the
file is read: a file that changes while it is read is read again by the next listing. Files
with a problem are never cached: each listing checks them again.

A listing served from the cache decodes no event: the envelope codec (orjson) and the tail
reader load only when a file must be read, and the cache itself is plain `json`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .._version import __version__
from ._cache import cache_dir, read_cache, write_cache
from ._open import NotASession, open_regular

__all__ = ["SessionSummary", "list_sessions"]

_HEAD_BYTES: Final = 16 * 1024
# A session/start line is a few kB (a long system prompt makes it longer); a first line past
# this is not one, and reading on would make one odd file slow down the whole listing.
_MAX_HEAD_BYTES: Final = 4 * 1024 * 1024

_CACHE_NAME: Final = "sessions.json"
# A cache written by another version (or another layout of its rows) is not read: raise the
# format when a row or the way a file is summarized changes.
_CACHE_FORMAT: Final = [1, __version__]


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    created: str
    updated: str
    events: int
    title: str | None
    parent_session: str | None
    problem: str | None = None  # why the file cannot be listed as a session; None when it can
    cwd: str | None = None  # the working directory its tools run in (session/start)


# A cache row: the file's identity, then the summary's fields.
Row = list[Any]


def list_sessions(directory: Path, titles: list[str] | None = None) -> list[SessionSummary]:
    """A summary of every `*.jsonl` in `directory`, in no order; a file deleted meanwhile is
    left out. The cache is read, and written back when a summary in it changed. The names of
    the `*.title` files the same scan saw are added to `titles` (one look at the directory
    for both)."""
    try:
        with os.scandir(directory) as scan:
            names = list(scan)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []  # no sessions yet (or none this user may see)
    entries = [entry for entry in names if entry.name.endswith(".jsonl")]
    if titles is not None:  # not a file written aside (".ID.xxxx.title"), still being renamed
        titles.extend(e.name for e in names if e.name.endswith(".title") and e.name[0] != ".")
    cache = cache_dir(directory) / _CACHE_NAME
    cached = _read_rows(cache)
    rows: dict[str, Row] = {}
    summaries: list[SessionSummary] = []
    for entry in entries:
        path = directory / entry.name
        try:
            stat = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # deleted while listing
        except OSError:
            identity = None  # reading it will say why
        else:
            identity = [stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]
        row = cached.get(entry.name)
        summary = _from_row(path, identity, row) if row is not None else None
        if summary is None:
            summary = _summarize(path)
            if summary is None:
                continue
            row = _row(identity, summary)
        if row is not None:
            rows[entry.name] = row
        summaries.append(summary)
    if rows != cached:
        content = {"format": _CACHE_FORMAT, "sessions": rows}
        write_cache(cache, json.dumps(content, separators=(",", ":")).encode())
    return summaries


def _read_rows(cache: Path) -> dict[str, Row]:
    """The cached rows by file name; none when the cache is missing, torn or of another format."""
    data = read_cache(cache)
    if data is None:
        return {}
    try:
        content = json.loads(data)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the stack
        return {}
    if not isinstance(content, dict) or content.get("format") != _CACHE_FORMAT:
        return {}
    rows = content.get("sessions")
    return rows if isinstance(rows, dict) else {}


def _row(identity: list[int] | None, summary: SessionSummary) -> Row | None:
    """What the cache keeps of `summary`; None when it must be read again next time."""
    if identity is None or summary.problem is not None:
        return None
    s = summary
    return [*identity, s.created, s.updated, s.events, s.title, s.parent_session, s.cwd]


def _from_row(path: Path, identity: list[int] | None, row: Any) -> SessionSummary | None:
    """The cached summary, if `row` was cached from this very file and is well formed."""
    if not isinstance(row, list) or len(row) != 10 or row[:4] != identity:
        return None
    created, updated, events, title, parent_session, cwd = row[4:]
    if not (
        isinstance(created, str)
        and isinstance(updated, str)
        and type(events) is int
        and (title is None or isinstance(title, str))
    ):
        return None  # not what this version writes: read the file instead
    return SessionSummary(
        id=path.stem,
        created=created,
        updated=updated,
        events=events,
        title=title,
        parent_session=parent_session,
        cwd=cwd,
    )


def _summarize(path: Path) -> SessionSummary | None:
    """Header and tail of one session file; None when it vanished while listing."""
    from ._envelope import EnvelopeError, decode_line
    from ._tail import last_event_in

    # A listing reads a thousand files: plain reads on the descriptor, no file object.
    try:
        fd = open_regular(path)
        try:
            head = _read_head(fd)
            first = head.find(b"\n")
            try:
                header = decode_line(head[:first] if first >= 0 else head)
            except EnvelopeError as exc:
                return _unreadable(path, f"not a session: its first line is not an event ({exc})")
            if header.type != "session/start":
                return _unreadable(path, f"not a session: it starts with {header.type!r}")
            last = last_event_in(fd) or header
        finally:
            os.close(fd)
    except FileNotFoundError:
        return None  # deleted while listing
    except (OSError, NotASession, _NoHeader) as exc:
        # One bad file must not hide every other session, nor be hidden itself.
        return _unreadable(path, _reason(exc))
    return SessionSummary(
        id=path.stem,
        created=str(header.data.get("created", header.ts)),
        updated=last.ts,
        events=last.seq + 1,
        title=_first_prompt(head, first + 1) if first >= 0 else None,
        parent_session=header.data.get("parent_session"),
        cwd=header.data.get("cwd"),
    )


def _reason(exc: Exception) -> str:
    if isinstance(exc, NotASession):
        return exc.reason
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return str(exc)


def _unreadable(path: Path, problem: str) -> SessionSummary:
    return SessionSummary(
        id=path.stem,
        created="",
        updated="",
        events=0,
        title=None,
        parent_session=None,
        problem=problem,
    )


class _NoHeader(ValueError):
    """The file is empty, or its first line does not end within `_MAX_HEAD_BYTES`."""


def _read_head(fd: int) -> bytes:
    """The file's first `_HEAD_BYTES`, extended to the end of the first line if it is longer.

    A session/start carrying a long system prompt can exceed the first block; cutting it would
    make the session vanish from the listing. Past `_MAX_HEAD_BYTES` it is not a session/start.
    """
    chunks = [os.pread(fd, _HEAD_BYTES, 0)]
    size = len(chunks[0])
    # Only the newest chunk is searched, and the chunks are joined once: linear in the bytes.
    while b"\n" not in chunks[-1] and chunks[-1]:
        if size >= _MAX_HEAD_BYTES:
            raise _NoHeader(f"not a session: no line break in its first {size} bytes")
        chunks.append(os.pread(fd, _HEAD_BYTES, size))
        size += len(chunks[-1])
    head = b"".join(chunks)
    if not head:
        raise _NoHeader("an empty file")
    return head


def _first_prompt(head: bytes, start: int) -> str | None:
    """The text of the first message/user among the whole lines of `head` after `start`."""
    from ._envelope import EnvelopeError, decode_line

    end = head.rfind(b"\n") + 1  # bytes after the last newline may be a cut line
    while (found := head.find(b'"message/user"', start, end)) >= 0:
        line_start = head.rfind(b"\n", start, found) + 1 or start
        line_end = head.find(b"\n", found, end)
        try:
            event = decode_line(head[line_start:line_end])
        except EnvelopeError:
            event = None
        if event is not None and event.type == "message/user":
            text = event.data.get("text")
            if isinstance(text, str):
                return text
        start = line_end + 1
    return None
