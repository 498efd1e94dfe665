"""CLI startup and cold queries: each `harness` command beside its baseline, with issue 9's goals.

    uv run python scripts/bench/startup.py               # 11 rounds, 100k-event session
    uv run python scripts/bench/startup.py --quick       # 3 rounds, 20k events: a quick look

Each command is a fresh process, as a user starts it. The machine is shared and noisy, so the
commands run interleaved round by round (in a shuffled order each round) and the report gives
medians, then each goal as a ratio of two medians measured in the same run:

- `todos ID` on a 100k-event session and `sessions` on a home of 1,000 sessions: within 3x of
  `harness --version`;
- `todos ID` on 100k events within 1.2x of `todos ID` on 100 events: both sessions wrote their
  plan in the first turn, so without the writer's tail index the plan query would read back
  over the whole session (a third session, the long one plus a last turn that writes a plan,
  shows the tail-only case; it was copied, so its index starts where that turn does);
- `show ID --json` and `events ID` (they print everything) within 1.5x of a bare `python3`
  parsing the same file line by line with the standard library's `json`, startup included.

The sessions are written by the real log writer (`scripts/bench/log.py`'s generator). Issue 6
asked that `--help` and `plugins` stay fast; for scale, `llm --help` (another pluggy-based
CLI) takes about 1.9 s on the machine that issue was written on.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import log as log_bench  # scripts/bench/log.py: the realistic session generator
from harness_core.log import FileLog, ToolCall

HARNESS: Final = str(Path(sys.executable).with_name("harness"))
PARSE_WITH_JSON: Final = "import json, sys\nfor line in open(sys.argv[1], 'rb'):\n json.loads(line)"


@dataclass(frozen=True, slots=True)
class Command:
    argv: list[str]
    home: Path | None = None  # HARNESS_HOME for this command; None: an empty one


@dataclass(frozen=True, slots=True)
class Goal:
    command: str
    baseline: str
    limit: float


class FarPlanWriter(log_bench.SessionWriter):
    """Turns that never call todo_write, so the first turn's plan stays the latest one."""

    def _call(self, rng: random.Random) -> ToolCall:
        call = super()._call(rng)
        while call.name == "todo_write":
            call = super()._call(rng)
        return call


def write_far_plan_session(path: Path, events: int, seed: int) -> None:
    """About `events` events: a first turn that writes the plan, then turns without one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    writer = FarPlanWriter(seed)
    with FileLog.create(path, log_bench.registry(), log_bench._start(path.stem)) as log:
        turns: Iterator[log_bench.Append] = writer.final_turn()
        while True:
            for kind, payload, turn in turns:
                log.append(kind, payload, turn=turn)
            if log.next_seq >= events:
                break
            turns = writer.turn_events()


def add_plan_at_the_tail(source: Path, path: Path) -> None:
    """A copy of `source` that ends with a turn writing a new plan (it stands)."""
    shutil.copyfile(source, path)
    with FileLog.open(path, log_bench.registry()) as log:
        writer = FarPlanWriter(seed=2)
        writer.turn = log.events[-1].turn or 0
        for kind, payload, turn in writer.final_turn():
            log.append(kind, payload, turn=turn)


def prepare(work: Path, big_events: int) -> tuple[dict[str, Command], list[Goal], Path]:
    """Write the sessions; return the commands to time, the goals and the big session file."""
    small_home, big_home, many_home = work / "small", work / "big", work / "many"
    write_far_plan_session(small_home / "sessions" / "s100.jsonl", 100, seed=1)
    big = big_home / "sessions" / "s100k.jsonl"
    write_far_plan_session(big, big_events, seed=1)
    add_plan_at_the_tail(big, big.with_name("s100k-tail.jsonl"))
    log_bench.make_store(many_home, 1_000, big)
    big_name = f"{big_events // 1000}k events"
    commands = {
        "python -c pass": Command([sys.executable, "-c", "pass"]),
        "harness --version": Command([HARNESS, "--version"]),
        "harness --help": Command([HARNESS, "--help"]),
        "harness plugins": Command([HARNESS, "plugins"]),
        "harness plugins --json": Command([HARNESS, "plugins", "--json"]),
        "todos ID, 100 events": Command([HARNESS, "todos", "s100"], small_home),
        f"todos ID, {big_name}": Command([HARNESS, "todos", "s100k"], big_home),
        f"todos ID, {big_name}, plan at tail": Command([HARNESS, "todos", "s100k-tail"], big_home),
        "sessions, 1,000 sessions": Command([HARNESS, "sessions"], many_home),
        f"show ID --json, {big_name}": Command([HARNESS, "show", "s100k", "--json"], big_home),
        f"events ID, {big_name}": Command([HARNESS, "events", "s100k"], big_home),
        "python3 json, same file": Command([sys.executable, "-c", PARSE_WITH_JSON, str(big)]),
    }
    goals = [
        Goal(f"todos ID, {big_name}", "harness --version", 3.0),
        Goal("sessions, 1,000 sessions", "harness --version", 3.0),
        Goal(f"todos ID, {big_name}", "todos ID, 100 events", 1.2),
        Goal(f"todos ID, {big_name}, plan at tail", "todos ID, 100 events", 1.2),
        Goal(f"show ID --json, {big_name}", "python3 json, same file", 1.5),
        Goal(f"events ID, {big_name}", "python3 json, same file", 1.5),
    ]
    return commands, goals, big


def time_once(command: Command, env: Mapping[str, str], empty_home: Path) -> float:
    home = command.home or empty_home
    started = time.perf_counter()
    subprocess.run(
        command.argv,
        env={**env, "HARNESS_HOME": str(home)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


def measure(
    commands: Mapping[str, Command], rounds: int, env: Mapping[str, str], empty_home: Path
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for name in names:  # warm the page cache and the bytecode caches; not recorded
        time_once(commands[name], env, empty_home)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            samples[name].append(time_once(commands[name], env, empty_home))
    return samples


def report(samples: Mapping[str, list[float]], goals: list[Goal]) -> None:
    print(f"{'command':<40} {'median':>9} {'min':>9}")
    for name, values in samples.items():
        median, fastest = statistics.median(values) * 1000, min(values) * 1000
        print(f"{name:<40} {median:>7.1f}ms {fastest:>7.1f}ms")
    print(f"\n{'goal':<72} {'ratio':>6} {'goal':>6}  met")
    for goal in goals:
        ratio = statistics.median(samples[goal.command]) / statistics.median(samples[goal.baseline])
        label = f"{goal.command} / {goal.baseline}"
        met = "yes" if ratio <= goal.limit else "NO"
        print(f"{label:<72} {ratio:>5.2f}x {goal.limit:>5.1f}x  {met}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, help="rounds of every command (default 11, quick 3)")
    parser.add_argument("--quick", action="store_true", help="3 rounds, a 20k-event session")
    args = parser.parse_args()
    rounds = args.rounds or (3 if args.quick else 11)
    big_events = 20_000 if args.quick else 100_000
    work = Path(tempfile.mkdtemp(prefix="harness-bench-startup-"))
    try:
        print(f"writing the sessions in {work} ...", flush=True)
        started = time.perf_counter()
        commands, goals, big = prepare(work, big_events)
        size = big.stat().st_size / 1e6
        print(f"  done in {time.perf_counter() - started:.0f} s ({size:.0f} MB); measuring ...")
        empty_home = work / "empty"  # no sessions, no config: only startup is measured
        empty_home.mkdir()
        env = dict(os.environ)
        env.pop("HARNESS_DEV", None)  # production setting
        # An installed harness has its bytecode compiled; without caches every command would
        # compile each module it imports again (the warm-up round writes them).
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        samples = measure(commands, rounds, env, empty_home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\n{rounds} rounds, interleaved; Python {sys.version.split()[0]}")
    report(samples, goals)


if __name__ == "__main__":
    main()
