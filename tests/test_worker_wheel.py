"""Packaging: the harness-worker wheel installs beside harness-core's and harness-store-postgres'
in a fresh venv; `harness` there finds the plugin through its entry point, and a worker from
that venv runs a turn `harness submit --wait` queued.

Slow (three wheels built, DBOS and psycopg installed), so marked `slow`; CI still runs it.
The wheels are built, and the venv made, once for the module's tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import test_worker_cli
from test_cli_support import write_script
from test_todo_wheel import build_wheels, install, run, wheel_contents
from test_worker_cli import Worker

url = test_worker_cli.url  # the fixture: a fresh store, DBOS's schema dropped with it


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """harness-core's, harness-store-postgres' and harness-worker's wheels, built once."""
    dist = tmp_path_factory.mktemp("worker-wheel") / "dist"
    core, store = build_wheels(dist, "harness-store-postgres")
    _, worker = build_wheels(dist, "harness-worker")
    return [core, store, worker]


def test_worker_wheel_metadata(wheels: list[Path]) -> None:
    """The wheel carries its entry points, its dependencies and its sources, no tests."""
    names, entry_points, metadata = wheel_contents(wheels[-1])
    assert "[harness.plugins]\nworker = harness_worker" in entry_points
    for command in ("worker", "submit", "batch"):
        assert f"{command} = worker" in entry_points
    for dependency in ("harness-core", "harness-store-postgres", "dbos"):
        assert f"Requires-Dist: {dependency}" in metadata
    assert "harness_worker/_turn.py" in names and "harness_worker/py.typed" in names
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)


@pytest.fixture(scope="module")
def venv(wheels: list[Path]) -> Path:
    """A new venv with the three wheels installed (their dependencies from the index)."""
    tmp = wheels[0].parents[1]
    venv = tmp / "venv"
    install(venv, wheels, venv_env(tmp))
    return venv


def venv_env(tmp: Path) -> dict[str, str]:
    """The environment of the venv's programs: no workspace path leaks in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return env | {"HARNESS_HOME": str(tmp / "home"), "HARNESS_DEV": "1"}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_installed_harness_finds_the_plugin_and_its_commands(
    venv: Path, tmp_path: Path
) -> None:
    """`harness plugins --json` lists worker, loaded from the venv, with its three commands and
    the turn-queue hook; `harness submit --help` shows the command's usage."""
    env = venv_env(tmp_path)
    harness = str(venv / "bin" / "harness")
    out = run([harness, "plugins", "--json"], cwd=tmp_path, env=env)
    (record,) = [r for r in json.loads(out) if r["name"] == "worker"]
    assert (record["status"], record["dist"], record["entry_point"]) == (
        "loaded",
        "harness-worker",
        "harness_worker",
    )
    assert record["commands"] == ["worker", "submit", "batch"]
    assert "harness_turn_queue" in record["hooks"]
    usage = run([harness, "submit", "--help"], cwd=tmp_path, env=env)
    assert usage.startswith("usage: harness submit") and "--wait" in usage
    located = run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import harness_worker; print(harness_worker.__file__)",
        ],
        cwd=tmp_path,
        env=env,
    )
    assert Path(located.strip()).is_relative_to(venv)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_worker_from_the_venv_runs_a_submitted_turn(
    venv: Path,
    url: str,
    tmp_path: Path,
) -> None:
    """A worker process of the venv takes the turn `harness submit --wait` (also the venv's)
    queued on the test server, and the submit exits 0 with the turn's text."""
    env = venv_env(tmp_path)
    harness = str(venv / "bin" / "harness")
    model = write_script(tmp_path / "s.json", [{"text": "Ran on the wheel's worker."}])
    worker = Worker(
        url,
        "wheel",
        tmp_path,
        harness=harness,
        env={**env, "PYTHONPATH": None, "VIRTUAL_ENV": None},
    )
    try:
        out = run(
            [harness, "submit", "--store", url, "--model", model, "--wait", "hi"],
            cwd=tmp_path,
            env=env,
        )
    finally:
        worker.stop()
    assert "Ran on the wheel's worker." in out and "turn 1 completed" in out
