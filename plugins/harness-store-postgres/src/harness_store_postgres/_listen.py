"""Live readers: LISTEN on the store's channel, on a thread and a connection of its own.

A commit NOTIFYs in its own transaction (`_log.py`), so a notification arrives only once its
rows are visible; it carries `SESSION_ID SEQ` and nothing more, and the reader reads the rows
back. The thread waits for notifications a short while at a time, so stopping it takes at most
that long; a dropped connection is made again (a reader catches up from its own seq anyway).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from harness_core.log import Notify, StoreError

if TYPE_CHECKING:
    from ._store import PostgresStore

__all__ = ["listen"]

logger = logging.getLogger("harness.store.postgres")

_WAIT: Final = 0.5  # seconds a wait for notifications lasts before checking for a stop


def listen(store: PostgresStore, notify: Notify) -> Callable[[], None]:
    """Start listening; returns how to stop (it returns once the thread has ended)."""
    stop = threading.Event()
    ready = threading.Event()
    thread = threading.Thread(
        target=_run, args=(store, notify, stop, ready), name="harness-postgres-listen", daemon=True
    )
    thread.start()
    ready.wait(10)  # listening before subscribe returns: no commit after it goes unheard

    def stopped() -> None:
        stop.set()
        thread.join()

    return stopped


def _run(
    store: PostgresStore, notify: Notify, stop: threading.Event, ready: threading.Event
) -> None:
    import psycopg
    from psycopg import sql

    while not stop.is_set():
        try:
            with store.connect() as conn:
                conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(store.channel)))
                ready.set()
                while not stop.is_set():
                    for note in conn.notifies(timeout=_WAIT):
                        _deliver(notify, note.payload)
        except (psycopg.Error, StoreError) as exc:
            logger.warning("%s: listening for commits: %s; again in a second", store.url, exc)
            ready.set()
            stop.wait(1.0)


def _deliver(notify: Notify, payload: str) -> None:
    session_id, _, seq = payload.rpartition(" ")
    if session_id and seq.isdigit():
        try:
            notify(session_id, int(seq))
        except Exception:  # a subscriber's bug must not stop the others' notifications
            logger.exception("a store subscriber failed on %s", payload)
