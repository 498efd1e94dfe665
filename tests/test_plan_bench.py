"""examples/plan-bench: each task's check fails on its untouched template and passes once the
reference solution (tests/data/plan-bench/TASK: files to write, `remove.txt` the paths to
delete) is applied to a copy; the batch file the recipe writes holds lines `harness batch`
accepts, every task in every variant; the README lists exactly the tasks there are.

Checks run here as a worker runs them, the command from the batch line through a shell in
the copy, only without the sandbox (test_worker_cli.py covers checks in the sandbox)."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Final

import pytest
from harness_worker._batch import TaskLine
from test_cli_support import REPO

BENCH: Final = REPO / "examples" / "plan-bench"
SOLUTIONS: Final = REPO / "tests" / "data" / "plan-bench"


def recipe() -> ModuleType:
    spec = importlib.util.spec_from_file_location("plan_bench_batch", BENCH / "batch.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BATCH: Final = recipe()
TASKS: Final[list[str]] = BATCH.task_names()


def copy_template(task: str, home: Path) -> Path:
    copy = home / task
    shutil.copytree(BENCH / "tasks" / task / "workspace", copy)
    return copy


def apply_solution(task: str, copy: Path) -> None:
    shutil.copytree(SOLUTIONS / task / "files", copy, dirs_exist_ok=True)
    removals = SOLUTIONS / task / "remove.txt"
    for name in removals.read_text().split() if removals.exists() else []:
        target = copy / name
        shutil.rmtree(target) if target.is_dir() else target.unlink()


def check(task: str, copy: Path) -> subprocess.CompletedProcess[str]:
    command = BATCH.check_command(task)
    return subprocess.run(
        command, shell=True, cwd=copy, capture_output=True, text=True, timeout=120
    )


def test_there_are_a_dozen_tasks_each_with_a_solution() -> None:
    assert len(TASKS) == 12
    assert sorted(path.name for path in SOLUTIONS.iterdir()) == TASKS


@pytest.mark.parametrize("task", TASKS)
def test_the_check_fails_on_the_template_and_passes_on_the_solution(
    task: str, tmp_path: Path
) -> None:
    copy = copy_template(task, tmp_path)
    before = check(task, copy)
    assert before.returncode == 1, before.stderr
    assert re.search(r"FAILED \((failures|errors)=\d", before.stderr), before.stderr
    # The acceptance tests themselves load: what fails is the task, not the check.
    assert "SyntaxError" not in before.stderr
    apply_solution(task, copy)
    after = check(task, copy)
    assert after.returncode == 0, after.stderr
    assert re.search(r"Ran [1-9]\d* tests?", after.stderr) and after.stderr.rstrip().endswith("OK")
    # Nothing written beside the template or the acceptance tests (they are read-only for a
    # sandboxed check, and shared by every sample).
    assert not list((BENCH / "tasks" / task).rglob("__pycache__"))


def test_the_templates_hold_no_acceptance_test_or_solution() -> None:
    """The model sees the template only: the check's tests and the solutions are elsewhere."""
    for task in TASKS:
        workspace = BENCH / "tasks" / task / "workspace"
        names = {path.name for path in workspace.rglob("*")}
        assert not any(name.startswith("check_") for name in names), task
        for path in (SOLUTIONS / task / "files").rglob("*"):
            relative = path.relative_to(SOLUTIONS / task / "files")
            if path.is_file() and (workspace / relative).is_file():
                assert (workspace / relative).read_bytes() != path.read_bytes(), relative


def batch_lines(*args: str) -> list[dict[str, object]]:
    ran = subprocess.run(
        ["python3", str(BENCH / "batch.py"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [json.loads(line) for line in ran.stdout.splitlines()]


def test_the_batch_runs_every_task_in_three_variants() -> None:
    lines = batch_lines()
    assert len(lines) == 36
    assert [line["variant"] for line in lines[:3]] == ["todo", "no-todo", "prompt-only"]
    for variant in ("todo", "no-todo", "prompt-only"):
        assert sorted(str(line["task"]) for line in lines if line["variant"] == variant) == TASKS
    for line in lines:
        task = str(line["task"])
        assert line["workspace"] == str(BENCH / "tasks" / task / "workspace")
        assert line["prompt"] == (BENCH / "tasks" / task / "prompt.txt").read_text().strip()
        assert line["check"] == BATCH.check_command(task)
        assert line.get("disable", []) == ([] if line["variant"] == "todo" else ["todo"])
        assert ("system" in line) == (line["variant"] == "prompt-only")
    [system] = {line["system"] for line in lines if "system" in line}
    assert system == BATCH.PLAN_IN_TEXT


def test_every_batch_line_is_a_task_line() -> None:
    """Each line as `harness batch` validates it. `workspace` and `system` are checked by
    TaskLine once it has them; until then they are the only keys it does not know."""
    for line in batch_lines():
        known = {key: value for key, value in line.items() if key in TaskLine.model_fields}
        assert set(line) - set(known) <= {"workspace", "system"}
        TaskLine.model_validate_json(json.dumps(known))


def test_the_batch_takes_a_subset_and_refuses_an_unknown_name() -> None:
    lines = batch_lines("--variants", "no-todo,todo", "--tasks", "pagination,csv-report")
    assert [(line["task"], line["variant"]) for line in lines] == [
        ("pagination", "no-todo"),
        ("pagination", "todo"),
        ("csv-report", "no-todo"),
        ("csv-report", "todo"),
    ]
    refused = subprocess.run(
        ["python3", str(BENCH / "batch.py"), "--tasks", "pagination,nope"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and refused.stdout == ""
    assert "unknown task nope (known: cli-flags," in refused.stderr


def test_the_readme_lists_every_task() -> None:
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## The tasks\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z-]+)` \|", section, flags=re.MULTILINE)
    assert listed == TASKS
