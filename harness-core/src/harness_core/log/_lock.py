"""One writer per session: an exclusive, non-blocking `flock` on the session file itself.

flock belongs to the open file description, so a reader in the same process opening and
closing the file never drops the writer's lock (POSIX `lockf` locks would be dropped), and the
kernel releases it when the holder dies, so a crash never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["SessionLocked", "lock_exclusive"]


class SessionLocked(RuntimeError):
    """Another writer holds the session: the message names it by pid and, for a store that
    writers on several machines share, by host.

    `session` is the session's file (the file store) or its id (a store that keeps none);
    `path` is that file, or None.
    """

    def __init__(self, session: Path | str, holder: int | None, host: str | None = None) -> None:
        self.path = session if isinstance(session, Path) else None
        self.session_id = session.stem if isinstance(session, Path) else session
        self.holder = holder
        self.host = host
        who = "another process" if holder is None else f"process {holder}"
        if host is not None:
            who += f" on {host}"
        super().__init__(
            f"session {self.session_id} is already open for writing by {who}; "
            "wait for it to finish or stop it (readers such as `harness show` need no lock)"
        )


def lock_exclusive(fd: int, path: Path) -> None:
    """Take the writer lock on `fd` or raise SessionLocked naming the holder."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SessionLocked(path, _flock_holder(fd)) from None


def _flock_holder(fd: int) -> int | None:
    """The pid holding a flock on `fd`'s inode, read from /proc/locks (Linux); else None."""
    st = os.fstat(fd)
    inode_key = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return None
    for row in table.splitlines():
        fields = row.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF"; a blocked waiter's row reads
        # "1: -> FLOCK ...", so fields[1] == "FLOCK" keeps holders only.
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == inode_key:
            return int(fields[4]) if fields[4].isdigit() else None
    return None
