"""Helpers for tests that watch other processes (no tests here)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio

__all__ = ["has_pid", "poll", "running"]


async def poll(condition: Callable[[], bool]) -> None:
    """Wait for a condition another process makes true (there is no event to await)."""
    with anyio.fail_after(20):
        while True:
            if condition():
                return
            await anyio.sleep(0.01)


def has_pid(path: Path) -> bool:
    """Whether a command has written its pid to `path` yet."""
    return path.exists() and path.read_text().strip() != ""


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie awaiting its reaper is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone, or going (ESRCH while it is torn down)
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")
