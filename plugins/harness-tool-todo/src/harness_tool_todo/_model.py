"""The todo list's shapes: the tool arguments and the `todo/write` event payload."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from ._vocabulary import STATUSES, Status

__all__ = [
    "STATUSES",
    "Status",
    "TodoConfig",
    "TodoItem",
    "TodoWriteArgs",
    "TodoWritePayload",
    "count",
]


class TodoConfig(BaseModel):
    """The `[plugins.todo]` section."""

    model_config = ConfigDict(extra="forbid")
    # Off by default: one active task keeps the model's focus and the user's view unambiguous.
    allow_parallel_in_progress: bool = False


# No class docstrings on the argument models: pydantic would put them into the JSON schema
# the model reads with every request. Field descriptions are the model-facing text.


class TodoItem(BaseModel):
    # One task. `extra="forbid"` is what rejects any item key but `content` and `status`.
    model_config = ConfigDict(extra="forbid", frozen=True)
    content: str = Field(description="The task, in a few imperative words.")
    status: Status = Field(description="pending, in_progress or completed.")


class TodoWriteArgs(BaseModel):
    # The tool's arguments; their strict JSON schema is what the model sees.
    model_config = ConfigDict(extra="forbid")
    todos: list[TodoItem] = Field(description="The whole list; it replaces the previous one.")


class TodoWritePayload(BaseModel):
    """`todo/write` data: `{"todos": [{"content", "status"}, ...]}`."""

    # Unknown top-level keys are kept, like every core payload: a newer plugin may add some.
    model_config = ConfigDict(extra="allow", frozen=True)
    todos: tuple[TodoItem, ...]


def count(todos: Sequence[TodoItem]) -> dict[str, int]:
    """`{"pending", "inProgress", "completed"}` counts, the export shape's key spelling."""
    return {
        "pending": sum(t.status == "pending" for t in todos),
        "inProgress": sum(t.status == "in_progress" for t in todos),
        "completed": sum(t.status == "completed" for t in todos),
    }
