"""harness-tool-todo: the `todo_write` tool, whose whole-list state lives on the session log.

A namespace plugin: `name`, `inject` and hook implementations, no `default`. It brings its own
presentation through the host-side hooks: the `harness todos` command, the terminal plan
strip and the snapshot's `todos` field, all folded from `todo/write` events of the log; and it
carries the unfinished plan across a compaction (`harness_compaction_carry`).

The module stays light (no pydantic at import): the hooks import what they need when called,
so `harness --help` and the query commands do not pay for the tool's schema machinery.

    [plugins.todo]
    allow_parallel_in_progress = false    # or HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    from harness_core.hosts import Command, DockEntry, SnapshotFields, TerminalStrip
    from harness_core.log import Event, EventType, History
    from harness_core.plugins import PluginContext

    from ._model import TodoConfig, TodoItem, TodoWriteArgs, TodoWritePayload, count
    from ._render import render_checklist, render_markdown
    from ._tool import DESCRIPTION, TodoWriteTool
    from ._vocabulary import EVENT_TYPE, STATUSES, Status
    from .projections import Todo

name = "todo"
inject = ("tools", "config")

_EXPORTS = {
    "DESCRIPTION": "._tool",
    "EVENT_TYPE": "._vocabulary",
    "STATUSES": "._vocabulary",
    "Status": "._vocabulary",
    "Todo": ".projections",
    "TodoConfig": "._model",
    "TodoItem": "._model",
    "TodoWriteArgs": "._model",
    "TodoWritePayload": "._model",
    "TodoWriteTool": "._tool",
    "count": "._model",
    "render_checklist": "._render",
    "render_markdown": "._render",
}

__all__ = [
    "DESCRIPTION",
    "EVENT_TYPE",
    "STATUSES",
    "Status",
    "Todo",
    "TodoConfig",
    "TodoItem",
    "TodoWriteArgs",
    "TodoWritePayload",
    "TodoWriteTool",
    "count",
    "harness_cli_commands",
    "harness_compaction_carry",
    "harness_event_types",
    "harness_register_tools",
    "harness_snapshot_fields",
    "harness_terminal_strip",
    "harness_turn_usage",
    "harness_web_dock",
    "inject",
    "name",
    "render_checklist",
    "render_markdown",
]


def __getattr__(attribute: str) -> Any:
    module = _EXPORTS.get(attribute)
    if module is None:
        raise AttributeError(f"module 'harness_tool_todo' has no attribute {attribute!r}")
    value = getattr(importlib.import_module(module, __name__), attribute)
    globals()[attribute] = value
    return value


@hookimpl
def harness_event_types() -> Sequence[EventType]:
    from harness_core.log import EventType

    from ._vocabulary import EVENT_TYPE

    # Not surface: a todo update never reaches derive_messages, so the model history (and the
    # provider's prompt cache) only ever sees the tool call and its short result. The payload
    # model is named, not imported: reading a session (`harness events`) never loads pydantic.
    return [EventType(EVENT_TYPE, f"{__name__}._model:TodoWritePayload", surface=False)]


@hookimpl
def harness_register_tools(ctx: PluginContext) -> None:
    from ._model import TodoConfig
    from ._tool import TodoWriteTool

    config = ctx.config.parse(TodoConfig)
    ctx.tools.register(TodoWriteTool(allow_parallel_in_progress=config.allow_parallel_in_progress))


@hookimpl
def harness_compaction_carry(history: History) -> str | None:
    from ._carry import carried_plan

    # The plan survives a compaction verbatim, so the model continues it instead of
    # re-planning from a summary that may have blurred it.
    return carried_plan(history)


@hookimpl
def harness_turn_usage(events: Sequence[Event]) -> dict[str, bool | int] | None:
    from ._vocabulary import EVENT_TYPE

    # A turn that wrote a plan used one: the worker's batch report counts these (`plan_used`).
    return {"plan_used": True} if any(event.type == EVENT_TYPE for event in events) else None


@hookimpl
def harness_cli_commands() -> Sequence[Command]:
    from ._command import TODOS

    return [TODOS]


@hookimpl
def harness_terminal_strip() -> TerminalStrip:
    from ._hosts import PlanStrip

    return PlanStrip()


@hookimpl
def harness_web_dock() -> Sequence[DockEntry]:
    from harness_core.hosts import DockEntry

    # Order -1: above the queue rows and any later entry in the dock.
    return [DockEntry("conversation.input.dock", -1, __name__, "static/todo-dock.js")]


@hookimpl
def harness_snapshot_fields() -> SnapshotFields:
    from ._hosts import PlanSnapshot

    return PlanSnapshot()
