"""Per-step cost of a long scripted turn over ACP beside the same turn through `harness run`.

    uv run python scripts/bench/acp.py            # 500 steps, 5 rounds
    uv run python scripts/bench/acp.py --quick    # 200 steps, 2 rounds

Each step is one tool call to a tool nobody registered, so it returns at once (an error result
the model could read): the cheapest step there is, which leaves the hosts' own work (folding
the event, rendering a line or sending `tool_call` and `tool_call_update` notifications) as
large a share as it can be. `harness run` prints to a pipe (the plain view); `harness acp`
is driven by the SDK's client over stdio, which parses every notification. Startup is taken
out on both sides: the per-step time is (time of an N-step turn - time of a 1-step turn) /
(N - 1), each a median over the rounds, which run interleaved because the machine is shared.
Goal: ACP within 1.5x of `harness run`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

# This file is named acp.py and Python puts its folder first on sys.path: take it off, so
# `import acp` finds the SDK rather than this script.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
from acp import PROTOCOL_VERSION, spawn_agent_process, text_block  # noqa: E402

HARNESS: Final = str(Path(sys.executable).with_name("harness"))
GOAL: Final = 1.5


def script(directory: Path, steps: int) -> str:
    calls = [{"tool_calls": [{"name": "noop", "arguments": {}}]} for _ in range(steps - 1)]
    path = directory / f"steps-{steps}.json"
    path.write_text(json.dumps({"steps": [*calls, {"text": "done"}]}))
    return f"scripted:{path}"


def env(home: Path) -> dict[str, str]:
    return {**os.environ, "HARNESS_HOME": str(home), "HARNESS_MAX_STEPS": "100000"}


def time_run(model: str, home: Path) -> float:
    """Wall time of `harness run` for the whole turn, startup included."""
    started = time.perf_counter()
    subprocess.run(
        [HARNESS, "run", "--model", model, "go"],
        env=env(home),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


class Counter:
    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates += 1


async def time_acp(model: str, home: Path, cwd: Path) -> float:
    """Wall time of one session/prompt, from the request to its answer."""
    client = Counter()
    bridge = spawn_agent_process(client, HARNESS, "acp", "--model", model, env=env(home))
    async with bridge as (conn, _):
        await conn.initialize(protocol_version=PROTOCOL_VERSION)
        session = await conn.new_session(cwd=str(cwd), mcp_servers=[])
        started = time.perf_counter()
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("go")])
        elapsed = time.perf_counter() - started
    assert answer.stop_reason == "end_turn", answer
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 steps, 2 rounds")
    options = parser.parse_args()
    steps, rounds = (200, 2) if options.quick else (500, 5)
    with tempfile.TemporaryDirectory(prefix="harness-bench-acp-") as tmp:
        directory = Path(tmp)
        models = {n: script(directory, n) for n in (1, steps)}
        times: dict[tuple[str, int], list[float]] = {}
        for round_ in range(rounds):
            home = directory / f"home-{round_}"
            for n, model in models.items():
                times.setdefault(("run", n), []).append(time_run(model, home))
                acp = asyncio.run(time_acp(model, home, directory))
                times.setdefault(("acp", n), []).append(acp)
    per_step = {
        host: (statistics.median(times[(host, steps)]) - statistics.median(times[(host, 1)]))
        / (steps - 1)
        for host in ("run", "acp")
    }
    print(f"{steps}-step scripted turn, {rounds} rounds, medians")
    for host, label in (("run", "harness run"), ("acp", "harness acp")):
        print(f"  {label:12} {per_step[host] * 1e3:8.3f} ms/step")
    ratio = per_step["acp"] / per_step["run"]
    verdict = "ok" if ratio <= GOAL else "over the goal"
    print(f"  acp / run    {ratio:8.2f}x   (goal <= {GOAL}x: {verdict})")


if __name__ == "__main__":
    main()
