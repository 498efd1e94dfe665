"""Unloading and reloading a plugin in process (HMR safety)."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_core.plugins import PluginHost
from harness_core.testing.pytest_plugin import FakeDistribution
from harness_core.tools import ExecContext

VERSIONED = """
from harness_core.plugins import hookimpl
from harness_core.tools import Tool, ToolResult
from pydantic import BaseModel, ConfigDict

name = "hot"
inject = ("tools",)
SEEN = []

class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

class Version(Tool[Args]):
    name = "version"
    description = "Which code answers."
    arguments = Args

    async def execute(self, args, ctx):
        return ToolResult("v{version}")

@hookimpl
def harness_register_tools(ctx):
    ctx.tools.register(Version())

@hookimpl
def harness_event_appended(session, event):
    SEEN.append(({version}, event.type))
"""


def install(fake_distribution: FakeDistribution) -> Path:
    info = fake_distribution(
        "hot-plugin", {"hot": "hot_mod"}, {"hot_mod.py": VERSIONED.format(version=0)}
    )
    return info.parent / "hot_mod.py"


async def test_reload_many_times_keeps_one_tool_and_reaches_new_code(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """After N reloads there is one `version` tool and it runs the latest source."""
    source = install(fake_distribution)
    plugin_host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "hot"})
    for version in range(1, 6):
        source.write_text(VERSIONED.format(version=version))
        record = plugin_host.reload("hot")
        assert record.status == "loaded" and record.tools == ["version"]
        assert plugin_host.tools.names().count("version") == 1
        result = await plugin_host.tools.execute("version", "{}", ExecContext())
        assert result.text == f"v{version}"
    callers = plugin_host.pm.hook.harness_event_appended.get_hookimpls()
    assert [impl.plugin_name for impl in callers] == ["hot"]


def test_unload_disposes_tools_and_observers(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """An unloaded plugin's tool is gone and its observer no longer runs."""
    install(fake_distribution)
    plugin_host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "hot"})
    plugin_host.unload("hot")
    assert plugin_host.tools.get("version") is None
    assert plugin_host.pm.hook.harness_event_appended.get_hookimpls() == []
    with pytest.raises(KeyError, match="no loaded plugin named 'hot'"):
        plugin_host.reload("hot")


def test_reload_of_broken_source_rejects_and_leaves_nothing(
    plugin_host: PluginHost, fake_distribution: FakeDistribution
) -> None:
    """Reloading into a syntax error reports it; the old tool does not linger."""
    source = install(fake_distribution)
    plugin_host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "hot"})
    source.write_text("def broken(:\n")
    record = plugin_host.reload("hot")
    assert record.status == "rejected" and "SyntaxError" in (record.reason or "")
    assert plugin_host.tools.get("version") is None


def test_builtins_cannot_be_reloaded(plugin_host: PluginHost) -> None:
    """Purging harness_core from sys.modules would break the host itself."""
    with pytest.raises(ValueError, match="built-in plugin cannot be reloaded"):
        plugin_host.reload("builtins")
