"""Packaging: the harness-model-anthropic wheel installs beside harness-core's in a fresh venv,
its entry point loads, and `anthropic:MODEL` is a model spec there.

Slow (two wheels built, the anthropic SDK installed), so marked `slow`; CI still runs it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_todo_wheel import build_wheels, install, run, wheel_contents


def test_anthropic_wheel_metadata(tmp_path: Path) -> None:
    """The wheel carries its entry point, its dependencies and its sources, no tests."""
    _, wheel_path = build_wheels(tmp_path / "dist", "harness-model-anthropic")
    names, entry_points, metadata = wheel_contents(wheel_path)
    assert "[harness.plugins]\nanthropic = harness_model_anthropic" in entry_points
    assert "Requires-Dist: harness-core" in metadata and "Requires-Dist: anthropic" in metadata
    assert "harness_model_anthropic/__init__.py" in names
    assert not any("/tests/" in n for n in names)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_wheel_installs_into_a_fresh_venv_and_provides_its_models(tmp_path: Path) -> None:
    """Both wheels install in a new venv; `harness plugins --json` there lists the plugin
    loaded, and `anthropic:MODEL` without a key is the one-line error naming the variable."""
    core, plugin = build_wheels(tmp_path / "dist", "harness-model-anthropic")
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.pop("ANTHROPIC_API_KEY", None)
    install(venv, [core, plugin], env)
    env["HARNESS_HOME"] = str(tmp_path / "home")
    harness = str(venv / "bin" / "harness")
    out = run([harness, "plugins", "--json"], cwd=tmp_path, env=env)
    (record,) = [r for r in json.loads(out) if r["name"] == "anthropic"]
    assert (record["status"], record["dist"]) == ("loaded", "harness-model-anthropic")
    refused = subprocess.run(
        [harness, "run", "--model", "anthropic:some-model", "hi"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert refused.returncode == 1
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("harness: error:") and "ANTHROPIC_API_KEY" in line
