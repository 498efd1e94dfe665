"""Fixtures for the todo plugin's unit tests: a host with the plugin, agents with an open turn.

Everything is real: a `PluginHost` that loaded the plugin module, session files under the
test's HARNESS_HOME, and calls through `ToolRegistry.execute`, the path the agent loop takes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import harness_tool_todo
import pytest
from harness_core.log import AssistantMessage, SessionLog, SessionStore, ToolCall, ToolResultPayload
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.testing.pytest_plugin import RegisterPlugin
from harness_core.tools import ExecContext
from harness_core.tools import ToolResult as CallResult
from todo_helpers import Call, NewAgent, open_turn, raw

_call_ids = itertools.count(1)


@pytest.fixture
def todo_host(plugin_host: PluginHost, register_plugin: RegisterPlugin) -> PluginHost:
    """A host with the built-ins and the todo plugin, loaded through the host's transaction."""
    record = register_plugin(harness_tool_todo, dist="harness-tool-todo")
    assert record.status == "loaded", record.describe()
    return plugin_host


@pytest.fixture
def store(todo_host: PluginHost, harness_home: Path) -> SessionStore:
    """The session store of this test's HARNESS_HOME, knowing the todo event type."""
    return SessionStore(harness_home, todo_host.event_types)


@pytest.fixture
def new_agent(todo_host: PluginHost, store: SessionStore) -> Iterator[NewAgent]:
    """Make agents on fresh sessions, each with a turn open; their logs close at teardown."""
    logs: list[SessionLog] = []

    def make() -> Agent:
        log = store.create(system_prompt="You are a test agent.", cwd=str(store.home))
        logs.append(log)
        agent = Agent(log, ScriptedModel([]), todo_host.tools, store=store)
        open_turn(agent)
        return agent

    yield make
    for log in logs:
        log.close()


@pytest.fixture
def agent(new_agent: NewAgent) -> Agent:
    """An agent on a fresh session with turn 1 open."""
    return new_agent()


@pytest.fixture
def call(todo_host: PluginHost) -> Call:
    """Call todo_write as the loop does: assistant message, `tools.execute`, tool/result."""

    async def run(arguments: Any, agent: Agent | None = None) -> CallResult:
        arguments = raw(arguments)
        if agent is None:
            return await todo_host.tools.execute("todo_write", arguments, ExecContext())
        call_id = f"call_{next(_call_ids)}"
        agent.append(
            "message/assistant",
            AssistantMessage(
                tool_calls=(ToolCall(id=call_id, name="todo_write", arguments=arguments),)
            ),
        )
        context = ExecContext(agent=agent, call_id=call_id)
        result = await todo_host.tools.execute("todo_write", arguments, context)
        agent.append(
            "tool/result",
            ToolResultPayload(
                call_id=call_id,
                tool_name="todo_write",
                text=result.text,
                is_error=result.is_error,
                data=result.data,
            ),
        )
        return result

    return run
