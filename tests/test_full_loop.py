"""The whole loop with real parts: entry-point plugins, a script file, the durable log."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from harness_core import builtins
from harness_core.config import Config
from harness_core.log import SessionLog, SessionStore, derive_messages
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_tool_todo.projections import read_current, read_plan

Todos = list[dict[str, str]]
Step = dict[str, Any]


@pytest.fixture
def host() -> PluginHost:
    """Plugins loaded the way the CLI loads them: through the `harness.plugins` entry points."""
    plugin_host = PluginHost(Config({}, env={}))
    builtins.add_to(plugin_host)
    records = {r.name: r for r in plugin_host.load_entry_points(env={})}
    assert (records["todo"].dist, records["todo"].status) == ("harness-tool-todo", "loaded")
    return plugin_host


@pytest.fixture
def store(host: PluginHost, harness_home: Path) -> SessionStore:
    return SessionStore(harness_home, host.event_types, on_append=host.hooks.event_appended)


def todos(*items: tuple[str, str]) -> Todos:
    return [{"content": content, "status": status} for content, status in items]


def write(items: Todos, call_id: str | None = None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "todo_write", "arguments": {"todos": items}}
    return call | ({"id": call_id} if call_id else {})


def script_file(tmp_path: Path, steps: list[dict[str, Any]]) -> ScriptedModel:
    """Write the steps as a script file and load it the way `--model scripted:PATH` does."""
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": steps}, indent=2), encoding="utf-8")
    return ScriptedModel.from_file(path)


def start(store: SessionStore, host: PluginHost, model: ScriptedModel) -> Agent:
    log = store.create(system_prompt="You are a careful agent.", cwd=os.getcwd())
    return Agent(log, model, host.tools, store=store)


def written(log: SessionLog) -> list[Todos]:
    return [e.data["todos"] for e in log.events if e.type == "todo/write"]


PLAN = todos(("Read the code", "in_progress"), ("Fix the bug", "pending"))
ADVANCED = todos(("Read the code", "completed"), ("Fix the bug", "in_progress"))


async def test_todo_write_lands_and_a_second_write_replaces_it(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """Two writes from a script file: two todo/write events, the current list is the second."""
    steps: list[Step] = [
        {"tool_calls": [write(PLAN)]},
        {"tool_calls": [write(ADVANCED)]},
        {"text": "Done."},
    ]
    model = script_file(tmp_path, steps)
    agent = start(store, host, model)
    outcome = await agent.run_turn("Fix the bug.")
    assert (outcome.status, outcome.text, model.remaining) == ("completed", "Done.", 0)
    assert written(agent.session) == [PLAN, ADVANCED]
    assert [t.export() for t in read_current(store, agent.session_id)] == ADVANCED
    plan = read_plan(store, agent.session_id)
    assert ([t.export() for t in plan.todos], plan.standing) == (ADVANCED, True)
    # The model sees its calls and the short results, never the todo/write events.
    assert [m["content"] for m in model.requests[2] if m["role"] == "tool"] == [
        "Updated todo list: 1 pending, 1 in progress, 0 completed.",
        "Updated todo list: 0 pending, 1 in progress, 1 completed.",
    ]


async def test_two_writes_in_one_message_run_in_call_order_and_the_later_wins(
    store: SessionStore, host: PluginHost
) -> None:
    """todo_write is exclusive: both calls of one message run in order; the second list wins."""
    model = ScriptedModel(
        [{"tool_calls": [write(PLAN, "w1"), write(ADVANCED, "w2")]}, {"text": "ok"}]
    )
    agent = start(store, host, model)
    await agent.run_turn("Plan twice.")
    assert written(agent.session) == [PLAN, ADVANCED]
    events = agent.session.events
    assert [(e.type, e.data.get("call_id")) for e in events[4:8]] == [
        ("todo/write", None),
        ("tool/result", "w1"),
        ("todo/write", None),
        ("tool/result", "w2"),
    ]
    assert [t.export() for t in read_current(store, agent.session_id)] == ADVANCED


async def test_a_subagents_todos_stay_in_its_own_session(
    store: SessionStore, host: PluginHost
) -> None:
    """Parent and child each keep their own list; neither write leaks into the other log."""
    child_plan = todos(("Inspect the module", "in_progress"))
    steps: list[Step] = [
        {"tool_calls": [write(PLAN)]},
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "Inspect the module."}}]},
        {"tool_calls": [write(child_plan)]},
        {"text": "The module is fine."},
        {"text": "All done."},
    ]
    agent = start(store, host, ScriptedModel(steps))
    await agent.run_turn("Work with a helper.")
    [child] = [s for s in store.list() if s.parent_session == agent.session.session_id]
    assert [t.export() for t in read_current(store, agent.session_id)] == PLAN
    assert [t.export() for t in read_current(store, child.id)] == child_plan
    assert written(agent.session) == [PLAN]
    assert written(store.open(child.id, writable=False)) == [child_plan]


async def test_malformed_calls_come_back_as_errors_and_the_turn_ends_cleanly(
    store: SessionStore, host: PluginHost
) -> None:
    """Bad JSON, an unknown tool and a schema error: exact error texts, then a normal end."""
    calls: list[Step] = [
        {"name": "todo_write", "arguments": '{"todos": [{"content": "a"'},
        {"name": "todo_wirte", "arguments": {"todos": []}},
        {"name": "todo_write", "arguments": {"todos": [{"content": "a", "status": "done"}]}},
    ]
    steps: list[Step] = [{"tool_calls": calls}, {"tool_calls": [write(PLAN)]}, {"text": "Fixed."}]
    model = ScriptedModel(steps)
    agent = start(store, host, model)
    outcome = await agent.run_turn("Go.")
    assert model.requests[1][3:] == [
        {
            "role": "tool",
            "tool_call_id": "call_1_1",
            "content": "Error: the arguments for todo_write are not valid JSON (unexpected end "
            "of data: line 1 column 27 (char 26)). Send one JSON object that matches the "
            "tool's schema.",
            "is_error": True,
        },
        {
            "role": "tool",
            "tool_call_id": "call_1_2",
            "content": 'Error: unknown tool "todo_wirte". Available tools: bash, subagent, '
            "todo_write.",
            "is_error": True,
        },
        {
            "role": "tool",
            "tool_call_id": "call_1_3",
            "content": "Error: invalid arguments for todo_write: todos.0.status: Input should "
            "be 'pending', 'in_progress' or 'completed'",
            "is_error": True,
        },
    ]
    assert (outcome.status, outcome.text) == ("completed", "Fixed.")
    assert agent.session.events[-1].data == {"status": "completed", "error": None}
    assert written(agent.session) == [PLAN]  # rejected calls appended nothing


async def test_the_history_derived_after_reopening_is_what_the_model_was_sent(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """Replaying the closed session from disk yields exactly the requests plus the answers."""
    steps: list[Step] = [
        {
            "text": "Let me look.",
            "tool_calls": [write(PLAN), {"name": "bash", "arguments": {"command": "echo hi"}}],
        },
        {"tool_calls": [{"name": "bash", "arguments": "{not json"}]},
        {"text": "First turn done."},
        {"tool_calls": [write(ADVANCED)]},
        {"text": "Second turn done."},
    ]
    model = ScriptedModel(steps)
    agent = start(store, host, model)
    await agent.run_turn("First.")
    await agent.run_turn("Second.")
    agent.session.close()
    replayed = store.open(agent.session.session_id, writable=False)
    derived = derive_messages(replayed.events, store.registry.surface)
    last = model.requests[-1]
    assert derived == [*last, {"role": "assistant", "content": "Second turn done."}]
    for request in model.requests:
        assert derived[: len(request)] == request
    assert replayed.problems == []
