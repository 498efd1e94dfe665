"""CLI startup: `harness --help`, `--version` and `plugins` beside `python -c pass`.

    uv run python scripts/bench/startup.py             # 21 rounds
    uv run python scripts/bench/startup.py --rounds 5  # a quick look

Each command is a fresh process, as a user starts it. The machine is shared and noisy, so the
commands run interleaved round by round (in a shuffled order each round) and the report gives
medians, with each command's ratio to a bare interpreter start. Issue 6 asks that `--help` and
`plugins` stay fast; for scale, `llm --help` (another pluggy-based CLI) takes about 1.9 s on
the machine the issue was written on.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

HARNESS: Final = str(Path(sys.executable).with_name("harness"))

COMMANDS: Final = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "harness --version": [HARNESS, "--version"],
    "harness --help": [HARNESS, "--help"],
    "harness plugins": [HARNESS, "plugins"],
    "harness plugins --json": [HARNESS, "plugins", "--json"],
}
BASELINE: Final = "python -c pass"


def time_once(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(rounds: int, env: dict[str, str]) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    names = list(COMMANDS)
    for name in names:  # warm the page cache and the bytecode caches; not recorded
        time_once(COMMANDS[name], env)
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            samples[name].append(time_once(COMMANDS[name], env))
    return samples


def report(samples: dict[str, list[float]]) -> None:
    base = statistics.median(samples[BASELINE])
    print(f"{'command':<24} {'median':>9} {'min':>9} {'x python':>9}")
    for name, values in samples.items():
        median, fastest = statistics.median(values), min(values)
        ratio = median / base
        print(f"{name:<24} {median * 1000:>7.1f}ms {fastest * 1000:>7.1f}ms {ratio:>8.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        # A throwaway HARNESS_HOME: no sessions, no config, so only startup is measured.
        env = {**os.environ, "HARNESS_HOME": home}
        env.pop("HARNESS_DEV", None)
        samples = measure(args.rounds, env)
    print(f"{args.rounds} rounds, interleaved; Python {sys.version.split()[0]}")
    report(samples)


if __name__ == "__main__":
    main()
