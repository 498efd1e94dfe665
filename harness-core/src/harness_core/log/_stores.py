"""What a session store is: the protocol every store keeps, and how a host names one.

A store keeps sessions: it creates one with its session/start committed, opens one for its
single writer (a second is refused at once, naming the holder) or for any number of readers,
lists them with their summaries, answers "the newest event of these types in session S"
without replaying it, and reads a session's events or its stored lines from the start. The
file store under `HARNESS_HOME` (`SessionStore`, `_store.py`) is the built-in one; a plugin
contributes another through the `harness_session_store` hook, for the URL schemes it knows.

A store is named by a URL: `file://PATH` (the file store whose home is PATH), or a plugin's
scheme (`postgresql://...`). `--store` wins over `HARNESS_STORE`, which wins over config
`store`; nothing names the file store of `HARNESS_HOME`. A password in a URL is never shown
(`redact_url`). See docs/log.md, "Stores".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from ._envelope import Event
    from ._listing import SessionSummary
    from ._session import EventSink, SessionLog
    from ._types import EventTypeRegistry

__all__ = [
    "TITLE_MAX",
    "Notify",
    "SessionNotFound",
    "Store",
    "StoreError",
    "check_session_id",
    "check_title",
    "file_store_directory",
    "redact_url",
    "scheme_of",
]

# (session id, the newest committed seq): what a store tells its subscribers.
Notify = Callable[[str, int], None]

# A session's own title (`Store.rename`) is a line for a list, not a place to keep text.
TITLE_MAX: Final = 200

# What a session id may be on every store: a file name on the file store, and never a NUL
# (which a database refuses in text) or a path separator anywhere.
_VALID_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")

_PASSWORD: Final = re.compile(r"^([a-z][a-z0-9+.-]*://[^:/?#@]*:)([^@/?#]*)(@)", re.IGNORECASE)


class SessionNotFound(LookupError):
    """No session with that id in this store."""


class StoreError(Exception):
    """A store that cannot be had (an unknown scheme, a store nothing provides, a database
    that was never initialised): one line saying what to do."""


class Store(Protocol):
    """Where sessions live. Hosts and plugins reach sessions only through this."""

    registry: EventTypeRegistry
    on_append: EventSink | None

    @property
    def url(self) -> str:
        """How to name this store again (`--store`), its password redacted."""
        ...

    def initialise(self) -> str | None:
        """Create or migrate what the store keeps its sessions in (`harness store init`),
        idempotent; what was done, in a few words, or None: the store needs nothing set up
        (the file store makes its directory on the first session)."""
        ...

    def create(
        self,
        *,
        system_prompt: str | None = None,
        cwd: str | None = None,
        parent_session: str | None = None,
        parent_call_id: str | None = None,
    ) -> SessionLog:
        """A new session, its writer held, with its session/start committed."""
        ...

    def open(self, session_id: str, *, writable: bool = True) -> SessionLog:
        """The session's one writer (SessionLocked naming the holder when another has it),
        or a reader; SessionNotFound for an id the store does not hold."""
        ...

    def list(self) -> list[SessionSummary]:
        """Every session, most recently active first; unreadable ones with a `problem`."""
        ...

    def latest(self, session_id: str, types: Collection[str]) -> Event | None:
        """The newest event of `types` in the session, without replaying it."""
        ...

    def read(self, session_id: str) -> Iterator[Event]:
        """The session's events, oldest first, as a reader sees them."""
        ...

    def lines(self, session_id: str) -> Iterator[bytes]:
        """The session's envelopes as stored, one JSON object each (`harness events`)."""
        ...

    def delete(self, session_id: str) -> None:
        """Remove a session for good, once its writer is free: SessionLocked naming the
        holder while one writes it, SessionNotFound for an id the store does not hold. The
        sessions of its subagents stay (they are sessions of their own)."""
        ...

    def rename(self, session_id: str, title: str) -> None:
        """Give the session a title of its own, which listings show instead of its first
        prompt. The title is the store's record about the session, not an event: the log is
        unchanged, and a writer may hold the session meanwhile. ValueError for what
        `check_title` refuses, SessionNotFound for an id the store does not hold."""
        ...

    def adopt(self, session_id: str, lines: Sequence[bytes]) -> None:
        """Hold a session that comes from another store (`harness store copy`) as the very
        envelope lines it holds there, all of them or none. An error when this store holds
        the session already (the file store: FileExistsError)."""
        ...

    def subscribe(self, notify: Notify) -> Callable[[], None] | None:
        """Call `notify(session_id, seq)` (from any thread) once events up to `seq` are
        committed to a session, by any process; returns how to stop. None: this store cannot
        notify, and a reader that follows a session polls it (the file store)."""
        ...


def check_session_id(session_id: str) -> str:
    """`session_id`, or SessionNotFound for a string no store holds a session by (an id from
    a URL or another store is checked before it reaches a path or a query)."""
    if not _VALID_ID.fullmatch(session_id):
        raise SessionNotFound(f"{session_id!r} is not a session id")
    return session_id


def check_title(title: str) -> str:
    """`title` without surrounding white space, or ValueError in one line: empty, longer than
    TITLE_MAX characters, or holding a control character or a line separator."""
    title = title.strip()
    if not title:
        raise ValueError("a title must not be empty")
    if len(title) > TITLE_MAX:
        raise ValueError(f"a title is at most {TITLE_MAX} characters, not {len(title)}")
    for char in title:
        if unicodedata.category(char) in ("Cc", "Zl", "Zp"):
            raise ValueError(f"a title must not hold control characters (U+{ord(char):04X})")
    return title


def scheme_of(url: str) -> str:
    """`postgresql` of `postgresql://...`; "" for a URL without one."""
    head, separator, _ = url.partition("://")
    return head.lower() if separator else ""


def file_store_directory(url: str) -> Path | None:
    """The directory a `file://PATH` URL names; None for a URL of any other scheme."""
    return Path(url[len("file://") :]) if scheme_of(url) == "file" else None


def redact_url(url: str) -> str:
    """`url` with any password replaced by `[redacted]`, as every place that shows it prints."""
    return _PASSWORD.sub(r"\1[redacted]\3", url)
