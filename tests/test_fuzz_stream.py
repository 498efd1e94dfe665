"""Fuzz: mutated SSE streams from the loopback OpenAI server (dropped and duplicated chunks,
broken JSON, bit flips, raw bytes that are not UTF-8, wrong indices) through a whole turn.

The property: the turn ends completed, or as an error whose text is one line; nothing else
escapes `run_turn` (no traceback, no "internal error"), and the session file replays cleanly
with the turn closed and every tool call answered. HARNESS_FUZZ_STREAM_EXAMPLES (else
HARNESS_FUZZ_EXAMPLES, which `scripts/fuzz` sets for a long run) is the number of cases; the
default, 60, takes well under a minute.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import anyio
from harness_core.log import EventTypeRegistry, FileLog, SessionStore
from harness_core.loop import Agent, TurnOutcome
from harness_core.models.openai_compat import OpenAICompatModel, RetryPolicy
from harness_core.testing.openai_server import OpenAIServer, Reply, reply, tool_call
from harness_core.tools import ToolRegistry
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

EXAMPLES = int(
    os.environ.get("HARNESS_FUZZ_STREAM_EXAMPLES") or os.environ.get("HARNESS_FUZZ_EXAMPLES", "60")
)
BASE = reply(
    "Hello there, friend",
    reasoning="thinking it over",
    tool_calls=[tool_call("probe", {"x": 1}), tool_call("probe", {"y": [2, 3]})],
    pieces=3,
)
# Taken by retries and by the request after the tool results.
FALLBACK = reply("done")

_at = st.integers(0, len(BASE.chunks))
_index = st.none() | st.integers(-2, 4) | st.text(max_size=2) | st.just(1.5)
_mutation = st.one_of(
    st.tuples(st.just("drop"), _at),
    st.tuples(st.just("duplicate"), _at),
    st.tuples(st.just("truncate"), _at, st.integers(0, 300)),
    st.tuples(st.just("flip"), _at, st.integers(0, 300), st.integers(0, 7)),
    st.tuples(st.just("raw"), _at, st.binary(max_size=24)),
    st.tuples(st.just("index"), _at, _index),
)


def mutate(chunks: list[dict[str, Any] | bytes], mutation: tuple[Any, ...]) -> None:
    """Apply one mutation in place; positions wrap around the current chunk list."""
    kind, at, *rest = mutation
    if not chunks:
        return
    at %= len(chunks)
    chunk = chunks[at]
    encoded = chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode()
    if kind == "drop":
        del chunks[at]
    elif kind == "duplicate":
        chunks.insert(at, chunk)
    elif kind == "truncate":
        chunks[at] = encoded[: rest[0] % (len(encoded) + 1)]
    elif kind == "flip":
        position = rest[0] % max(len(encoded), 1)
        flipped = bytearray(encoded)
        if flipped:
            flipped[position] ^= 1 << rest[1]
        chunks[at] = bytes(flipped)
    elif kind == "raw":
        chunks[at] = rest[0]
    elif isinstance(chunk, dict) and chunk["choices"]:
        changed = copy.deepcopy(chunk)
        choice = changed["choices"][0]
        choice["index"] = rest[0]
        for call in choice["delta"].get("tool_calls", ()):
            call["index"] = rest[0]
        chunks[at] = changed


async def run_turn(server: OpenAIServer, store: SessionStore) -> tuple[TurnOutcome, Path]:
    model = OpenAICompatModel(
        "fuzz-model",
        api_key="sk-fuzz",
        base_url=server.base_url,
        retry=RetryPolicy(attempts=2, initial_delay=0.001, max_delay=0.002),
        timeout=5.0,
    )
    with store.create() as log:
        agent = Agent(log, model, ToolRegistry(), max_steps=4)
        async with model:
            with anyio.fail_after(30):  # "never longer than a bound"
                outcome = await agent.run_turn("go")
        return outcome, log.path


def assert_well_formed(path: Path, registry: EventTypeRegistry) -> None:
    """The file replays without problems, ends the turn, and leaves no call unanswered."""
    log = FileLog.open(path, registry, writable=False)
    assert log.problems == []
    assert log.events[-1].type == "turn/end"
    assert log.projection.pending_calls == {}


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(mutations=st.lists(_mutation, min_size=1, max_size=4))
def test_a_mutated_stream_ends_the_turn_cleanly(mutations: list[tuple[Any, ...]]) -> None:
    """Completed, or one error line: never an exception out of the loop, never a broken log."""
    chunks: list[dict[str, Any] | bytes] = list(BASE.chunks)
    for mutation in mutations:
        mutate(chunks, mutation)
    registry = EventTypeRegistry()
    with tempfile.TemporaryDirectory() as home, OpenAIServer() as server:
        server.expect(Reply(chunks=tuple(chunks)), *[FALLBACK] * 6)
        store = SessionStore(Path(home), registry)
        outcome, path = anyio.run(run_turn, server, store)
        assert outcome.status in ("completed", "error"), outcome
        event(f"turn {outcome.status}")  # counted by --hypothesis-show-statistics
        if outcome.status == "error":
            error = outcome.error or ""
            assert error and "\n" not in error, error
            assert "Traceback" not in error and "internal error" not in error, error
        assert_well_formed(path, registry)
