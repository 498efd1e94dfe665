"""Write the plan-bench batch file: every task of tasks/ as the variants asked for.

    python3 examples/plan-bench/batch.py > plan-bench.jsonl
    python3 examples/plan-bench/batch.py --variants todo,no-todo --tasks pagination,csv-report

One JSON object a line, in the form `harness batch` reads: the task's name (which pairs its
lines across variants), its prompt, its template directory as `workspace` (copied afresh
for every sample) and the command that checks it. Paths are absolute, taken from where this
file is, so the batch can be queued from any directory; a worker on another machine needs
the same checkout at the same path. Only the standard library: run it with any python3.

A task is a directory of tasks/: `prompt.txt` (what the model is asked), `workspace/` (the
template it works in) and `check/` (the acceptance tests, kept outside the template so the
model cannot edit them into passing). The check runs those tests with the copy as the
working directory, so they import the copy's code.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any, Final

HERE: Final = Path(__file__).resolve().parent
TASKS: Final = HERE / "tasks"

# What the prompt-only arm adds to the system prompt: a plan in the model's own text, and no
# more. No reminder to keep it current and no closing check of every item: such instructions
# cost turns of their own, and the question is whether planning helps, not bookkeeping.
PLAN_IN_TEXT: Final = (
    "Before your first tool call, write a short numbered plan of the steps this task needs, "
    "in your reply. Then work through it; if the plan changes, say so in a sentence."
)

# The three arms, in the order `harness batch status` compares them (the file's order).
VARIANTS: Final[dict[str, dict[str, Any]]] = {
    "todo": {},
    "no-todo": {"disable": ["todo"]},
    "prompt-only": {"disable": ["todo"], "system": PLAN_IN_TEXT},
}


def task_names() -> list[str]:
    return sorted(path.name for path in TASKS.iterdir() if (path / "prompt.txt").is_file())


def check_command(task: str) -> str:
    """The task's check: its acceptance tests, run from the copy."""
    return checks_in(str(TASKS / task / "check"))


def checks_in(directory: str) -> str:
    """The command that runs the acceptance tests in `directory` (`-B`: no bytecode written
    into a read-only check directory)."""
    tests = shlex.quote(directory)
    return f"python3 -B -m unittest discover -s {tests} -t {tests} -p 'check_*.py'"


def line(task: str, variant: str) -> dict[str, Any]:
    return {
        "task": task,
        "variant": variant,
        "prompt": (TASKS / task / "prompt.txt").read_text(encoding="utf-8").strip(),
        "workspace": str(TASKS / task / "workspace"),
        "check": check_command(task),
        **VARIANTS[variant],
    }


def lines(tasks: list[str], variants: list[str]) -> list[dict[str, Any]]:
    """Task by task, each in every variant: a run stopped half-way still holds whole pairs."""
    return [line(task, variant) for task in tasks for variant in variants]


def _names(text: str, known: list[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'} (known: {', '.join(known)})"
        )
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--variants",
        type=lambda text: _names(text, list(VARIANTS), "variant"),
        default=list(VARIANTS),
        help="comma-separated, in the order to compare them (default: %(default)s)",
    )
    parser.add_argument(
        "--tasks",
        type=lambda text: _names(text, task_names(), "task"),
        default=task_names(),
        help="comma-separated (default: every task)",
    )
    args = parser.parse_args(argv)
    for entry in lines(args.tasks, args.variants):
        print(json.dumps(entry, ensure_ascii=False), file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
