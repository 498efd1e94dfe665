"""The Anthropic provider against the OpenAI-compatible one, and its prompt cache, in one run.

(Named claude.py: a file named anthropic.py here would shadow the SDK it measures.)

    uv run python scripts/bench/claude.py            # 200-step turns, 5 rounds; 50-step cache
    uv run python scripts/bench/claude.py --quick    # 50-step turns, 2 rounds

1. Per-step overhead: one turn of K `todo_write` steps through the real loop (the todo plugin
   from its entry point, a real session file), the model streaming equivalent responses from a
   local fake: `anthropic:` (the real `anthropic` SDK against the plugin's scripted Messages
   server) and `openai:` (the real `openai` SDK against harness's scripted chat-completions
   server). The rounds alternate the two, the figure is each side's median; goal <= 1.2x.
   Both fakes send chunked bodies on kept-alive connections, as the providers do. The
   Anthropic side pays for the SDK's stream helper (MessageStream builds a snapshot and an
   event object per streamed event): 69-81 ms a step by hand, 86-108 ms through the helper
   (`--quick`, on a loaded 2-core machine), still about 0.6x of `openai:`.
2. Cached-prefix share on a 50-step session: the fake server counts as Anthropic does, from
   the requests the SDK sent: a request reads from the cache the longest prefix ending at one
   of its cache breakpoints, or at one of the 20 block boundaries before it, that an earlier
   request wrote (at one of its own breakpoints).
   Tokens are counted as characters of the prefix's JSON. Goal: above 90% of the input after
   the first step.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import anyio
from harness_core.models import Model
from harness_core.models.openai_compat import OpenAICompatModel
from harness_core.runtime import Runtime
from harness_core.testing.openai_server import OpenAIServer, reply, tool_call
from harness_model_anthropic._model import AnthropicModel
from harness_model_anthropic.testing import FakeMessages, message, tool_use

os.environ.pop("HARNESS_DEV", None)  # production setting

GOAL_RATIO: Final = 1.2
GOAL_SHARE: Final = 0.9
LOOKBACK: Final = 20  # block boundaries before a breakpoint the API also looks a prefix up at
TASKS: Final = tuple(f"Task {n}: change module {n} and run its tests" for n in range(1, 6))


def todos(step: int) -> dict[str, Any]:
    done = step % len(TASKS)
    return {
        "todos": [
            {
                "content": t,
                "status": "completed" if i < done else "in_progress" if i == done else "pending",
            }
            for i, t in enumerate(TASKS)
        ]
    }


def runtime_at(home: Path) -> Runtime:
    """The session runtime every host runs turns through, on the file store in `home`."""
    os.environ["HARNESS_MAX_STEPS"] = "1000000"  # each scripted turn ends by itself
    os.environ["HARNESS_SYSTEM_PROMPT"] = "You are a coding agent."
    return Runtime(home)


def turn(runtime: Runtime, model: Model, steps: int) -> float:
    """Seconds per step of one K-step turn on a fresh session."""

    async def timed() -> float:
        session = runtime.open(None, model, cwd=str(runtime.home))
        started = time.perf_counter()
        outcome = await session.run("Do the tasks.")
        seconds = time.perf_counter() - started
        await session.aclose()  # the model with it
        assert outcome.status == "completed", outcome
        return seconds

    return anyio.run(timed) / steps


def anthropic_turn(runtime: Runtime, steps: int) -> tuple[float, list[dict[str, Any]]]:
    fake = FakeMessages()
    try:
        fake.expect(
            *(message(tool_uses=(tool_use("todo_write", todos(n)),)) for n in range(steps - 1)),
            message("All done."),
        )
        model = AnthropicModel("claude-bench", api_key="sk-ant-bench", base_url=fake.base_url)
        seconds = turn(runtime, model, steps)
        fake.check()
        return seconds, [recorded.body for recorded in fake.requests]
    finally:
        fake.close()


def openai_turn(runtime: Runtime, steps: int) -> float:
    with OpenAIServer() as server:
        server.expect(
            *(reply(tool_calls=[tool_call("todo_write", todos(n))]) for n in range(steps - 1)),
            reply("All done."),
        )
        model = OpenAICompatModel("bench", api_key="sk-bench", base_url=server.base_url)
        seconds = turn(runtime, model, steps)
        server.check()
        return seconds


def blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """A request as the cache sees it, in order (tools, system, messages): each block's JSON
    and whether a breakpoint ends at it."""
    ordered: list[dict[str, Any]] = [*body.get("tools", [])]
    system = body.get("system", [])
    ordered += system if isinstance(system, list) else [{"type": "text", "text": system}]
    for msg in body["messages"]:
        content = msg["content"]
        for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            ordered.append({"role": msg["role"], **block})
    # The breakpoint marks where a prefix ends; it is no part of the prefix's content (a block
    # marked in one request and not in the next is the same block).
    return [
        (
            json.dumps({k: v for k, v in b.items() if k != "cache_control"}, sort_keys=True),
            "cache_control" in b,
        )
        for b in ordered
    ]


def cached_share(bodies: list[dict[str, Any]]) -> float:
    """Characters read from the cache over all input characters, after the first request.

    As the API looks a prefix up: at each breakpoint, and at the block boundaries up to
    LOOKBACK blocks before it; a request writes the prefixes ending at its breakpoints.
    """
    written: set[str] = set()
    read = total = 0
    for number, body in enumerate(bodies):
        parts = blocks(body)
        ends, text = [], ""
        for part, _ in parts:
            text += part
            ends.append(text)
        marks = [i for i, (_, breakpoint) in enumerate(parts) if breakpoint]
        looked = {j for i in marks for j in range(max(0, i - LOOKBACK), i + 1)}
        hit = max((len(ends[j]) for j in looked if ends[j] in written), default=0)
        if number:
            read, total = read + hit, total + len(text)
        written.update(ends[i] for i in marks)
    return read / total if total else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    quick = parser.parse_args().quick
    steps, rounds = (50, 2) if quick else (200, 5)
    runtime = runtime_at(Path(tempfile.mkdtemp(prefix="harness-bench-anthropic-")))
    anthropic_turn(runtime, 5)  # warm-up: imports, schemas, page cache
    openai_turn(runtime, 5)
    sides: dict[str, list[float]] = {"anthropic": [], "openai": []}
    for _ in range(rounds):
        sides["anthropic"].append(anthropic_turn(runtime, steps)[0])
        sides["openai"].append(openai_turn(runtime, steps))
    a, o = statistics.median(sides["anthropic"]), statistics.median(sides["openai"])
    print(f"per step, {steps}-step turn x {rounds} rounds (median)")
    print(f"  openai:    {o * 1e3:.2f} ms")
    print(f"  anthropic: {a * 1e3:.2f} ms")
    met = "met" if a / o <= GOAL_RATIO else "MISSED"
    print(f"  ratio: {a / o:.2f}x (goal <= {GOAL_RATIO}x) {met}")
    _, bodies = anthropic_turn(runtime, 50)
    share = cached_share(bodies)
    met = "met" if share > GOAL_SHARE else "MISSED"
    print(f"cached prefix, 50-step session, after the first step: {share:.1%} (goal > 90%) {met}")


if __name__ == "__main__":
    main()
