"""The current list and the standing plan, in memory and through the file's tail query."""

from __future__ import annotations

from typing import Any

from harness_core.log import Event
from harness_core.loop import Agent
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext
from harness_tool_todo.projections import (
    Plan,
    Todo,
    current_todos,
    read_current,
    read_plan,
    standing_plan,
    todos_of,
)
from todo_helpers import open_turn, raw

A = Todo("Read the code", "completed")
B = Todo("Fix the bug", "in_progress")
C = Todo("Run the tests", "pending")


async def write(host: PluginHost, agent: Agent, *todos: Todo) -> int:
    """Write `todos` through the real call path; the seq of the appended event."""
    arguments = raw({"todos": [t.export() for t in todos]})
    result = await host.tools.execute("todo_write", arguments, ExecContext(agent=agent))
    assert not result.is_error, result.text
    return agent.session.events[-1].seq


def assert_plan(agent: Agent, expected: Plan) -> None:
    """The in-memory fold and the store's latest-event query agree with `expected`."""
    events, store, session = agent.session.events, agent.store, agent.session_id
    assert store is not None
    assert standing_plan(events) == expected
    assert read_plan(store, session) == expected
    assert current_todos(events) == expected.todos
    assert read_current(store, session) == expected.todos


async def test_plan_follows_writes_and_turns(todo_host: PluginHost, agent: Agent) -> None:
    """A write makes the plan stand; a later turn/start clears the strip, not the list."""
    assert_plan(agent, Plan((), standing=False))
    first = await write(todo_host, agent, A, B)
    assert_plan(agent, Plan((A, B), standing=True, seq=first))
    second = await write(todo_host, agent, A, B, C)
    assert_plan(agent, Plan((A, B, C), standing=True, seq=second))
    open_turn(agent)
    assert_plan(agent, Plan((A, B, C), standing=False, seq=second))
    third = await write(todo_host, agent, C)
    assert_plan(agent, Plan((C,), standing=True, seq=third))
    # Events after the write that are not a turn/start keep it standing.
    agent.append("message/assistant", {"text": "Working on it."})
    assert_plan(agent, Plan((C,), standing=True, seq=third))
    open_turn(agent)
    open_turn(agent)
    assert_plan(agent, Plan((C,), standing=False, seq=third))
    cleared = await write(todo_host, agent)
    assert_plan(agent, Plan((), standing=True, seq=cleared))


async def test_export_shape(todo_host: PluginHost, agent: Agent) -> None:
    """`Plan.export()` is the `harness todos --json` shape: `{"todos": [...], "standing"}`."""
    await write(todo_host, agent, A, B)
    assert agent.store is not None
    exported = read_plan(agent.store, agent.session_id).export()
    assert exported == {
        "todos": [
            {"content": "Read the code", "status": "completed"},
            {"content": "Fix the bug", "status": "in_progress"},
        ],
        "standing": True,
    }
    assert Plan((), standing=False).export() == {"todos": [], "standing": False}


def event(data: dict[str, Any], seq: int = 5) -> Event:
    return Event(seq, "todo/write", "2025-01-01T00:00:00.000Z", data, turn=1)


def test_fold_tolerates_malformed_and_newer_items() -> None:
    """Malformed items are skipped and unknown item keys ignored: replay never fails."""
    data = {
        "todos": [
            {"content": "ok", "status": "pending"},
            {"content": "from a newer writer", "status": "completed", "priority": "high"},
            {"content": "unknown status", "status": "blocked"},
            {"status": "pending"},
            "not an item",
            {"content": 3, "status": "pending"},
        ],
        "note": "an unknown top-level key",
    }
    assert todos_of(event(data)) == (
        Todo("ok", "pending"),
        Todo("from a newer writer", "completed"),
    )
    assert todos_of(event({"todos": "garbage"})) == ()
    assert todos_of(event({})) == ()


def test_fold_ignores_the_in_progress_policy() -> None:
    """Replay never re-applies validation: several in_progress tasks fold as written."""
    data = {"todos": [{"content": c, "status": "in_progress"} for c in ("a", "b", "c")]}
    events = [event(data)]
    assert [t.content for t in current_todos(events)] == ["a", "b", "c"]
    assert standing_plan(events).standing is True


def test_only_a_turn_start_ends_the_standing_plan() -> None:
    """Other events after the write, whatever their type's name, leave the plan standing."""
    written = Event(3, "todo/write", "t", {"todos": [{"content": "a", "status": "pending"}]}, 1)
    later = [
        Event(4, kind, "t", {}, 1)
        for kind in ("message/assistant", "turn/end", "usage/report", "web/note", "zz/last")
    ]
    assert standing_plan([written, *later]) == Plan((Todo("a", "pending"),), True, 3)
    assert standing_plan([written, *later, Event(9, "turn/start", "t", {}, 2)]).standing is False
