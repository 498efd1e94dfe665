"""Compaction benchmark: a 10,000-step turn that compacts about every 200 steps.

    uv run python scripts/bench/compact.py             # 10,000 steps
    uv run python scripts/bench/compact.py --steps 3000

One turn on the real loop, the real log (a session file in a temp dir, real fdatasync at
every commit point) and the real todo plugin: every step calls `todo_write` with an 8-item
list whose statuses advance, so each compaction carries an unfinished plan. The model reports
usage as a provider would, 100 prompt tokens a message, against a 50,000-token window with
the default `compact_at` (0.8): a request of 400 messages makes the next step compact. It
answers a summary request with a short text, and everything else with the next step.

Printed side by side: the harness's time per step (wall, and this process's CPU time) over
the first and the last 1,000 steps, compactions included, with the model's own bookkeeping
left out; and the largest request (messages, and bytes as JSON) in each window. Issue 14's
goals: the last 1,000 steps within 1.2x of the first 1,000, and the request size bounded.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import anyio
import orjson
from harness_core.loop import SUMMARY_PROMPT
from harness_core.models import DeltaSink, ModelBase, ModelResponse, ResponseToolCall
from harness_core.runtime import Runtime

os.environ.pop("HARNESS_DEV", None)  # production setting: no dev invariants on append

TASKS: Final = tuple(f"Task {n}: change module {n} and run its tests" for n in range(1, 9))
WINDOW: Final = 50_000
TOKENS_PER_MESSAGE: Final = 100
SPAN: Final = 1000
PEAK: Final = 396  # messages: requests this long get their size in bytes measured
GOAL: Final = 1.2

Message = dict[str, Any]


class BenchModel(ModelBase):
    """Answers summary requests with text and every other request with a todo_write step."""

    name = "bench"
    context_window = WINDOW

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.step = 0
        self.summaries = 0
        self.excluded = 0.0  # seconds this model spent on its own bookkeeping
        self.excluded_cpu = 0.0
        # per step: (wall, cpu) when the harness asked for it, and the request's length
        self.stamps: list[tuple[float, float]] = []
        self.lengths: list[int] = []
        self.sizes: dict[int, int] = {}  # step -> request bytes, for the largest requests

    async def respond(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        wall, cpu = time.perf_counter(), time.process_time()
        usage = {"prompt_tokens": TOKENS_PER_MESSAGE * len(messages)}
        if messages[-1].get("content") == SUMMARY_PROMPT:
            self.summaries += 1
            response = ModelResponse(text=f"Summary {self.summaries}.", model="bench", usage=usage)
        else:
            self.stamps.append((wall - self.excluded, cpu - self.excluded_cpu))
            self.lengths.append(len(messages))
            if len(messages) >= PEAK:  # the largest requests, just before a compaction
                self.sizes[self.step] = len(orjson.dumps(messages))
            response = self._next(usage)
        self.excluded += time.perf_counter() - wall
        self.excluded_cpu += time.process_time() - cpu
        return response

    def _next(self, usage: dict[str, int]) -> ModelResponse:
        self.step += 1
        if self.step > self.steps:
            return ModelResponse(text="Done.", model="bench", usage=usage)
        done = self.step * len(TASKS) // (self.steps + 1)
        todos = [
            {"content": task, "status": "completed" if n < done else "in_progress"}
            if n <= done
            else {"content": task, "status": "pending"}
            for n, task in enumerate(TASKS)
        ]
        call = ResponseToolCall(
            id=f"call_{self.step}",
            name="todo_write",
            arguments=orjson.dumps({"todos": todos}).decode(),
        )
        return ModelResponse(tool_calls=(call,), model="bench", usage=usage)


def runtime_at(home: Path) -> Runtime:
    """The session runtime every host runs turns through, on the file store in `home`."""
    os.environ["HARNESS_MAX_STEPS"] = "1000000"  # each scripted turn ends by itself
    os.environ["HARNESS_SYSTEM_PROMPT"] = "You are a coding agent."
    return Runtime(home)


def run(steps: int) -> BenchModel:
    model = BenchModel(steps)
    with tempfile.TemporaryDirectory() as home:
        runtime = runtime_at(Path(home))

        async def turn() -> None:
            session = runtime.open(None, model, cwd=home)
            outcome = await session.run("Do the eight tasks.")
            await session.aclose()
            assert outcome.status == "completed", outcome.error

        anyio.run(turn)
    return model


def window(model: BenchModel, start: int) -> tuple[float, float, int, int]:
    """µs per step (wall, cpu), max messages and max sampled bytes over SPAN steps."""
    first, last = model.stamps[start], model.stamps[start + SPAN]
    sizes = [size for step, size in model.sizes.items() if start <= step < start + SPAN]
    return (
        (last[0] - first[0]) / SPAN * 1e6,
        (last[1] - first[1]) / SPAN * 1e6,
        max(model.lengths[start : start + SPAN]),
        max(sizes),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    steps = parser.parse_args().steps
    model = run(steps)
    early, late = window(model, 0), window(model, len(model.stamps) - SPAN - 1)
    print(f"{steps} steps, {model.summaries} compactions (one per {steps // model.summaries})")
    print(f"{'':24}{'first 1,000':>14}{'last 1,000':>14}{'ratio':>8}")
    rows = ("wall µs/step", "cpu µs/step", "max messages/request", "max bytes/request")
    for name, a, b in zip(rows, early, late, strict=True):
        print(f"{name:24}{a:>14,.0f}{b:>14,.0f}{b / a:>8.2f}")
    verdict = "met" if late[0] / early[0] <= GOAL else "NOT met"
    print(f"goal: last 1,000 steps within {GOAL}x of the first 1,000 (wall): {verdict}")


if __name__ == "__main__":
    main()
