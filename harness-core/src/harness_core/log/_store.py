"""The file store: sessions under `$HARNESS_HOME/sessions/`, one JSON Lines file each
(`_file.py`); create, open, list (`_listing.py`), the tail query (`_tail.py`).

A title given with `rename` is kept beside the log, in `<id>.title` (the title as UTF-8, written
aside and renamed into place), never in it: the log stays the events alone, and a listing
shows the title instead of the first prompt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._listing import SessionSummary, list_sessions
from ._open import NotASession, open_regular
from ._stores import TITLE_MAX, SessionNotFound, check_session_id, check_title

if TYPE_CHECKING:  # the log file's machinery loads when a session is opened, not to list them
    from collections.abc import Collection, Iterator, Sequence

    from ._envelope import Event
    from ._file import FileLog
    from ._session import EventSink
    from ._stores import Notify
    from ._types import EventTypeRegistry

__all__ = ["SessionNotFound", "SessionStore", "SessionSummary", "default_home"]


def default_home() -> Path:
    """`$HARNESS_HOME`, else the per-user data directory."""
    configured = os.environ.get("HARNESS_HOME")
    if configured:
        return Path(configured)
    import platformdirs  # only when HARNESS_HOME is unset

    return platformdirs.user_data_path("harness")


class SessionStore:
    """The sessions directory of one HARNESS_HOME: the file store (a `Store`).

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

    def initialise(self) -> None:
        """Nothing to set up: the directory is made with the first session."""
        return None

    def create(
        self,
        *,
        system_prompt: str | None = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        parent_call_id: str | None = None,
    ) -> FileLog:
        """A new session, locked for writing, with its session/start committed."""
        # Only a writer creates: the readers never pay for pydantic, secrets or datetime.
        from ._events import SessionStart
        from ._file import FileLog

        # Sessions hold prompts, tool output and file contents: private to their owner.
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.mkdir(mode=0o700, exist_ok=True)
        start = SessionStart.new(
            system_prompt=system_prompt,
            cwd=cwd,
            parent_session=parent_session,
            parent_call_id=parent_call_id,
        )
        path = self.directory / f"{start.id}.jsonl"
        return FileLog.create(path, self.registry, start, observer=self.on_append)

    def path(self, session_id: str) -> Path:
        check_session_id(session_id)
        path = self.directory / f"{session_id}.jsonl"
        # lexists, not is_file: a symlink or FIFO here is refused by name when it is opened,
        # instead of being reported as missing.
        if not os.path.lexists(path):
            raise SessionNotFound(f"no session {session_id!r} in {self.directory}")
        return path

    def open(self, session_id: str, *, writable: bool = True) -> FileLog:
        from ._file import FileLog

        return FileLog.open(
            self.path(session_id), self.registry, writable=writable, observer=self.on_append
        )

    @property
    def url(self) -> str:
        return f"file://{self.home}"

    def latest(self, session_id: str, types: Collection[str]) -> Event | None:
        """From the file's tail and the writer's tail index (`_tail.py`), not a replay."""
        from ._file import refuse_empty
        from ._tail import find_latest

        path = self.path(session_id)
        refuse_empty(path)  # as a reader would: an empty file is no session, not one without events
        return find_latest(path, types)

    def read(self, session_id: str) -> Iterator[Event]:
        yield from self.open(session_id, writable=False).events

    def lines(self, session_id: str) -> Iterator[bytes]:
        """The file's lines as stored: nothing is parsed to be encoded again."""
        from ._file import read_lines

        return read_lines(self.path(session_id), self.registry)

    def delete(self, session_id: str) -> None:
        """Unlink the file under its writer lock, so no writer is cut off mid-turn."""
        from ._index import forget_index
        from ._lock import lock_exclusive

        path = self.path(session_id)
        fd = open_regular(path, os.O_RDWR)
        try:
            lock_exclusive(fd, path)  # SessionLocked, naming the writer, while one holds it
            os.unlink(path)
            forget_index(path)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.directory / f"{session_id}.title")
        finally:
            os.close(fd)

    def rename(self, session_id: str, title: str) -> None:
        """Write `<id>.title` aside and rename it into place: a reader sees the old title or
        the new one, never half of one. No lock: the log is not touched."""
        title = check_title(title)
        self.path(session_id)  # SessionNotFound for an unknown id
        aside = self._aside(session_id, "title", title.encode())
        try:
            os.replace(aside, self.directory / f"{session_id}.title")
        finally:
            aside.unlink(missing_ok=True)

    def adopt(self, session_id: str, lines: Sequence[bytes]) -> None:
        """The file of a session from another store, whole or not at all: written aside, then
        linked into place. FileExistsError when this store holds the session already (a
        session of that id appearing meanwhile is refused, never overwritten)."""
        from ._file import fsync_dir

        check_session_id(session_id)  # an id from another store: never a path
        target = self.directory / f"{session_id}.jsonl"
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.directory.mkdir(mode=0o700, exist_ok=True)
        aside = self._aside(session_id, "copying", b"".join(line + b"\n" for line in lines))
        try:
            os.link(aside, target)
            fsync_dir(self.directory)
        finally:
            aside.unlink(missing_ok=True)

    def _aside(self, session_id: str, suffix: str, data: bytes) -> Path:
        """A new private file beside the session's holding `data`, synced: what `rename` and
        `adopt` move into place."""
        # os.urandom, not the secrets module: importing that (hashlib, OpenSSL) cost every
        # command a few ms at startup, for a name that only has to be unlikely to collide.
        aside = self.directory / f".{session_id}.{os.urandom(4).hex()}.{suffix}"
        fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        except BaseException:
            aside.unlink(missing_ok=True)
            raise
        return aside

    def _titles(self, names: list[str]) -> dict[str, str]:
        """The titles `rename` gave, from their files `names`, by session id; an unreadable
        one is left out (the listing then shows the first prompt)."""
        titles = {}
        for name in names:
            try:
                fd = open_regular(self.directory / name)
            except (OSError, NotASession):
                continue
            try:
                data = os.read(fd, 4 * TITLE_MAX + 1)
            except OSError:
                continue
            finally:
                os.close(fd)
            try:
                titles[name.removesuffix(".title")] = check_title(data.decode())
            except (UnicodeDecodeError, ValueError):
                continue  # not a title rename wrote
        return titles

    def subscribe(self, notify: Notify) -> None:
        """Files tell nobody of an append: a reader that follows a session polls it."""
        return None

    def list(self) -> list[SessionSummary]:
        """Every session file, most recently active first; unreadable ones last, with a problem."""
        titled: list[str] = []
        summaries = list_sessions(self.directory, titled)
        titles = self._titles(titled)
        if titles:
            summaries = [
                dataclasses.replace(s, title=titles[s.id])
                if s.id in titles and s.problem is None
                else s
                for s in summaries
            ]
        summaries.sort(key=lambda s: (s.updated, s.id), reverse=True)
        return summaries
