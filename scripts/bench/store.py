"""Per-step cost of a long turn on the Postgres store against the file store.

    HARNESS_TEST_POSTGRES=postgresql://... uv run python scripts/bench/store.py [--steps N]

Each run is `harness run` in a fresh process with a scripted model of N `todo_write` steps
(8-item lists, scripts/bench/loop.py) and a text answer, once on a file store under a
temporary HARNESS_HOME and once on a fresh schema of the database HARNESS_TEST_POSTGRES names
(initialised by `harness store init`). Both are durable: each step's commit is an fdatasync
on files and a transaction commit on Postgres. A 10-step run of each is taken off, so the
figure is the cost of a step, not of starting the process. Goal (issue 23): Postgres within
2x of files.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

from loop import script  # the same steps as the loop benchmark (scripts/bench/)

GOAL: Final = 2.0
BASE_STEPS: Final = 10


def run(steps: int, store: str, home: Path) -> float:
    """Seconds of one `harness run` of `steps` steps on `store`."""
    path = home / f"script-{steps}.json"
    path.write_text(json.dumps({"steps": script(steps)}))
    env = {**os.environ, "HARNESS_HOME": str(home), "HARNESS_STORE": store}
    env["HARNESS_MAX_STEPS"] = str(steps + 10)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness_core.cli", "run", "--model", f"scripted:{path}", "go"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"harness run failed on {store.split('@')[-1]}: {done.stderr.strip()}")
    return elapsed


def per_step(steps: int, store: str, home: Path) -> float:
    return (run(steps, store, home) - run(BASE_STEPS, store, home)) / (steps - BASE_STEPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    args = parser.parse_args()
    server = os.environ.get("HARNESS_TEST_POSTGRES")
    if not server:
        raise SystemExit("set HARNESS_TEST_POSTGRES=postgresql://USER:PASSWORD@HOST/DB")
    from harness_store_postgres.testing import fresh_schema, initialised

    with tempfile.TemporaryDirectory() as tmp, fresh_schema(server) as url:
        home = Path(tmp)
        initialised(url)
        files = per_step(args.steps, f"file://{home / 'files'}", home)
        postgres = per_step(args.steps, url, home)
    ratio = postgres / files
    print(f"per step, {args.steps}-step todo_write turn (durable commits):")
    print(f"  file store  {files * 1000:7.3f} ms")
    print(f"  postgres    {postgres * 1000:7.3f} ms")
    verdict = "ok" if ratio <= GOAL else "MISSED"
    print(f"  ratio       {ratio:7.2f}x (goal within {GOAL:.0f}x: {verdict})")


if __name__ == "__main__":
    main()
