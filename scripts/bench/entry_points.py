"""What harness_core._entry_points saves over importlib.metadata, measured side by side.

    uv run python scripts/bench/entry_points.py              # 31 rounds
    uv run python scripts/bench/entry_points.py --rounds 5   # a quick look

A command that loads plugins reads the entry points of `harness.plugins` and
`harness.commands`, with each providing distribution's name and version. Three programs run,
each in a fresh interpreter, as a command starts: `baseline` imports harness_core (the CLI
has by then) and reads nothing; `harness_core` reads both groups with
harness_core._entry_points; `importlib.metadata` reads the same with the standard library.
First the two readers must print the same entry points, else the script fails. The machine is
shared and noisy, so the programs (and `harness --help`, for scale) run interleaved in a
shuffled order each round; the report gives each reader's cost over the baseline and their
ratio, by the medians and by the fastest rounds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

HARNESS: Final = str(Path(sys.executable).with_name("harness"))
GROUPS: Final = ("harness.plugins", "harness.commands")
SETUP: Final = f"import json, harness_core\ngroups = {GROUPS!r}\n"
PRINT: Final = "print(json.dumps(sorted(found)))\n"

PROGRAMS: Final = {
    "baseline": SETUP,
    "harness_core": SETUP
    + "from harness_core._entry_points import entry_points\n"
    + "found = [(g, e.name, e.value, e.dist, e.version) for g in groups"
    + " for e in entry_points(g)]\n"
    + PRINT,
    "importlib.metadata": SETUP
    + "from importlib.metadata import entry_points\n"
    + "found = [(g, e.name, e.value, e.dist.name, e.dist.version) for g in groups"
    + " for e in entry_points(group=g)]\n"
    + PRINT,
}


def argv_of(name: str) -> list[str]:
    if name == "harness --help":
        return [HARNESS, "--help"]
    return [sys.executable, "-c", PROGRAMS[name]]


def read(name: str) -> list[list[str]]:
    """What a reader program prints: every entry point of both groups."""
    result = subprocess.run(argv_of(name), capture_output=True, text=True, check=True)
    found: list[list[str]] = json.loads(result.stdout)
    return found


def time_once(name: str) -> float:
    started = time.perf_counter()
    subprocess.run(argv_of(name), stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def measure(rounds: int) -> dict[str, list[float]]:
    names = [*PROGRAMS, "harness --help"]
    samples: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        random.shuffle(names)
        for name in names:
            samples[name].append(time_once(name))
    return samples


def report(samples: dict[str, list[float]]) -> None:
    for name, values in samples.items():
        print(f"{name:<22} {statistics.median(values) * 1000:7.1f} ms median   ", end="")
        print(f"{min(values) * 1000:7.1f} ms min")
    # Each reader's cost is a small difference of two process times, so a noisy round moves
    # its ratio a lot: the fastest rounds give a second, steadier reading.
    for label, pick in (("median", statistics.median), ("min", min)):
        at = {name: pick(values) * 1000 for name, values in samples.items()}
        ours = at["harness_core"] - at["baseline"]
        stdlib = at["importlib.metadata"] - at["baseline"]
        print(
            f"by {label}: harness_core {ours:.1f} ms, importlib.metadata {stdlib:.1f} ms, "
            f"ratio {stdlib / max(ours, 0.1):.1f}x, saved {stdlib - ours:.1f} ms "
            f"({(stdlib - ours) / at['harness --help']:.0%} of harness --help)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31, help="rounds (default 31)")
    args = parser.parse_args()
    ours, stdlib = read("harness_core"), read("importlib.metadata")
    if ours != stdlib:
        sys.exit(f"the readers disagree:\n harness_core {ours}\n importlib.metadata {stdlib}")
    print(f"both readers find the same {len(ours)} entry points; {args.rounds} rounds ...")
    report(measure(args.rounds))


if __name__ == "__main__":
    main()
