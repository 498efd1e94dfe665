"""`harness submit --wait`: the queued turn's events as they are committed, then its end.

The events are read back from the store (a worker on another machine writes them); the
workflow's result, read from DBOS's tables on the same connection (no DBOS import), says how
the turn ended, and the exit status is `harness run`'s: 0 for a completed turn, 130 for a
cancelled one, 1 otherwise with the reason on stderr.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Final, TextIO

from harness_core.hosts import CommandError, one_line

from ._engine import outcome

if TYPE_CHECKING:
    from harness_core.log import Event
    from harness_core.runtime import Runtime

    from ._engine import Connection

__all__ = ["follow"]

POLL_SECONDS: Final = 0.02
EXIT_CANCELLED: Final = 130


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
    while True:
        status, summary, error = outcome(*queue, workflow)
        for event in reader.refresh():
            _show(event, out)
        if status not in ("ENQUEUED", "PENDING", "DELAYED"):
            break
        time.sleep(POLL_SECONDS)
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
