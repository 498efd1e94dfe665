"""harness-tool-todo through the real `harness.plugins` entry point of the installed workspace."""

from __future__ import annotations

import importlib.metadata as md
from pathlib import Path
from types import ModuleType

import harness_tool_todo
import pytest
from harness_core.config import Config
from harness_core.plugins import GROUP, SERVICES, PluginHost, PluginRecord, discover
from harness_core.plugins._shape import resolve_shape


def load(home: Path, **env: str) -> tuple[PluginHost, dict[str, PluginRecord]]:
    host = PluginHost(Config.load(home, env))
    records = {record.name: record for record in host.load_entry_points(env)}
    host.finish_loading()
    return host, records


def test_entry_point_metadata_is_discovered_without_import() -> None:
    """The installed distribution declares `todo = "harness_tool_todo"` in `harness.plugins`."""
    (candidate,) = [c for c in discover() if c.dist == "harness-tool-todo"]
    assert (candidate.name, candidate.value) == ("todo", "harness_tool_todo")
    assert candidate.version == md.version("harness-tool-todo")
    (entry_point,) = [
        ep for ep in md.distribution("harness-tool-todo").entry_points if ep.group == GROUP
    ]
    assert (entry_point.name, entry_point.value) == ("todo", "harness_tool_todo")


def test_loads_through_the_entry_point(harness_home: Path) -> None:
    """The loader records it `loaded`, with its distribution, hooks and tool."""
    host, records = load(harness_home, HARNESS_STRICT_PLUGINS="1")
    record = records["todo"]
    assert (record.status, record.dist, record.version, record.entry_point) == (
        "loaded",
        "harness-tool-todo",
        md.version("harness-tool-todo"),
        "harness_tool_todo",
    )
    assert record.reason is None
    assert record.hooks == [
        "harness_cli_commands",
        "harness_compaction_carry",
        "harness_event_types",
        "harness_register_tools",
        "harness_snapshot_fields",
        "harness_terminal_strip",
        "harness_turn_usage",
        "harness_web_dock",
    ]
    assert record.tools == ["todo_write"]
    assert host.tools.provider("todo_write") == "todo"
    declared = host.event_types.get("todo/write")
    assert declared is not None and declared.surface is False
    assert declared.owner == "harness_tool_todo"


def test_module_has_the_namespace_plugin_shape() -> None:
    """A namespace module: `name`, a tuple `inject` of host services, marked hooks, no `default`."""
    loaded = md.distribution("harness-tool-todo").entry_points.select(group=GROUP)["todo"].load()
    assert isinstance(loaded, ModuleType) and loaded is harness_tool_todo
    assert not hasattr(loaded, "default")
    known_hooks = PluginHost(Config({}, env={})).known_hooks
    shape = resolve_shape(loaded, "harness-tool-todo entry point todo", known_hooks)
    assert shape.plugin is loaded
    assert shape.name == "todo"
    assert shape.inject == ("tools", "config")
    assert set(shape.inject) <= set(SERVICES)


def test_disabled_by_distribution_name(harness_home: Path) -> None:
    """HARNESS_DISABLE_PLUGINS=harness-tool-todo leaves the host without todo_write."""
    host, records = load(harness_home, HARNESS_DISABLE_PLUGINS="harness-tool-todo")
    assert records["todo"].status == "disabled"
    assert "todo_write" not in host.tools.names()
    assert host.event_types.get("todo/write") is None


@pytest.mark.parametrize("allow", ["todo", "harness-tool-todo", "harness_tool_todo"])
def test_allow_list_selects_it(harness_home: Path, allow: str) -> None:
    """HARNESS_LOAD_PLUGINS matches it by entry-point name or distribution name."""
    host, records = load(harness_home, HARNESS_LOAD_PLUGINS=allow)
    assert records["todo"].status == "loaded"
    assert "todo_write" in host.tools.names()
