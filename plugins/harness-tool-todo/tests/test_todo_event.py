"""The `todo/write` event: appended through a real SessionLog, a snapshot, not on the surface."""

from __future__ import annotations

import orjson
from harness_core.log import derive_messages
from harness_core.loop import Agent
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext
from harness_tool_todo import EVENT_TYPE, TodoItem, TodoWriteArgs, TodoWritePayload, TodoWriteTool
from harness_tool_todo.projections import Todo, current_todos
from todo_helpers import Call, todo_events

ITEMS = [
    {"content": "Read the code", "status": "completed"},
    {"content": "Write the tests", "status": "in_progress"},
    {"content": "Update the docs", "status": "pending"},
]
PLAN = {"todos": ITEMS}


def test_event_type_is_declared_not_surface(todo_host: PluginHost) -> None:
    """The plugin declares `todo/write` with its payload model, outside the surface."""
    declared = todo_host.event_types.get(EVENT_TYPE)
    assert declared is not None
    assert declared.payload is TodoWritePayload
    assert declared.surface is False
    assert EVENT_TYPE not in todo_host.event_types.surface


async def test_write_appends_one_event_in_the_open_turn(agent: Agent, call: Call) -> None:
    """A write appends exactly `{"todos": [...]}` inside the caller's turn, written to disk."""
    before = len(agent.session.events)
    await call(PLAN, agent)
    events = agent.session.events[before:]
    assert [e.type for e in events] == ["message/assistant", EVENT_TYPE, "tool/result"]
    event = events[1]
    assert event.data == PLAN
    assert event.turn == agent.turn
    line = agent.session.path.read_bytes().split(b"\n")[event.seq]
    assert orjson.loads(line) == event.to_json()


async def test_logged_event_is_a_snapshot(agent: Agent, todo_host: PluginHost) -> None:
    """Mutating the arguments or the result data after the call leaves the logged event alone."""
    tool = todo_host.tools.get("todo_write")
    assert isinstance(tool, TodoWriteTool)
    args = TodoWriteArgs.model_validate(PLAN)
    result = await tool.execute(args, ExecContext(agent=agent, call_id="c1"))
    event = agent.session.events[-1]
    assert event.type == EVENT_TYPE
    on_disk = agent.session.path.read_bytes()
    args.todos.append(TodoItem(content="Sneaked in", status="pending"))
    args.todos.pop(0)
    result.data["todos"][0]["content"] = "Changed afterwards"
    result.data["todos"].clear()
    result.data["counts"]["pending"] = 99
    assert event.data == PLAN
    assert agent.session.path.read_bytes() == on_disk
    assert current_todos(agent.session.events) == tuple(Todo(**t) for t in ITEMS)


async def test_last_write_wins(agent: Agent, call: Call) -> None:
    """Each write replaces the list; the latest event is the current list."""
    await call(PLAN, agent)
    await call({"todos": [{"content": "Only this", "status": "pending"}]}, agent)
    assert len(todo_events(agent.session)) == 2
    assert current_todos(agent.session.events) == (Todo("Only this", "pending"),)


async def test_event_never_reaches_the_model_history(
    agent: Agent, call: Call, todo_host: PluginHost
) -> None:
    """`derive_messages` is identical with and without the todo/write events."""
    await call(PLAN, agent)
    await call({"todos": []}, agent)
    await call({"todos": [{"content": "x", "status": "in_progress"}] * 2}, agent)  # rejected
    events = agent.session.events
    assert sum(e.type == EVENT_TYPE for e in events) == 2
    surface = todo_host.event_types.surface
    with_todos = derive_messages(events, surface)
    without = derive_messages([e for e in events if e.type != EVENT_TYPE], surface)
    assert with_todos == without
    # The incremental projection the loop sends from agrees with the fresh replay.
    assert agent.session.projection.request_messages() == with_todos
    tool_messages = [m for m in with_todos if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [
        "Updated todo list: 1 pending, 1 in progress, 1 completed.",
        "Updated todo list: 0 pending, 0 in progress, 0 completed.",
        'Error: invalid todos: duplicate content "x"',
    ]


async def test_harness_turn_usage_says_a_turn_that_wrote_a_plan_used_one(
    todo_host: PluginHost, agent: Agent, call: Call
) -> None:
    """The host asks the plugins what a turn used: a turn with a `todo/write` used a plan,
    one without it (or whose write was refused, so no event) did not."""
    await call({"todos": [{"content": "x", "status": "in_progress"}] * 2}, agent)  # rejected
    refused = [e for e in agent.session.events if e.turn == agent.turn]
    assert todo_host.hooks.turn_usage(refused) == {}
    await call(PLAN, agent)
    written = [e for e in agent.session.events if e.turn == agent.turn]
    assert todo_host.hooks.turn_usage(written) == {"plan_used": True}
    assert todo_host.observer_errors == []
