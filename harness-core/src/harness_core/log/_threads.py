"""A log's blocking work (a commit, a writer's close) awaited from async code to its end."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

import anyio.to_thread

__all__ = ["in_thread_to_the_end"]

T = TypeVar("T")


async def in_thread_to_the_end(call: Callable[[], T]) -> T:
    """`call()` in a worker thread, awaited to its end even when the awaiting task is
    cancelled meanwhile; the cancel is raised then.

    An anyio shielded scope stops anyio's cancellation, not asyncio's own `Task.cancel()`
    (a host closing a session cancels its turns' tasks, `asyncio.run` every task on Ctrl-C).
    Left running in its thread, the work would still hold what its caller has let go: a
    writer's lock after its close returned (the session refused to the next writer, this
    process named as the holder), a commit under way while the next append runs.
    """
    work = asyncio.ensure_future(anyio.to_thread.run_sync(call))
    cancelled = False
    while not work.done():
        try:
            await asyncio.wait((work,))  # unlike an await of `work`, never cancels it
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    return work.result()
