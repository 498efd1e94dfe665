"""Agent-loop benchmark: µs per step as one turn grows from 50 to 5,000 steps.

    uv run python scripts/bench/loop.py            # K = 50, 800, 5000, repeated, medians
    uv run python scripts/bench/loop.py --quick    # the same sizes, one run each

One turn of K steps on the real loop: steps 1..K-1 each call `todo_write` (loaded through its
entry point) with an 8-item list whose statuses advance, step K answers with text. The model
is a ScriptedModel; the log is a real session file in a temp dir with real fdatasync at every
commit point (after the prompt, each assistant message, each tool batch and the turn end).
Dev-mode invariants are off, as in production. Issue 5 sets the goals: flat (K=5000 / K=50
<= 1.5) and <= 1 ms per step at K = 800.

Columns: wall time per step; the part of it spent in fdatasync (disk) and the rest (Python,
plus waiting for a CPU on a busy machine); and this process's user-mode CPU time per step:
the Python cost alone, which a busy machine does not inflate (os.times ticks are 10 ms, so
it is only meaningful over a whole run).
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import anyio
from harness_core.loop import TurnOutcome
from harness_core.models import ScriptedModel
from harness_core.runtime import Runtime

os.environ.pop("HARNESS_DEV", None)  # production setting: no dev invariants on append

SIZES: Final = (50, 800, 5000)
REPEATS: Final = {50: 15, 800: 5, 5000: 3}
TASKS: Final = tuple(f"Task {n}: change module {n} and run its tests" for n in range(1, 9))
GOAL_RATIO: Final = 1.5
GOAL_US_AT_800: Final = 1000.0


def todo_list(step: int, steps: int) -> list[dict[str, str]]:
    """The 8-item list at `step`: earlier tasks completed, one in progress, the rest pending."""
    done = step * len(TASKS) // steps
    return [
        {
            "content": task,
            "status": "completed" if n < done else "in_progress" if n == done else "pending",
        }
        for n, task in enumerate(TASKS)
    ]


def script(steps: int) -> list[dict[str, Any]]:
    calls = [
        {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todo_list(n, steps)}}]}
        for n in range(steps - 1)
    ]
    return [*calls, {"text": "All eight tasks are done."}]


class SyncClock:
    """Times every fdatasync/fsync the process makes (the log's commit calls os.fdatasync)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0

    @contextmanager
    def installed(self) -> Iterator[None]:
        originals = {name: getattr(os, name) for name in ("fdatasync", "fsync")}

        def timed(real: Callable[[int], None]) -> Callable[[int], None]:
            def sync(fd: int) -> None:
                started = time.perf_counter()
                real(fd)
                self.seconds += time.perf_counter() - started
                self.calls += 1

            return sync

        for name, real in originals.items():
            setattr(os, name, timed(real))
        try:
            yield
        finally:
            for name, real in originals.items():
                setattr(os, name, real)


@dataclass(frozen=True, slots=True)
class Run:
    steps: int
    seconds: float
    sync_seconds: float
    syncs: int
    user_seconds: float  # CPU time in user mode: the Python cost, whatever the machine's load

    @property
    def us_per_step(self) -> float:
        return self.seconds / self.steps * 1e6

    @property
    def sync_us_per_step(self) -> float:
        return self.sync_seconds / self.steps * 1e6


def runtime_at(home: Path) -> Runtime:
    """The session runtime every host runs turns through, on the file store in `home`."""
    os.environ["HARNESS_MAX_STEPS"] = "1000000"  # each scripted turn ends by itself
    os.environ["HARNESS_SYSTEM_PROMPT"] = "You are a coding agent."
    return Runtime(home)


def one_turn(runtime: Runtime, steps: int) -> Run:
    """Time one K-step turn on a fresh session (the model's script is built beforehand)."""
    model = ScriptedModel(script(steps))
    session = runtime.open(None, model, cwd=str(runtime.home))
    clock = SyncClock()

    async def timed() -> tuple[TurnOutcome, float, float]:
        with clock.installed():
            started, user = time.perf_counter(), os.times().user
            outcome = await session.run("Do the eight tasks.")
            seconds, user = time.perf_counter() - started, os.times().user - user
        await session.aclose()
        return outcome, seconds, user

    gc.collect()  # every run starts from the same heap, not the previous run's garbage
    outcome, seconds, user_seconds = anyio.run(timed)
    if outcome.status != "completed" or outcome.steps != steps or model.remaining:
        raise SystemExit(f"benchmark turn went wrong: {outcome}, {model.remaining} steps left")
    return Run(steps, seconds, clock.seconds, clock.calls, user_seconds)


def median_run(runs: list[Run]) -> Run:
    return sorted(runs, key=lambda run: run.seconds)[len(runs) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="one run per size, no repeats")
    options = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="harness-bench-loop-"))
    runtime = runtime_at(home)
    try:
        one_turn(runtime, SIZES[0])  # warm-up: first imports, schema builds, page cache
        runs: dict[int, list[Run]] = {k: [] for k in SIZES}
        rounds = 1 if options.quick else max(REPEATS.values())
        # Interleave the sizes round by round so a noisy minute hits all of them alike.
        for round_number in range(rounds):
            for k in SIZES:
                if round_number < (1 if options.quick else REPEATS[k]):
                    runs[k].append(one_turn(runtime, k))
        results = {k: median_run(runs[k]) for k in SIZES}
    finally:
        shutil.rmtree(home, ignore_errors=True)
    report(results, options.quick, runs)


def report(results: dict[int, Run], quick: bool, runs: dict[int, list[Run]]) -> None:
    mode = " (quick: one run per size)" if quick else " (median of the runs)"
    print(f"loop benchmark: one turn of K steps, todo_write x (K-1) + a text answer{mode}")
    print(
        f"{'K':>6} {'runs':>5} {'us/step':>9} {'fsync us/step':>14} {'python us/step':>15} "
        f"{'fsync share':>12} {'fsyncs/step':>12} {'user cpu us/step':>17}"
    )
    for k, run in results.items():
        python = run.us_per_step - run.sync_us_per_step
        print(
            f"{k:>6} {len(runs[k]):>5} {run.us_per_step:>9.0f} {run.sync_us_per_step:>14.0f} "
            f"{python:>15.0f} {run.sync_seconds / run.seconds:>12.0%} {run.syncs / k:>12.2f} "
            f"{run.user_seconds / k * 1e6:>17.0f}"
        )
    first, last = results[SIZES[0]], results[SIZES[-1]]
    ratio = last.us_per_step / first.us_per_step
    python_ratio = (last.us_per_step - last.sync_us_per_step) / (
        first.us_per_step - first.sync_us_per_step
    )
    at_800 = results[800].us_per_step
    print(
        f"ratio K={last.steps} / K={first.steps}: {ratio:.2f} (goal <= {GOAL_RATIO}) "
        f"{verdict(ratio <= GOAL_RATIO)}"
    )
    print(f"  the same without fsync time: {python_ratio:.2f}")
    print(
        f"us per step at K=800: {at_800:.0f} (goal <= {GOAL_US_AT_800:.0f}) "
        f"{verdict(at_800 <= GOAL_US_AT_800)}"
    )


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    main()
