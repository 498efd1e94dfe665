"""Packaging: the harness-core and harness-tool-todo wheels install into a fresh venv and work.

Slow (it builds two wheels and installs them with their dependencies), so marked `slow`;
CI still runs it.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CHECK = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    import anyio
    import harness_core, harness_tool_todo
    from harness_core.config import Config
    from harness_core.log import SessionStore
    from harness_core.loop import Agent
    from harness_core.models import ScriptedModel
    from harness_core.plugins import PluginHost
    from harness_tool_todo.projections import read_plan

    home = Path(sys.argv[1])
    host = PluginHost(Config.load(home))
    records = {r.name: r for r in host.load_entry_points()}
    host.finish_loading()
    todo = records["todo"]
    todos = [{"content": "Install the wheel", "status": "completed"},
             {"content": "Call todo_write", "status": "in_progress"}]
    model = ScriptedModel([
        {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]},
        {"text": "Done."},
    ])
    store = SessionStore(home, host.event_types)
    with store.create() as log:
        outcome = anyio.run(Agent(log, model, host.tools).run_turn, "Plan it.")
        results = [e.data["text"] for e in log.events if e.type == "tool/result"]
    print(json.dumps({
        "record": [todo.status, todo.dist, todo.version, todo.entry_point, todo.tools],
        "modules": [harness_core.__file__, harness_tool_todo.__file__],
        "outcome": outcome.status,
        "results": results,
        "plan": read_plan(store, log.session_id).export(),
    }))
    """
)


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a command; on failure, fail the test with its output."""
    proc = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(command)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc.stdout


def uv() -> str:
    found = shutil.which("uv")
    if found is None:
        pytest.skip("uv is not on PATH; the wheels are built with `uv build`")
    return found


def build_wheels(out: Path, plugin: str = "harness-tool-todo") -> tuple[Path, Path]:
    """harness-core's wheel and `plugin`'s, built from this checkout into `out`."""
    for package in ("harness-core", plugin):
        run([uv(), "build", "--package", package, "--wheel", "--out-dir", str(out)], cwd=ROOT)
    core = next(out.glob("harness_core-*.whl"))
    return core, next(out.glob(f"{plugin.replace('-', '_')}-*.whl"))


def install(venv: Path, wheels: Sequence[Path], env: dict[str, str]) -> Path:
    """A new venv at `venv` holding `wheels` and their dependencies from the index; its Python.

    uv's installer, not pip's: the same wheels from the same index, in seconds where pip takes
    a minute (it resolves and unpacks one package at a time), and four tests do this."""
    run([uv(), "venv", "--quiet", "--python", sys.executable, str(venv)], cwd=venv.parent, env=env)
    python = venv / "bin" / "python"
    command = [uv(), "pip", "install", "--quiet", "--python", str(python), *map(str, wheels)]
    run(command, cwd=venv.parent, env=env)
    return python


def wheel_contents(wheel_path: Path) -> tuple[list[str], str, str]:
    """A wheel's file names, its entry_points.txt and its METADATA."""
    with zipfile.ZipFile(wheel_path) as wheel:
        names = wheel.namelist()
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = wheel.read(f"{info}/entry_points.txt").decode()
        metadata = wheel.read(f"{info}/METADATA").decode()
    return names, entry_points, metadata


def test_todo_wheel_metadata(tmp_path: Path) -> None:
    """The plugin wheel carries its entry point, its dependency on the core and its sources."""
    _, todo = build_wheels(tmp_path / "dist")
    names, entry_points, metadata = wheel_contents(todo)
    assert "[harness.plugins]\ntodo = harness_tool_todo" in entry_points
    assert "Requires-Dist: harness-core" in metadata
    for module in ("__init__.py", "_model.py", "_tool.py", "_render.py", "projections.py"):
        assert f"harness_tool_todo/{module}" in names
    assert "harness_tool_todo/py.typed" in names
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_wheels_install_into_a_fresh_venv_and_work(tmp_path: Path) -> None:
    """Both wheels install in a new venv; the plugin loads from its entry point there and
    a todo_write call through the real loop appends the list and answers the exact text."""
    core, todo = build_wheels(tmp_path / "dist")
    venv = tmp_path / "venv"
    # The venv must see only what was installed: no workspace paths leak in.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    python = install(venv, [core, todo], env)
    home = tmp_path / "home"
    env |= {"HARNESS_HOME": str(home), "HARNESS_DEV": "1"}
    report = json.loads(run([str(python), "-c", CHECK, str(home)], cwd=tmp_path, env=env))
    assert report["record"] == [
        "loaded",
        "harness-tool-todo",
        md.version("harness-tool-todo"),
        "harness_tool_todo",
        ["todo_write"],
    ]
    for module in report["modules"]:
        assert Path(module).is_relative_to(venv), module
    assert report["outcome"] == "completed"
    assert report["results"] == ["Updated todo list: 0 pending, 1 in progress, 1 completed."]
    assert report["plan"] == {
        "todos": [
            {"content": "Install the wheel", "status": "completed"},
            {"content": "Call todo_write", "status": "in_progress"},
        ],
        "standing": True,
    }
