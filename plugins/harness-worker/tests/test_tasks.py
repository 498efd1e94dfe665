"""A batch file's lines, checked before anything is queued, and the variant comparison."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness_core.hosts import CommandError
from harness_worker._batch import _read, _report
from harness_worker._tables import Task


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("not json", "line 1: not JSON"),
        ("[1]", "line 1: a task is a JSON object"),
        ('{"prompt": " "}', 'line 1: "prompt": must not be empty'),
        ('{"prompt": "p", "model": 3}', 'line 1: "model": Input should be a valid string'),
        ('{"prompt": "p", "disable": [1]}', 'line 1: "disable"[0]: Input should be a valid string'),
        ('{"prompt": "p", "cwd": "/no/such/dir"}', "line 1: \"cwd\": '/no/such/dir' is not a dir"),
        ('{"prompt": "p", "promt": "typo"}', "line 1: unknown key 'promt'"),
    ],
)
def test_a_bad_line_is_named(tmp_path: Path, line: str, error: str) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(line + "\n")
    with pytest.raises(CommandError, match=error.replace("(", r"\(").replace("[", r"\[")):
        _read(tasks)


def test_blank_lines_are_skipped_and_a_relative_cwd_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('\n{"prompt": "a", "cwd": "work"}\n\n')
    [task], commits = _read(tasks)
    assert task.cwd == str(tmp_path / "work") and commits == {}  # no workspace to pin


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n\n")
    with pytest.raises(CommandError, match="holds no tasks"):
        _read(tasks)


def task(position: int, variant: str | None, state: str, check: str | None, steps: int) -> Task:
    return Task(
        position,
        f"s{position}",
        None,
        0,
        variant,
        check is not None,
        state,
        check,
        steps,
        (100 * steps, 10 * steps, 50 * steps),
        1.5 * steps,
        variant == "todo",
    )


def test_variants_are_compared_on_what_ended() -> None:
    report = _report(
        "b",
        [
            task(0, "todo", "completed", "passed", 2),
            task(1, "todo", "error", "failed", 4),
            task(2, "plain", "completed", "passed", 1),
            Task(3, "s3", None, 0, "plain", False, "queued", None, None, None, None, None),
        ],
    )
    assert report["counts"] == {"queued": 1, "running": 0, "done": 2, "failed": 1, "passed": 2}
    todo, plain = report["variants"]["todo"], report["variants"]["plain"]
    assert (todo["tasks"], todo["passed"], todo["pass_rate"], todo["mean_steps"]) == (2, 1, 0.5, 3)
    assert todo["mean_tokens"] == {"input": 300, "output": 30, "cached": 150}
    assert (plain["tasks"], plain["ended"], plain["mean_steps"], plain["plan_used"]) == (2, 1, 1, 0)
