"""Derived files under `$HARNESS_HOME/cache/`, which the query commands read to stay fast.

Every one is computed from the session files and is checked against them before it is
trusted, so it is never the only copy of anything: a cache that is missing, stale, torn or
unwritable costs a slower query, never a wrong answer or an error. That is why reading and
writing here never raise, and why it lives outside `sessions/`, which holds only the logs.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["cache_dir", "read_cache", "write_cache"]


def cache_dir(sessions_dir: Path) -> Path:
    """The cache directory beside a sessions directory: `$HARNESS_HOME/cache`."""
    return sessions_dir.parent / "cache"


def read_cache(path: Path) -> bytes | None:
    """The file's bytes, or None when there is none (or it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def write_cache(path: Path, data: bytes) -> None:
    """Replace `path` with `data` at once (a reader sees the old file or the new one, never
    half of one). A failure leaves the old file, or none, and only costs a slower query."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # The cache says which sessions exist and how long they are: private, like them.
        _private_directory(path.parent)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(temporary, flags, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _private_directory(directory: Path) -> None:
    """Make `directory` and each missing parent 0700 (`mkdir(parents=True)` would give the
    parents the umask's mode: `cache/` readable by all when `cache/tail/` is made first)."""
    if directory.is_dir():
        return
    _private_directory(directory.parent)
    with contextlib.suppress(FileExistsError):  # made meanwhile by another process
        directory.mkdir(mode=0o700)
