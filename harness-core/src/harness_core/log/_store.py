"""Sessions under `$HARNESS_HOME/sessions/`: create, open, list.

Listing reads each file's first bytes (the session/start header and the first prompt) and its
last complete line, never the whole file, so it stays fast with long sessions. It opens
regular files only and reads a bounded prefix of each: a FIFO, a link to `/dev/zero` or a
file of garbage is listed as unreadable, with the reason, and never hangs the listing.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .._version import __version__
from ._envelope import EnvelopeError, decode_line
from ._file import EventSink, SessionLog
from ._open import NotASession, open_regular
from ._tail import last_event_in
from ._types import EventTypeRegistry

__all__ = ["SessionNotFound", "SessionStore", "SessionSummary", "default_home"]

_VALID_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_HEAD_BYTES: Final = 16 * 1024
# A session/start line is a few kB (a long system prompt makes it longer); a first line past
# this is not one, and reading on would make one odd file slow down the whole listing.
_MAX_HEAD_BYTES: Final = 4 * 1024 * 1024


def default_home() -> Path:
    """`$HARNESS_HOME`, else the per-user data directory."""
    configured = os.environ.get("HARNESS_HOME")
    if configured:
        return Path(configured)
    import platformdirs  # only when HARNESS_HOME is unset

    return platformdirs.user_data_path("harness")


class SessionNotFound(LookupError):
    """No session with that id in this store."""


@dataclass(frozen=True, slots=True)
class SessionSummary:
    id: str
    created: str
    updated: str
    events: int
    title: str | None
    parent_session: str | None
    path: Path
    problem: str | None = None  # why the file cannot be listed as a session; None when it can
    cwd: str | None = None  # the working directory its tools run in (session/start)


class SessionStore:
    """The sessions directory of one HARNESS_HOME.

    `on_append` sees every event appended to a session this store created or opened for
    writing, whoever appends it (session/start included): a host wires its plugins'
    `harness_event_appended` here, once, instead of in every place that writes.
    """

    def __init__(
        self, home: Path, registry: EventTypeRegistry, *, on_append: EventSink | None = None
    ) -> None:
        self.home = home
        self.registry = registry
        self.on_append = on_append
        self.directory = home / "sessions"

    def create(
        self,
        *,
        system_prompt: str | None = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        parent_call_id: str | None = None,
    ) -> SessionLog:
        """A new session, locked for writing, with its session/start committed."""
        # Only a writer creates: the readers never pay for pydantic, secrets or datetime.
        import secrets
        from datetime import UTC, datetime

        from ._events import SessionStart

        # Sessions hold prompts, tool output and file contents: private to their owner.
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.mkdir(mode=0o700, exist_ok=True)
        now = datetime.now(UTC)
        session_id = now.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(3)
        start = SessionStart(
            id=session_id,
            created=now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            harness_version=__version__,
            cwd=cwd,
            system_prompt=system_prompt,
            parent_session=parent_session,
            parent_call_id=parent_call_id,
        )
        path = self.directory / f"{session_id}.jsonl"
        return SessionLog.create(path, self.registry, start, observer=self.on_append)

    def path(self, session_id: str) -> Path:
        if not _VALID_ID.fullmatch(session_id):
            raise SessionNotFound(f"{session_id!r} is not a session id")
        path = self.directory / f"{session_id}.jsonl"
        # lexists, not is_file: a symlink or FIFO here is refused by name when it is opened,
        # instead of being reported as missing.
        if not os.path.lexists(path):
            raise SessionNotFound(f"no session {session_id!r} in {self.directory}")
        return path

    def open(self, session_id: str, *, writable: bool = True) -> SessionLog:
        return SessionLog.open(
            self.path(session_id), self.registry, writable=writable, observer=self.on_append
        )

    def list(self) -> list[SessionSummary]:
        """Every session file, most recently active first; unreadable ones last, with a problem."""
        if not self.directory.is_dir():
            return []
        summaries = [
            summary
            for path in self.directory.glob("*.jsonl")
            if (summary := _summarize(path)) is not None
        ]
        summaries.sort(key=lambda s: (s.updated, s.id), reverse=True)
        return summaries


def _summarize(path: Path) -> SessionSummary | None:
    """Header and tail of one session file; None when it vanished while listing."""
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
        path=path,
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
        path=path,
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
