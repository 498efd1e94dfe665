"""The complete minimal plugin in docs/plugins.md installs, loads and works as written."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from harness_core.config import Config
from harness_core.plugins import PluginHost
from harness_core.testing.pytest_plugin import FakeDistribution
from harness_core.tools import ExecContext

DOC = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"


def code_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)


async def test_documented_plugin_loads_through_its_entry_point(
    fake_distribution: FakeDistribution,
) -> None:
    """The doc's pyproject entry point and module load, and the tool reads its config."""
    pyproject = tomllib.loads(code_blocks("toml")[0])
    entry_points = pyproject["project"]["entry-points"]["harness.plugins"]
    module = code_blocks("python")[0]
    fake_distribution(
        pyproject["project"]["name"],
        entry_points,
        {"harness_tool_shout/__init__.py": module},
        version=pyproject["project"]["version"],
    )
    config = Config({"plugins": {"shout": {"suffix": "?"}}}, env={"HARNESS_SHOUT_SUFFIX": '"!!"'})
    host = PluginHost(config)
    records = {r.name: r for r in host.load_entry_points(env={"HARNESS_LOAD_PLUGINS": "shout"})}
    host.finish_loading()
    assert records["shout"].status == "loaded"
    assert records["shout"].tools == ["shout"]
    result = await host.tools.execute("shout", '{"text": "hi"}', ExecContext())
    assert (result.text, result.data) == ("HI!!", {"length": 2})


async def test_documented_test_snippet_passes(fake_distribution: FakeDistribution) -> None:
    """The doc's pytest example runs green against the documented plugin."""
    fake_distribution(
        "harness-tool-shout", {}, {"harness_tool_shout/__init__.py": code_blocks("python")[0]}
    )
    namespace: dict[str, object] = {}
    test_snippet = next(b for b in code_blocks("python") if "async def test_shout" in b)
    exec(compile(test_snippet, str(DOC), "exec"), namespace)
    host = PluginHost(Config({}, env={}))
    added: list[str] = []

    def register(plugin: object) -> None:
        added.append(host.add(plugin).status)

    await namespace["test_shout"](host, register)  # type: ignore[operator]
    assert added == ["loaded"]
