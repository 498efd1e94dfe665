"""The queue `harness serve --queue` posts turns to (a `TurnQueue`): harness-worker's.

A turn the page posts is enqueued like `harness submit`'s, with an id that starts with its
session's, so what runs and what waits for one session (whoever queued it) is one query of
DBOS's own: a PENDING workflow is running, ENQUEUED ones wait, oldest first.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from . import _engine, _tables

if TYPE_CHECKING:
    from dbos import DBOSClient, WorkflowStatus
    from harness_core.log import Store

    from ._engine import Connection

__all__ = ["WorkerQueue"]


class WorkerQueue:
    """Turns of `store`'s sessions, queued for the workers; connects on first use."""

    def __init__(self, store: Store, url: str) -> None:
        self.store = store
        self.url = url  # the store's database
        self._client: DBOSClient | None = None
        self._conn: Connection | None = None  # enqueues, serialized by the lock
        self._schema = ""
        self._connecting = threading.Lock()

    def _queue(self) -> DBOSClient:
        with self._connecting:
            if self._client is None:
                self._client = _engine.client(self.url)
            return self._client

    def submit(self, session_id: str, prompt: str, spec: str | None) -> dict[str, int]:
        running, waiting = self.state(session_id)
        job = {"session": session_id, "prompt": prompt, "model": spec}
        with self._connecting:
            if self._conn is None or self._conn.closed:
                self._conn = _tables.connect(self.url)
                self._schema = _engine.queue_schema(self._conn, self.url)
            _engine.enqueue(self._conn, self._schema, job)
        if running or waiting:
            return {"queued": len(waiting) + 1}
        last = self.store.latest(session_id, ("turn/start",))
        return {"turn": (last.turn or 0) + 1 if last is not None else 1}

    def state(self, session_id: str) -> tuple[bool, list[str]]:
        running, waiting = self._flows(session_id)
        return running is not None, [_prompt(flow.input) for flow in waiting]

    def _flows(self, session_id: str) -> tuple[WorkflowStatus | None, list[WorkflowStatus]]:
        """The session's running workflow, if any, and its waiting ones, oldest first."""
        flows = self._queue().list_queued_workflows(
            queue_name=_engine.QUEUE,
            workflow_id_prefix=f"{session_id}/",
            load_output=False,
        )
        running = next((flow for flow in flows if flow.status == "PENDING"), None)
        waiting = sorted(
            (flow for flow in flows if flow.status == "ENQUEUED"),
            key=lambda flow: flow.created_at or 0,
        )
        return running, waiting

    def unqueue(self, session_id: str, position: int, prompt: str) -> bool:
        """A cancelled workflow that never started is never run: that is the removal."""
        _, waiting = self._flows(session_id)
        if not 1 <= position <= len(waiting) or _prompt(waiting[position - 1].input) != prompt:
            return False
        self._queue().cancel_workflow(waiting[position - 1].workflow_id)
        return True

    def cancel(self, session_id: str) -> bool:
        """The worker running it sees the cancellation within a second and cancels the turn
        as Ctrl-C would (`_turn.py`)."""
        running, _ = self._flows(session_id)
        if running is None:
            return False
        self._queue().cancel_workflow(running.workflow_id)
        return True

    def close(self) -> None:
        with self._connecting:
            if self._client is not None:
                self._client.destroy()
                self._client = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _prompt(inputs: Any) -> str:
    try:
        return str(inputs["args"][0]["prompt"])
    except (TypeError, KeyError, IndexError):
        return ""
