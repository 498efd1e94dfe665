"""Opening a session file: never through a symbolic link, never anything but a regular file.

`sessions/X.jsonl` is a name anyone with access to the directory can point elsewhere. A writer
that followed a symlink would move aside, cut and append to whatever it names (a system file,
when run as root); a reader would hang on a FIFO or read `/dev/zero` forever. So every open of
a session file goes through here: `O_NOFOLLOW` refuses a link, `O_NONBLOCK` keeps a FIFO from
blocking the open, and `fstat` on the open descriptor (not the name, which could change in
between) refuses whatever is not a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

__all__ = ["NotASession", "open_regular", "read_regular"]

_KINDS: Final = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


# What the open itself reports for a name that is not a regular file.
_REFUSED_AT_OPEN: Final[dict[int | None, str]] = {
    errno.ELOOP: "a symbolic link",  # O_NOFOLLOW on a link
    errno.EISDIR: "a directory",  # a directory opened for writing
    errno.ENXIO: "a FIFO",  # a FIFO without a reader, opened for writing
}


class NotASession(ValueError):
    """A session file that is not a regular file, or whose content is not a session."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # the short form, for a listing: "a FIFO, not a regular file"


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """Open `path` without following a symlink; raise NotASession unless it is a regular file."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        kind = _REFUSED_AT_OPEN.get(exc.errno)
        if kind is None:
            raise  # a missing file, no permission, ...: the OS's own error says it best
        raise _refusal(path, kind) from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = next((name for test, name in _KINDS if test(mode)), "a special file")
        raise _refusal(path, kind)
    return fd


def read_regular(path: Path) -> bytes:
    """The whole content of a regular file, read through `open_regular`."""
    fd = open_regular(path)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _refusal(path: Path, kind: str) -> NotASession:
    reason = f"{kind}, not a regular file"
    return NotASession(
        f"session {path.stem} is {reason} ({path}); "
        "harness reads and writes only regular files in its sessions directory",
        reason,
    )
