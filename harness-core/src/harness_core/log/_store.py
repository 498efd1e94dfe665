"""Sessions under `$HARNESS_HOME/sessions/`: create, open, list.

Listing reads each file's first bytes (the session/start header and the first prompt) and its
last complete line, never the whole file, so it stays fast with long sessions.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from .._version import __version__
from ._envelope import EnvelopeError, decode_line
from ._file import EventSink, SessionLog
from ._tail import last_event
from ._types import EventTypeRegistry

__all__ = ["SessionNotFound", "SessionStore", "SessionSummary", "default_home"]

_VALID_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_HEAD_BYTES: Final = 16 * 1024


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
        from ._events import SessionStart  # the write path validates with pydantic

        self.directory.mkdir(parents=True, exist_ok=True)
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
        if not path.is_file():
            raise SessionNotFound(f"no session {session_id!r} in {self.directory}")
        return path

    def open(self, session_id: str, *, writable: bool = True) -> SessionLog:
        return SessionLog.open(
            self.path(session_id), self.registry, writable=writable, observer=self.on_append
        )

    def list(self) -> list[SessionSummary]:
        """Every readable session, most recently active first."""
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
    """Header and tail of one session file; None for a file that is not a session."""
    try:
        head = _read_head(path)
        lines = head.split(b"\n")
        header = decode_line(lines[0])
        if header.type != "session/start":
            return None
        last = last_event(path) or header
    except (OSError, EnvelopeError):
        # Not a session, or deleted or unreadable while listing: one bad file must not
        # hide every other session.
        return None
    return SessionSummary(
        id=path.stem,
        created=str(header.data.get("created", header.ts)),
        updated=last.ts,
        events=last.seq + 1,
        title=_first_prompt(lines[1:-1]),
        parent_session=header.data.get("parent_session"),
        path=path,
    )


def _read_head(path: Path) -> bytes:
    """The file's first `_HEAD_BYTES`, extended to the end of the first line if it is longer.

    A session/start carrying a long system prompt can exceed the first block; cutting it would
    make the session vanish from the listing.
    """
    with path.open("rb") as handle:
        head = handle.read(_HEAD_BYTES)
        while b"\n" not in head:
            more = handle.read(_HEAD_BYTES)
            if not more:
                break
            head += more
    return head


def _first_prompt(lines: list[bytes]) -> str | None:
    for line in lines:
        if b'"message/user"' not in line:
            continue
        try:
            event = decode_line(line)
        except EnvelopeError:
            continue
        text = event.data.get("text")
        if event.type == "message/user" and isinstance(text, str):
            return text
    return None
