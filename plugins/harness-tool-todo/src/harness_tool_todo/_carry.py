"""The plan a compaction carries: the current todo list, for the model, after the summary.

A summary written by the model may drop the plan or blur its statuses; the list itself is on
the log, so it is carried verbatim instead (`harness_compaction_carry`). Only a list with
unfinished items is carried: a finished plan is history, and the summary covers history.
"""

from __future__ import annotations

from typing import Final

from harness_core.log import History

from ._vocabulary import EVENT_TYPE
from .projections import todos_of

__all__ = ["CARRIED_HEADER", "carried_plan"]

CARRIED_HEADER: Final = (
    "Your todo list as it stood before the compaction (continue it; update it with "
    "todo_write as you work, do not start a new plan):"
)


def carried_plan(history: History) -> str | None:
    """The latest list before the compaction with its statuses, or None when nothing is
    unfinished (the store's latest-event query: no scan, whatever the session's length)."""
    event = history.latest(EVENT_TYPE)
    if event is None:
        return None
    todos = todos_of(event)
    if all(todo.status == "completed" for todo in todos):
        return None
    lines = [f"- [{todo.status}] {todo.content}" for todo in todos]
    return "\n".join([CARRIED_HEADER, *lines])
