"""Reload safety: `host.reload("todo")` leaves exactly one todo_write, running the new code."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import harness_tool_todo
import pytest
from harness_core.config import Config
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.testing.pytest_plugin import FakeDistribution
from harness_core.tools import ExecContext
from harness_tool_todo.projections import current_todos
from todo_helpers import open_turn

SOURCE = Path(harness_tool_todo.__file__).parent
WRITE = json.dumps({"todos": [{"content": "Reload me", "status": "in_progress"}]})


@pytest.fixture
def restore_todo_modules() -> Iterator[None]:
    """Put the original harness_tool_todo modules back: a reload replaces them in sys.modules."""
    saved = {k: v for k, v in sys.modules.items() if k.partition(".")[0] == "harness_tool_todo"}
    yield
    for name in [k for k in sys.modules if k.partition(".")[0] == "harness_tool_todo"]:
        del sys.modules[name]
    sys.modules.update(saved)


def entry_point_host(home: Path) -> PluginHost:
    """A host that loaded the installed harness-tool-todo through its entry point."""
    host = PluginHost(Config.load(home, {}))
    records = host.load_entry_points({"HARNESS_LOAD_PLUGINS": "harness-tool-todo"})
    (record,) = [r for r in records if r.status != "disabled"]
    assert (record.status, record.dist) == ("loaded", "harness-tool-todo"), record.describe()
    return host


def todo_plugins(host: PluginHost) -> list[object]:
    return [p for name, p in host.pm.list_name_plugin() if name == "todo"]


@pytest.mark.usefixtures("restore_todo_modules")
async def test_reload_many_times_keeps_one_tool(harness_home: Path) -> None:
    """Twenty reloads: one todo_write, one plugin, and each time the freshly imported code."""
    host = entry_point_host(harness_home)
    with SessionStore(harness_home, host.event_types).create() as log:
        agent = Agent(log, ScriptedModel([]), host.tools)
        open_turn(agent)
        seen: list[object] = [host.tools.get("todo_write")]
        for _ in range(20):
            record = host.reload("todo")
            assert record.status == "loaded", record.describe()
            assert record.tools == ["todo_write"]
            assert host.tools.names().count("todo_write") == 1
            assert len(todo_plugins(host)) == 1
            tool = host.tools.get("todo_write")
            # A new object of a newly imported class: nothing of the old module is reused.
            assert all(tool is not old and type(tool) is not type(old) for old in seen)
            seen.append(tool)
            fresh: ModuleType = sys.modules["harness_tool_todo._tool"]
            assert type(tool) is fresh.TodoWriteTool
            payload = sys.modules["harness_tool_todo._model"].TodoWritePayload
            declared = host.event_types.get("todo/write")
            assert declared is not None and declared.payload is payload
            result = await host.tools.execute("todo_write", WRITE, ExecContext(agent=agent))
            assert result.text == "Updated todo list: 0 pending, 1 in progress, 0 completed."
        writes = [e for e in log.events if e.type == "todo/write"]
        assert len(writes) == 20
        assert [t.content for t in current_todos(log.events)] == ["Reload me"]


@pytest.mark.usefixtures("restore_todo_modules")
def test_unload_removes_the_tool(harness_home: Path) -> None:
    """Unloading disposes todo_write and unregisters the plugin's hooks."""
    host = entry_point_host(harness_home)
    host.unload("todo")
    assert "todo_write" not in host.tools.names()
    assert todo_plugins(host) == []


async def test_reload_runs_rewritten_code(
    fake_distribution: FakeDistribution,
    harness_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A copy of the plugin installed as a distribution, rewritten between reloads: each call
    after a reload runs the code on disk at that reload, never a stale closure."""
    # Same-second rewrites of a same-sized file would otherwise hit a stale .pyc.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    files = {f"todo_gen/{p.name}": p.read_text("utf-8") for p in SOURCE.glob("*.py")}
    info = fake_distribution("todo-gen", {"todo": "todo_gen"}, files)
    tool_file = info.parent / "todo_gen" / "_tool.py"
    original = tool_file.read_text("utf-8")
    assert '"Updated todo list: ' in original

    host = PluginHost(Config.load(harness_home, {}))
    records = host.load_entry_points({"HARNESS_LOAD_PLUGINS": "todo-gen"})
    (record,) = [r for r in records if r.status != "disabled"]
    assert (record.status, record.dist) == ("loaded", "todo-gen"), record.describe()
    with SessionStore(harness_home, host.event_types).create() as log:
        agent = Agent(log, ScriptedModel([]), host.tools)
        open_turn(agent)
        for generation in range(1, 8):
            marked = f'"Updated todo list (generation {generation}): '
            tool_file.write_text(original.replace('"Updated todo list: ', marked), "utf-8")
            assert host.reload("todo").status == "loaded"
            assert host.tools.names().count("todo_write") == 1
            result = await host.tools.execute("todo_write", WRITE, ExecContext(agent=agent))
            assert result.text == (
                f"Updated todo list (generation {generation}): "
                "0 pending, 1 in progress, 0 completed."
            )
        assert sum(e.type == "todo/write" for e in log.events) == 7
