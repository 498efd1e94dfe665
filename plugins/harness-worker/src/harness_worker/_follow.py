"""`harness submit --wait`: the queued turn's events as they are committed, then its end.

The events are read back from the store (a worker on another machine writes them); the
workflow's result says how the turn ended, and the exit status is `harness run`'s: 0 for a
completed turn, 130 for a cancelled one, 1 otherwise with the reason on stderr.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final, TextIO

from harness_core.hosts import CommandError, one_line

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowHandle
    from harness_core.log import Event
    from harness_core.runtime import Runtime

__all__ = ["follow"]

POLL_SECONDS: Final = 0.02
EXIT_CANCELLED: Final = 130


def follow(runtime: Runtime, queue: DBOSClient, session_id: str, workflow: str, out: TextIO) -> int:
    reader = runtime.reader(session_id)
    seen = reader.next_seq
    result: dict[str, Any] = {}
    waiter = threading.Thread(target=_wait, args=(queue, workflow, result), daemon=True)
    waiter.start()
    while waiter.is_alive():
        waiter.join(POLL_SECONDS)
        for event in reader.refresh():
            if event.seq >= seen:
                _show(event, out)
    for event in reader.refresh():
        _show(event, out)
    if "error" in result:
        raise CommandError(f"the turn did not run: {result['error']}")
    summary = result["summary"]
    if summary["status"] == "completed":
        return 0
    if summary["status"] == "cancelled":
        raise CommandError("the turn was cancelled; the session keeps what it did", EXIT_CANCELLED)
    raise CommandError(
        f"the turn ended with {summary['status']}: {summary['error'] or 'no detail'}"
    )


def _wait(queue: DBOSClient, workflow: str, result: dict[str, Any]) -> None:
    try:
        handle: WorkflowHandle[dict[str, Any]] = queue.retrieve_workflow(workflow)
        result["summary"] = handle.get_result(polling_interval_sec=POLL_SECONDS)
    except Exception as exc:
        result["error"] = str(exc) or type(exc).__name__


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
