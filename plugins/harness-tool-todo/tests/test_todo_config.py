"""`[plugins.todo] allow_parallel_in_progress` from config.toml and the env, via the real host."""

from __future__ import annotations

import json
from pathlib import Path

import harness_tool_todo
import pytest
from harness_core.config import Config
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext
from harness_tool_todo import TodoWriteTool
from harness_tool_todo._tool import DESCRIPTION, ONE_ACTIVE, PARALLEL_ACTIVE, PARALLEL_DESCRIPTION
from todo_helpers import open_turn

ENV_VAR = "HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS"
TWO_ACTIVE = json.dumps(
    {
        "todos": [
            {"content": "a", "status": "in_progress"},
            {"content": "b", "status": "in_progress"},
        ]
    }
)
ACCEPTED = "Updated todo list: 0 pending, 2 in progress, 0 completed."
REJECTED = "Error: invalid todos: at most one task may be in_progress, got 2"


def host_for(home: Path, env: dict[str, str]) -> PluginHost:
    """A host built from `home`'s config and `env`, with the todo plugin loaded."""
    host = PluginHost(Config.load(home, env))
    record = host.add(harness_tool_todo, dist="harness-tool-todo")
    assert record.status == "loaded", record.describe()
    return host


async def write_two_active(host: PluginHost, home: Path) -> str:
    """The result text of a write with two in_progress tasks, on a fresh session."""
    with SessionStore(home, host.event_types).create() as log:
        agent = Agent(log, ScriptedModel([]), host.tools)
        open_turn(agent)
        result = await host.tools.execute("todo_write", TWO_ACTIVE, ExecContext(agent=agent))
        return result.text


def write_config(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text, encoding="utf-8")


async def test_default_is_one_task_in_progress(harness_home: Path) -> None:
    """Without configuration, a second in_progress task is rejected."""
    host = host_for(harness_home, {})
    tool = host.tools.get("todo_write")
    assert isinstance(tool, TodoWriteTool) and tool.allow_parallel_in_progress is False
    assert await write_two_active(host, harness_home) == REJECTED


async def test_config_file_allows_parallel(harness_home: Path) -> None:
    """`[plugins.todo] allow_parallel_in_progress = true` in config.toml turns the rule off."""
    write_config(harness_home, "[plugins.todo]\nallow_parallel_in_progress = true\n")
    assert await write_two_active(host_for(harness_home, {}), harness_home) == ACCEPTED


async def test_harness_config_path_is_read(harness_home: Path, tmp_path: Path) -> None:
    """A config file named by HARNESS_CONFIG is read instead of $HARNESS_HOME/config.toml."""
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text("[plugins.todo]\nallow_parallel_in_progress = true\n")
    host = host_for(harness_home, {"HARNESS_CONFIG": str(elsewhere)})
    assert await write_two_active(host, harness_home) == ACCEPTED


@pytest.mark.parametrize("value", ["true", "1", "yes"])
async def test_env_var_allows_parallel(harness_home: Path, value: str) -> None:
    """HARNESS_TODO_ALLOW_PARALLEL_IN_PROGRESS turns the rule off."""
    host = host_for(harness_home, {ENV_VAR: value})
    assert await write_two_active(host, harness_home) == ACCEPTED


async def test_env_var_wins_over_the_file(harness_home: Path) -> None:
    """The env var overrides the config file, in both directions."""
    write_config(harness_home, "[plugins.todo]\nallow_parallel_in_progress = true\n")
    host = host_for(harness_home, {ENV_VAR: "false"})
    assert await write_two_active(host, harness_home) == REJECTED


def test_invalid_value_rejects_the_plugin_with_a_fix(harness_home: Path) -> None:
    """A value that is not a boolean rejects the plugin, naming the key, the env var and a fix."""
    write_config(harness_home, '[plugins.todo]\nallow_parallel_in_progress = "sometimes"\n')
    host = PluginHost(Config.load(harness_home, {}))
    record = host.add(harness_tool_todo, dist="harness-tool-todo")
    host.finish_loading()  # the section is parsed when the tools register
    assert record.status == "rejected"
    assert record.reason is not None
    assert "plugins.todo.allow_parallel_in_progress" in record.reason
    assert ENV_VAR in record.reason
    assert "todo_write" not in host.tools.names()


async def test_process_environment_is_read(
    harness_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Config.load(home)` with no explicit env reads the process environment."""
    monkeypatch.setenv(ENV_VAR, "true")
    host = PluginHost(Config.load(harness_home))
    host.add(harness_tool_todo, dist="harness-tool-todo")
    assert await write_two_active(host, harness_home) == ACCEPTED


def described(host: PluginHost) -> str:
    """The todo_write description as the model is sent it with every request."""
    (entry,) = [s for s in host.tools.schemas() if s["function"]["name"] == "todo_write"]
    return str(entry["function"]["description"])


@pytest.mark.parametrize(
    ("env", "description", "rule", "other"),
    [
        ({}, DESCRIPTION, ONE_ACTIVE, PARALLEL_ACTIVE),
        ({ENV_VAR: "true"}, PARALLEL_DESCRIPTION, PARALLEL_ACTIVE, ONE_ACTIVE),
    ],
    ids=["one-in-progress", "parallel"],
)
def test_the_description_teaches_the_policy_in_force(
    harness_home: Path, env: dict[str, str], description: str, rule: str, other: str
) -> None:
    """The model is taught the in-progress rule the tool enforces, and never the other one."""
    text = described(host_for(harness_home, env))
    assert text == description
    assert rule in text.splitlines() and other not in text
    assert len(text) < 1500
