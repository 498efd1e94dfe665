"""Memory of a long turn: peak RSS of `harness run`'s path at 5k and 50k steps.

    uv run python scripts/bench/memory.py            # 5,000 and 50,000 steps, both ways
    uv run python scripts/bench/memory.py --quick    # 2,000 and 20,000 steps

Each run is a fresh process doing what `harness run` does off a terminal: the plugins load
through their entry points, a session is created under a temporary HARNESS_HOME, and one turn
runs through the CLI's own `run_session` with its plain view, each step a `todo_write` of an
8-item list, then a text answer. The model is generated (a script of 50k steps would be
larger than the scripted model reads): it reports prompt tokens as a quarter of the request's
characters, so with a small context window the turn compacts on its own, as a real one does,
and it answers each summary request with a short text. The figure is the process's peak RSS
(`ru_maxrss`).

Goals (issue 22): with compaction on, RSS at 50k steps within 1.5x of RSS at 5k; without
compaction, under 200 MB at 50k steps.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from typing import Any, Final

from loop import todo_list  # the same steps as the loop benchmark (scripts/bench/)

SIZES: Final = (5000, 50000)
QUICK_SIZES: Final = (2000, 20000)
WINDOW: Final = 16000  # tokens: a compaction every few dozen steps
GOAL_COMPACTED: Final = 1.5
GOAL_UNCOMPACTED_MB: Final = 200.0


def child(steps: int, window: int | None) -> None:
    """One turn of `steps` steps in this process; prints the peak RSS in KiB."""
    import anyio  # noqa: F401  (loaded as the CLI loads it)
    from harness_core.cli._app import App
    from harness_core.cli._run import run_session, session_view
    from harness_core.loop import SUMMARY_PROMPT
    from harness_core.models import ModelBase, ModelResponse, ResponseToolCall

    class Plan(ModelBase):
        """`steps - 1` todo_write steps, then a text answer; summaries answered in text."""

        name = "bench:plan"
        context_window = window

        def __init__(self) -> None:
            self.step = 0

        async def respond(
            self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], on_delta: Any = None
        ) -> ModelResponse:
            usage = {
                "prompt_tokens": sum(len(str(m.get("content") or "")) + 200 for m in messages) // 4
            }
            if messages[-1].get("content") == SUMMARY_PROMPT:
                return ModelResponse(text="Summary: the tasks so far are in the plan.", usage=usage)
            self.step += 1
            if self.step >= steps:
                return ModelResponse(text="All eight tasks are done.", usage=usage)
            arguments = json.dumps({"todos": todo_list(self.step, steps)})
            call = ResponseToolCall(f"call_{self.step}", "todo_write", arguments)
            return ModelResponse(tool_calls=(call,), usage=usage)

    app = App()
    with open(os.devnull, "w") as sink:
        stdout, sys.stdout = sys.stdout, sink
        try:
            session = app.open(None, Plan(), approval=app.approval("auto", None))
            view = session_view(app, session, json_lines=False, echo_prompt=True, resumed=False)
            (outcome,) = run_session(session, view, ["Do the eight tasks."])
        finally:
            sys.stdout = stdout
    if outcome.status != "completed":
        raise SystemExit(f"the turn ended {outcome.status}: {outcome.error}")
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def measure(steps: int, window: int | None) -> float:
    """Peak RSS in MB of one run in a fresh process."""
    with tempfile.TemporaryDirectory(prefix="harness-bench-memory-") as home:
        env = {**os.environ, "HARNESS_HOME": home, "HARNESS_MAX_STEPS": str(steps + 10)}
        env.pop("HARNESS_DEV", None)  # production setting
        argv = [sys.executable, __file__, "--child", str(steps), str(window or 0)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"run of {steps} steps failed:\n{done.stderr}")
    return int(done.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="2,000 and 20,000 steps")
    parser.add_argument("--child", nargs=2, type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child[0], options.child[1] or None)
        return
    small, large = QUICK_SIZES if options.quick else SIZES
    print(f"memory benchmark: peak RSS of one turn of K todo_write steps (window {WINDOW} tokens)")
    rows = {}
    for label, window in (("compaction on", WINDOW), ("no compaction", None)):
        first, second = rows[label] = (measure(small, window), measure(large, window))
        print(f"  {label:<14} K={small}: {first:7.1f} MB   K={large}: {second:7.1f} MB")
    ratio = rows["compaction on"][1] / rows["compaction on"][0]
    flat = rows["no compaction"][1]
    met = verdict(ratio <= GOAL_COMPACTED)
    print(f"compaction on, K={large} / K={small}: {ratio:.2f}x (goal <= {GOAL_COMPACTED}x) {met}")
    met = verdict(flat < GOAL_UNCOMPACTED_MB)
    print(f"no compaction, K={large}: {flat:.0f} MB (goal < {GOAL_UNCOMPACTED_MB:.0f} MB) {met}")


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


if __name__ == "__main__":
    main()
