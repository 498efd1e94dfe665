"""The workspace sandbox's added cost per bash call: `true` through the bash tool, both ways.

    uv run python scripts/bench/sandbox.py            # 200 calls per side, 5 rounds
    uv run python scripts/bench/sandbox.py --quick    # 50 calls per side, 3 rounds

Each call is the whole tool call a model's `bash` makes (spawn, read, reap, kill the group),
with the sandbox `off` and then `workspace` (bubblewrap: mount, PID and network namespaces).
A session starts its sandbox once, on its first call: each round makes one untimed call first
(on both sides, alike), and the start itself is timed and printed on its own line. The rounds
alternate the two sides because the machine is shared; each side's figure is the median
per-call time over the rounds. Goal: workspace within 1.5x of off.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Final

import anyio
from harness_core.tools import ExecContext
from harness_core.tools import sandbox as sandbox_module
from harness_core.tools.bash import BashArgs, BashTool
from harness_core.tools.sandbox import Sandbox, probe

GOAL: Final = 1.5


async def per_call(mode: str, calls: int) -> tuple[float, float]:
    """Seconds for the first `true` call under `mode`, and the mean of the next `calls`."""
    sandbox_module.install(Sandbox("workspace" if mode == "workspace" else "off"))
    tool, args, context = BashTool(), BashArgs(command="true"), ExecContext()
    started = time.perf_counter()
    await tool.execute(args, context)  # the session's first call starts its sandbox
    first = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(calls):
        result = await tool.execute(args, context)
        assert not result.is_error, result.text
    return first, (time.perf_counter() - started) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    options = parser.parse_args()
    calls, rounds = (50, 3) if options.quick else (200, 5)
    why = probe()
    if why is not None:
        raise SystemExit(f"sandbox.py: the sandbox does not work here: {why}")
    times: dict[str, list[float]] = {"off": [], "workspace": []}
    firsts: dict[str, list[float]] = {"off": [], "workspace": []}
    with tempfile.TemporaryDirectory() as workdir:
        os.chdir(workdir)  # a call with no agent runs in the process's working directory
        for _ in range(rounds):
            for mode in times:
                first, mean = anyio.run(per_call, mode, calls)
                firsts[mode].append(first)
                times[mode].append(mean)
    off, sandboxed = (statistics.median(times[m]) for m in ("off", "workspace"))
    first_off, first_sandboxed = (statistics.median(firsts[m]) for m in ("off", "workspace"))
    ratio = sandboxed / off
    verdict = "ok" if ratio <= GOAL else "over"
    print(
        f"first call of a session (starts its sandbox): off {first_off * 1000:.1f} ms, "
        f"workspace {first_sandboxed * 1000:.1f} ms"
    )
    print(f"bash `true`, {calls} calls x {rounds} rounds (median per call)")
    print(f"  sandbox off:       {off * 1000:7.2f} ms")
    print(f"  sandbox workspace: {sandboxed * 1000:7.2f} ms")
    print(f"  ratio: {ratio:.2f}x (goal <= {GOAL}x: {verdict})")


if __name__ == "__main__":
    main()
