"""`harness submit --wait`: the queued turn's events as they are committed, then its end.

The events are read back from the store (a worker on another machine writes them); the
workflow's result, read from DBOS's tables on the same connection (no DBOS import), says how
the turn ended, and the exit status is `harness run`'s: 0 for a completed turn, 130 for a
cancelled one, 1 otherwise with the reason on stderr.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final, TextIO

from harness_core.hosts import CommandError, one_line

from ._engine import outcome

if TYPE_CHECKING:
    from harness_core.log import Event
    from harness_core.runtime import Runtime

    from ._engine import Connection

__all__ = ["follow"]

# While the turn waits or runs, a commit to the session (the store's notification) wakes the
# follower at once; DBOS's own status, which no notification announces, is looked at this
# often (a turn cancelled before it started, a row that was not a job)...
IDLE_SECONDS: Final = 0.5
# ...and this often while a worker holds the turn and the log is at rest (just before the
# turn starts, or after its end until its workflow has ended too, a few milliseconds later).
# A store that cannot notify is polled at this pace throughout.
SETTLE_SECONDS: Final = 0.02
EXIT_CANCELLED: Final = 130
RUNNING: Final = ("ENQUEUED", "PENDING", "DELAYED")


def follow(
    runtime: Runtime,
    queue: tuple[Connection, str],
    session_id: str,
    workflow: str,
    out: TextIO,
) -> int:
    """Show the turn's events until its workflow ends; `queue` is the connection and DBOS's
    schema it was queued on."""
    reader = runtime.reader(session_id)
    committed = threading.Event()

    def notify(session: str, seq: int) -> None:
        if session == session_id:
            committed.set()

    # Not stopped: listening ends with this one-shot process, and a stop waits for the
    # listener's next look (up to half a second) that `harness submit --wait` would add.
    notified = runtime.store.subscribe(notify) is not None
    last = ""
    while True:
        committed.clear()  # before reading: a commit from here on wakes the wait below
        status, summary, error = outcome(*queue, workflow)
        for event in reader.refresh():
            _show(event, out)
            last = event.type
        if status not in RUNNING:
            break
        # Taken by a worker and the log at rest: the turn is about to start or has just
        # ended, and its workflow's end comes with no commit to announce it.
        settling = status == "PENDING" and last in ("turn/end", "session/start")
        committed.wait(IDLE_SECONDS if notified and not settling else SETTLE_SECONDS)
    for event in reader.refresh():  # what was committed between the last look and the end
        _show(event, out)
    return _status(status, summary, error)


def _status(status: str, summary: dict[str, Any] | None, error: str | None) -> int:
    if status == "CANCELLED":
        raise CommandError("the turn was cancelled; the session keeps what it did", EXIT_CANCELLED)
    if summary is None:
        raise CommandError(f"the turn did not run ({status}): {error or 'no detail'}")
    if summary["status"] == "completed":
        return 0
    if summary["status"] == "cancelled":
        raise CommandError("the turn was cancelled; the session keeps what it did", EXIT_CANCELLED)
    raise CommandError(
        f"the turn ended with {summary['status']}: {summary['error'] or 'no detail'}"
    )


def _show(event: Event, out: TextIO) -> None:
    """One line per step a reader of the turn cares about."""
    data = event.data
    if event.type == "message/assistant":
        for call in data.get("tool_calls") or ():
            print(f"→ {call.get('name')} {one_line(str(call.get('arguments')), 100)}", file=out)
        if data.get("text"):
            print(str(data["text"]).rstrip(), file=out)
    elif event.type == "tool/result":
        mark = "✗" if data.get("is_error") else "✓"
        print(f"  {mark} {one_line(str(data.get('text') or ''), 100)}", file=out)
    elif event.type == "turn/end":
        error = f": {data['error']}" if data.get("error") else ""
        print(f"turn {event.turn} {data.get('status')}{error}", file=out)
    out.flush()
