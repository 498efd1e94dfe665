"""examples/plan-bench end to end, as its README runs it: the recipe's own batch file (every
task as `todo`, `no-todo` and `prompt-only`, each line's `workspace` its template) with
`--repeat 3` on two workers that run checks in the sandbox, a scripted model per task and
variant whose outcome is known, and every statistic `batch status` reports checked against
figures computed here (Wilson's formula, McNemar's exact p from binomial coefficients,
pass@k counted by hand), never by harness_worker's code.

The scripts: a solver applies the task's reference solution (tests/data/plan-bench) in its
copy, a non-solver touches a file and gives up. `todo` solves tasks 0-9 of 12, `no-todo`
0-5 and 10, `prompt-only` 0-7. Every script first makes sure no earlier sample left its
mark (`.plan-bench-seen`) in the directory it works in, and leaves its own: two samples
sharing files would turn a pass into a fail and every count below would be off.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import math
import shlex
import shutil
import tarfile
from pathlib import Path
from statistics import NormalDist
from typing import Any, Final

import pytest
from test_cli_support import bash_call, run_cli, todo_call, write_script
from test_plan_bench import BATCH, BENCH, SOLUTIONS, TASKS
from test_worker_cli import Worker, events, url, workers

pytestmark = pytest.mark.slow  # real processes for seconds each: run first

TASKS_DIR: Final = BENCH / "tasks"

__all__ = ["url", "workers"]  # the fixtures, used by name

Z: Final = NormalDist().inv_cdf(0.975)
REPEATS: Final = 3
VARIANTS: Final = ("todo", "no-todo", "prompt-only")
SOLVES: Final = {
    "todo": set(TASKS[:10]),
    "no-todo": set(TASKS[:6]) | {TASKS[10]},
    "prompt-only": set(TASKS[:8]),
}
MARK: Final = "test ! -e .plan-bench-seen && touch .plan-bench-seen"


def apply_command(task: str) -> str:
    """The reference solution, written into the working directory (the sample's copy). The
    files travel in the command itself (a tar, base64): the command runs in the sandbox,
    which hides a checkout under /tmp."""
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        tar.add(SOLUTIONS / task / "files", arcname=".")
    files = base64.b64encode(packed.getvalue()).decode()
    command = f"{MARK} && echo {files} | base64 -d | tar -xzf -"
    removals = SOLUTIONS / task / "remove.txt"
    if removals.exists():
        names = " ".join(shlex.quote(name) for name in removals.read_text().split())
        command += f" && rm -rf -- {names}"
    return command


def script(task: str, variant: str) -> list[dict[str, Any]]:
    solves = task in SOLVES[variant]
    work = bash_call(apply_command(task) if solves else MARK)
    if variant == "todo":
        if not solves:
            return [
                {"tool_calls": [todo_call(("Look around", "in_progress"))]},
                {"tool_calls": [work]},
                {"text": "Gave up."},
            ]
        return [
            {"tool_calls": [todo_call(("Apply the change", "in_progress"), ("Check", "pending"))]},
            {"tool_calls": [work]},
            {"tool_calls": [todo_call(("Apply the change", "completed"), ("Check", "completed"))]},
            {"text": "Done."},
        ]
    if variant == "prompt-only":
        return [
            {"text": "Plan:\n1. Change it.\n2. Check it.", "tool_calls": [work]},
            {"text": "Done."},
        ]
    return [{"tool_calls": [work]}, {"text": "Done." if solves else "Gave up."}]


def visible_to_checks(line: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """`line` as the recipe writes it, unless the checkout lies under /tmp (a clone made
    there): each sandboxed call has a /tmp of its own, so a check could not read its tests
    from the checkout, and the task's template gets a copy of them inside instead."""
    if not BENCH.resolve().is_relative_to("/tmp"):
        return line
    task = TASKS_DIR / line["task"]
    template = tmp_path / "templates" / line["task"]
    if not template.exists():
        shutil.copytree(task / "workspace", template)
        shutil.copytree(task / "check", template / ".plan-bench-check")
    return {**line, "workspace": str(template), "check": BATCH.checks_in(".plan-bench-check")}


def tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def wilson_by_formula(k: int, n: int) -> list[float]:
    p = k / n
    centre = p + Z**2 / (2 * n)
    spread = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2))
    return [(centre - spread) / (1 + Z**2 / n), (centre + spread) / (1 + Z**2 / n)]


def mcnemar_exact(a_only: int, b_only: int) -> float:
    n, low = a_only + b_only, min(a_only, b_only)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(low + 1)) / 2**n)


def normal_interval(a: str, b: str) -> list[float]:
    """mean ± z·sd/√n of the per-pair differences B - A, which a percentile bootstrap of 36
    pairs lands close to."""
    diffs = [(task in SOLVES[b]) - (task in SOLVES[a]) for task in TASKS for _ in range(REPEATS)]
    mean = sum(diffs) / len(diffs)
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / len(diffs))
    return [mean - Z * sd / math.sqrt(len(diffs)), mean + Z * sd / math.sqrt(len(diffs))]


@pytest.mark.timeout(1200)
def test_the_recipe_runs_end_to_end_and_its_statistics_are_the_independent_ones(
    url: str, workers: list[Worker], tmp_path: Path
) -> None:
    before = tree_digest(BENCH / "tasks")
    lines = []
    for line in BATCH.lines(TASKS, list(VARIANTS)):
        name = f"{line['task']}-{line['variant']}.json"
        model = write_script(tmp_path / name, script(line["task"], line["variant"]))
        lines.append({**visible_to_checks(line, tmp_path), "model": model})
    batch_file = tmp_path / "plan-bench.jsonl"
    batch_file.write_text("".join(json.dumps(line) + "\n" for line in lines))
    flags = ("--sandbox", "workspace", "--checks", "--concurrency", "2")
    workers.extend(
        [Worker(url, "bench-1", tmp_path, *flags), Worker(url, "bench-2", tmp_path, *flags)]
    )
    ran = run_cli(
        "batch", str(batch_file), "--store", url, "--repeat", str(REPEATS), "--wait", timeout=1100
    )
    batch = ran.stdout.splitlines()[0].removeprefix("batch ")
    report = json.loads(run_cli("batch", "status", batch, "--json", "--store", url).stdout)
    if ran.returncode != 0:  # say which samples failed, and how their turns ended
        failed = [t for t in report["tasks"] if t["status"] in ("error", "max_steps", "cancelled")]
        ends = [run_cli("show", t["session"], "--store", url).stdout[-1500:] for t in failed]
        pytest.fail("\n".join([ran.stdout, ran.stderr, json.dumps(failed, indent=1), *ends]))

    # Every sample ran in a copy of its own: the templates are as they were.
    assert tree_digest(BENCH / "tasks") == before
    passed = {v: len(SOLVES[v]) * REPEATS for v in VARIANTS}
    assert report["counts"] == {
        "queued": 0,
        "running": 0,
        "done": 108,
        "failed": 0,
        "passed": sum(passed.values()),
    }
    assert len({t["session"] for t in report["tasks"]}) == 108
    for task in report["tasks"]:
        expected = "passed" if task["task"] in SOLVES[task["variant"]] else "failed"
        assert task["check"] == expected, task

    assert list(report["variants"]) == list(VARIANTS)
    steps = {"todo": (10 * 4 + 2 * 3) / 12, "no-todo": 2, "prompt-only": 2}
    for variant in VARIANTS:
        figures = report["variants"][variant]
        solved = len(SOLVES[variant])
        assert (figures["tasks"], figures["checked"], figures["passed"]) == (
            36,
            36,
            passed[variant],
        )
        assert figures["pass_rate"] == pytest.approx(passed[variant] / 36, abs=1e-3)
        assert figures["pass_rate_ci"] == pytest.approx(
            wilson_by_formula(passed[variant], 36), abs=1e-9
        )
        # Each task passes in all of its repeats or in none: pass@3 = pass^3.
        assert figures["pass_at_k"] == pytest.approx(solved / 12, abs=1e-3)
        assert figures["pass_hat_k"] == pytest.approx(solved / 12, abs=1e-3)
        assert figures["mean_steps"] == pytest.approx(steps[variant], abs=1e-3)
        assert figures["plan_used"] == (1.0 if variant == "todo" else 0.0)

    # Pairs, discordant counts, p and verdict, by hand: see SOLVES.
    expected = {
        ("todo", "no-todo"): (12, 3, "0.035", "significant difference"),
        ("todo", "prompt-only"): (6, 0, "0.031", "significant difference"),
        ("no-todo", "prompt-only"): (3, 6, "0.51", "no significant difference"),
    }
    assert [(c["a"], c["b"]) for c in report["comparisons"]] == list(expected)
    for comparison in report["comparisons"]:
        a, b = comparison["a"], comparison["b"]
        a_only, b_only, shown_p, judged = expected[a, b]
        assert (comparison["pairs"], comparison["a_only"], comparison["b_only"]) == (
            36,
            a_only,
            b_only,
        )
        diff = (len(SOLVES[b]) - len(SOLVES[a])) / 12
        assert comparison["diff"] == pytest.approx(diff)
        assert comparison["p_value"] == pytest.approx(mcnemar_exact(a_only, b_only), rel=1e-12)
        low, high = comparison["diff_ci"]
        assert low <= diff <= high
        assert [low, high] == pytest.approx(normal_interval(a, b), abs=0.06)
        assert (comparison["tokens_diff"], comparison["tokens_diff_ci"]) == (0.0, [0.0, 0.0])
        more = "fewer" if diff < 0 else "more"
        assert comparison["verdict"] == (
            f"{b} passes {abs(diff) * 100:.1f} points {more} [{low * 100:.1f}, {high * 100:.1f}], "
            f"p = {shown_p}, {a_only + b_only} discordant of 36: {judged}"
        )
    assert mcnemar_exact(12, 3) == 1152 / 2**15 and mcnemar_exact(6, 0) == 2 / 2**6

    # The prompt-only arm's sentence reached its sessions' system prompt, and only theirs
    # (read for the first task's nine samples: each read is a process of its own).
    for task in (t for t in report["tasks"] if t["task"] == TASKS[0]):
        start = events(url, task["session"])[0]
        assert start["type"] == "session/start"
        prompt = start["data"].get("system_prompt") or ""
        assert (BATCH.PLAN_IN_TEXT in prompt) == (task["variant"] == "prompt-only"), task

    page = tmp_path / "plan-bench.html"
    text = run_cli("batch", "status", batch, "--store", url, "--html", str(page)).stdout
    for comparison in report["comparisons"]:
        assert f"{comparison['a']} vs {comparison['b']}: {comparison['verdict']}" in text
    html = page.read_text()
    assert html.index(report["comparisons"][0]["verdict"]) < html.index('<table class="grid">')
    assert html.count('<td class="passed">passed</td>') == sum(passed.values())
    assert "<th>todo #1</th><th>todo #2</th><th>todo #3</th>" in html
