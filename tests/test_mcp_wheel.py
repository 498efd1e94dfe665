"""Packaging: the harness-tool-mcp wheel installs beside harness-core's in a fresh venv and works.

Slow (it builds two wheels and installs them with the mcp SDK), so marked `slow`; CI still
runs it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_todo_wheel import build_wheels, install, run, wheel_contents

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "plugins" / "harness-tool-mcp" / "tests" / "tiny_server.py"


def test_mcp_wheel_metadata(tmp_path: Path) -> None:
    """The wheel carries both entry points, its dependencies and its sources, no tests."""
    _, wheel_path = build_wheels(tmp_path / "dist", "harness-tool-mcp")
    names, entry_points, metadata = wheel_contents(wheel_path)
    assert "[harness.plugins]\nmcp = harness_tool_mcp" in entry_points
    assert "[harness.commands]\nmcp = mcp" in entry_points
    assert "Requires-Dist: harness-core" in metadata and "Requires-Dist: mcp" in metadata
    assert "harness_tool_mcp/_server.py" in names and "harness_tool_mcp/py.typed" in names
    assert not any("tiny_server" in n or "/tests/" in n for n in names)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_wheel_installs_into_a_fresh_venv_and_lists_its_tools(tmp_path: Path) -> None:
    """Both wheels install in a new venv; `harness plugins --json` there lists the
    plugin, loaded from the venv, with the configured server's tools."""
    core, plugin = build_wheels(tmp_path / "dist", "harness-tool-mcp")
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    install(venv, [core, plugin], env)
    home = tmp_path / "home"
    home.mkdir()
    # The test server runs on the venv's Python: the SDK it imports is the one installed there.
    (home / "config.toml").write_text(
        f"[plugins.mcp.servers.tiny]\ncommand = {json.dumps(str(venv / 'bin' / 'python'))}\n"
        f"args = {json.dumps([str(TINY)])}\n"
    )
    env |= {"HARNESS_HOME": str(home), "HARNESS_DEV": "1"}
    out = run([str(venv / "bin" / "harness"), "plugins", "--json"], cwd=tmp_path, env=env)
    (record,) = [r for r in json.loads(out) if r["name"] == "mcp"]
    assert (record["status"], record["dist"], record["commands"]) == (
        "loaded",
        "harness-tool-mcp",
        ["mcp"],
    )
    assert "tiny__echo" in record["tools"] and "tiny__add" in record["tools"]
    located = run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import harness_tool_mcp; print(harness_tool_mcp.__file__)",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert Path(located.strip()).is_relative_to(venv)
