"""The todo list's shapes: the tool arguments and the `todo/write` event payload."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["STATUSES", "Status", "TodoItem", "TodoWriteArgs", "TodoWritePayload", "count"]

Status = Literal["pending", "in_progress", "completed"]
STATUSES: tuple[Status, ...] = ("pending", "in_progress", "completed")


class TodoItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    content: str = Field(description="The task, in a few imperative words.")
    status: Status = Field(description="pending, in_progress or completed.")


class TodoWriteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    todos: list[TodoItem] = Field(description="The whole list; it replaces the previous one.")


class TodoWritePayload(BaseModel):
    """`todo/write` data: `{"todos": [{"content", "status"}, ...]}`."""

    model_config = ConfigDict(extra="allow", frozen=True)
    todos: tuple[TodoItem, ...]


def count(todos: Sequence[TodoItem]) -> dict[str, int]:
    """`{"pending", "inProgress", "completed"}` counts, the export shape's key spelling."""
    return {
        "pending": sum(t.status == "pending" for t in todos),
        "inProgress": sum(t.status == "in_progress" for t in todos),
        "completed": sum(t.status == "completed" for t in todos),
    }
