"""harness-tool-todo: the `todo_write` tool, whose whole-list state lives on the session log.

A namespace plugin (ARCHITECTURE §4): `name`, `inject` and hook implementations, no `default`.
Hosts read the list through `harness_tool_todo.projections`, never through plugin memory.

    [plugins.todo]
    allow_parallel_in_progress = false    # or HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS
"""

from __future__ import annotations

from collections.abc import Sequence

from harness_core.log import EventType
from harness_core.plugins import PluginContext, hookimpl
from pydantic import BaseModel, ConfigDict

from ._model import STATUSES, Status, TodoItem, TodoWriteArgs, TodoWritePayload, count
from ._render import render_checklist, render_markdown
from ._tool import DESCRIPTION, EVENT_TYPE, TodoWriteTool

name = "todo"
inject = ("tools", "config")

__all__ = [
    "DESCRIPTION",
    "EVENT_TYPE",
    "STATUSES",
    "Status",
    "TodoConfig",
    "TodoItem",
    "TodoWriteArgs",
    "TodoWritePayload",
    "TodoWriteTool",
    "count",
    "harness_event_types",
    "harness_register_tools",
    "inject",
    "name",
    "render_checklist",
    "render_markdown",
]


class TodoConfig(BaseModel):
    """The `[plugins.todo]` section."""

    model_config = ConfigDict(extra="forbid")
    # Off by default: one active task keeps the model's focus and the user's view unambiguous.
    allow_parallel_in_progress: bool = False


@hookimpl
def harness_event_types() -> Sequence[EventType]:
    # Not surface: a todo update never reaches derive_messages, so the model history (and the
    # provider's prompt cache) only ever sees the tool call and its short result.
    return [EventType(EVENT_TYPE, TodoWritePayload, surface=False)]


@hookimpl
def harness_register_tools(ctx: PluginContext) -> None:
    config = ctx.config.parse(TodoConfig)
    ctx.tools.register(TodoWriteTool(allow_parallel_in_progress=config.allow_parallel_in_progress))
