"""AnthropicModel on the real `anthropic` SDK against the scripted Messages API server
(`harness_model_anthropic.testing`): the exact requests it sends, what it streams and keeps,
its retries and its one-line errors. No key, no network."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import anthropic
import pytest
from harness_core import builtins
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ContextLengthExceeded, ModelError, read_timeout
from harness_core.plugins import PluginHost
from harness_model_anthropic import build
from harness_model_anthropic._model import AnthropicModel, RetryPolicy
from harness_model_anthropic.testing import (
    FakeMessages,
    Reply,
    error,
    error_event,
    garbled,
    message,
    tool_use,
)

FAST = RetryPolicy(attempts=4, initial_delay=0.005, max_delay=0.02)
USER: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
CACHE = {"type": "ephemeral"}
Deltas = list[tuple[Literal["text", "reasoning"], str]]


@pytest.fixture
def fake() -> Iterator[FakeMessages]:
    server = FakeMessages()
    yield server
    server.close()
    server.check()


@asynccontextmanager
async def connect(fake: FakeMessages, **options: Any) -> AsyncIterator[AnthropicModel]:
    options.setdefault("retry", FAST)
    model = AnthropicModel("claude-test", api_key="sk-ant-test", base_url=fake.base_url, **options)
    async with model:
        yield model


async def test_text_and_thinking_stream_to_the_host_as_deltas(fake: FakeMessages) -> None:
    """Thinking deltas go out as "reasoning", text as "text", in order; the signed block and
    a redacted one come back on the response, opaque data untouched."""
    fake.expect(message("Hello there.", thinking=(("Greet them.", "sig-A"),), redacted=("R0==",)))
    deltas: Deltas = []
    async with connect(fake) as model:
        response = await model.respond(USER, [], lambda kind, chunk: deltas.append((kind, chunk)))
    assert [kind for kind, _ in deltas] == ["reasoning"] * 3 + ["text"] * 3
    assert "".join(c for k, c in deltas if k == "reasoning") == "Greet them."
    assert response.text == "Hello there."
    assert [(t.text, t.signature, t.redacted) for t in response.thinking] == [
        ("Greet them.", "sig-A", None),
        ("", None, "R0=="),
    ]
    body = fake.requests[0].body
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": CACHE}]}
    ]
    assert body["stream"] is True and body["max_tokens"] > 0 and "thinking" not in body
    headers = fake.requests[0].headers  # the SDK sends the key as x-api-key or a bearer token
    assert "sk-ant-test" in (headers.get("x-api-key") or headers["authorization"])


async def test_a_thinking_budget_asks_for_thinking(fake: FakeMessages) -> None:
    fake.expect(message("ok"))
    async with connect(fake, thinking_budget=2048, max_tokens=9000) as model:
        await model.respond(USER, [])
    body = fake.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 9000


async def test_a_turn_with_several_tool_uses_sends_results_back_in_one_user_turn(
    fake: FakeMessages, harness_home: Path
) -> None:
    """Two tool uses in one response (one fails); the next request carries the signed and the
    redacted thinking first, both tool_use blocks, then one user turn with both results, the
    failed one is_error; breakpoints sit on the tools, the system prompt and the history; the
    log keeps the thinking and the cache usage."""
    todos = {"todos": [{"content": "Read the code", "status": "in_progress"}]}
    plan, missing = tool_use("todo_write", todos), tool_use("no_such_tool", {"x": 1})
    usage = {"input_tokens": 40, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 60}
    fake.expect(
        message(
            "Planning.",
            thinking=(("Plan, then look.", "sig-1"),),
            redacted=("opaque==",),
            tool_uses=(plan, missing),
            usage=usage,
        ),
        message("Done.", usage={"input_tokens": 5, "cache_read_input_tokens": 1100}),
    )
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    store = SessionStore(harness_home, host.event_types)
    log = store.create(system_prompt="You are a test agent.", cwd=str(harness_home))
    async with connect(fake) as model:
        outcome = await Agent(log, model, host.tools, store=store).run_turn("Plan the work.")
    assert (outcome.status, outcome.text) == ("completed", "Done.")

    first, second = (r.body for r in fake.requests)
    assert first["system"] == [
        {"type": "text", "text": "You are a test agent.", "cache_control": CACHE}
    ]
    assert first["tools"][-1]["cache_control"] == CACHE
    assert all("cache_control" not in tool for tool in first["tools"][:-1])
    assert {"todo_write", "bash"} <= {tool["name"] for tool in first["tools"]}
    prompt, assistant, results = second["messages"]
    # The first request's breakpoint moved on: the cache finds its prefix by looking back.
    assert prompt == {"role": "user", "content": [{"type": "text", "text": "Plan the work."}]}
    assert first["messages"][0]["content"][-1]["cache_control"] == CACHE
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {"type": "thinking", "thinking": "Plan, then look.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "text", "text": "Planning."},
        {"type": "tool_use", "id": plan["id"], "name": "todo_write", "input": todos},
        {
            "type": "tool_use",
            "id": missing["id"],
            "name": "no_such_tool",
            "input": {"x": 1},
            "cache_control": CACHE,  # the end of the history before the latest user turn
        },
    ]
    assert results["role"] == "user"
    ok, failed = results["content"]
    assert (ok["tool_use_id"], ok.get("is_error")) == (plan["id"], None)
    assert "1 in progress" in ok["content"]
    assert (failed["tool_use_id"], failed["is_error"]) == (missing["id"], True)
    assert failed["cache_control"] == CACHE  # the latest user turn: the next step reads it

    assistants = [e.data for e in log.events if e.type == "message/assistant"]
    assert assistants[0]["thinking"] == [
        {"text": "Plan, then look.", "signature": "sig-1", "redacted": None},
        {"text": "", "signature": None, "redacted": "opaque=="},
    ]
    assert assistants[0]["usage"] == {
        "prompt_tokens": 1000,
        "completion_tokens": 7,
        "total_tokens": 1007,
        "cache_read_tokens": 900,
        "cache_write_tokens": 60,
    }
    assert json.loads(assistants[0]["tool_calls"][0]["arguments"]) == todos  # raw, as streamed
    assert "thinking" not in assistants[1]
    log.close()


async def test_a_compaction_summary_after_results_joins_their_user_turn(fake: FakeMessages) -> None:
    """Roles alternate: a user message right after tool results is one user turn with them,
    and an assistant message with nothing in it is not sent."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "t", "arguments": "not json"}}
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "bad arguments", "is_error": True},
        {"role": "user", "content": "next"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "again"},
    ]
    fake.expect(message("ok"))
    async with connect(fake) as model:
        await model.respond(history, [])
    sent = fake.requests[0].body["messages"]
    assert [turn["role"] for turn in sent] == ["user", "assistant", "user"]
    assert sent[1]["content"] == [
        {"type": "tool_use", "id": "a", "name": "t", "input": {}, "cache_control": CACHE}
    ]
    assert [block["type"] for block in sent[2]["content"]] == ["tool_result", "text", "text"]
    assert sent[2]["content"][-1] == {"type": "text", "text": "again", "cache_control": CACHE}
    assert "cache_control" not in history[-1]  # the projection's dicts are never edited


# -- retries and failures ------------------------------------------------------------------


async def test_429_529_and_5xx_are_retried_honouring_retry_after(fake: FakeMessages) -> None:
    """retry-after (seconds and -ms) sets the wait; then the answer comes through."""
    fake.expect(
        error(429, "slow down", "rate_limit_error", retry_after="0.3"),
        error(529, "Overloaded", "overloaded_error", retry_after_ms="200"),
        error(503, "unavailable"),
        message("finally"),
    )
    async with connect(fake) as model:
        response = await model.respond(USER, [])
    assert response.text == "finally"
    at = [r.at for r in fake.requests]
    assert at[1] - at[0] >= 0.3 and at[2] - at[1] >= 0.2
    assert at[3] - at[2] < 0.2  # no retry-after: the fast backoff


async def test_an_overloaded_error_event_before_output_is_retried(fake: FakeMessages) -> None:
    fake.expect(error_event("overloaded_error", "Overloaded"), message("ok"))
    async with connect(fake) as model:
        assert (await model.respond(USER, [])).text == "ok"


async def test_retries_run_out_with_one_line(fake: FakeMessages) -> None:
    fake.expect(*(error(529, "Overloaded", "overloaded_error") for _ in range(3)))
    async with connect(fake, retry=RetryPolicy(attempts=3, initial_delay=0.005)) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    assert str(caught.value) == (
        "anthropic:claude-test returned HTTP 529 after 3 attempts: Overloaded "
        "(the provider is overloaded; try again later)"
    )


async def test_a_stream_cut_after_output_is_not_retried(fake: FakeMessages) -> None:
    fake.expect(message("Part of an answer that breaks.", cut_after=5))
    deltas: Deltas = []
    async with connect(fake) as model:
        with pytest.raises(ModelError, match="stream broke after output had started"):
            await model.respond(USER, [], lambda kind, chunk: deltas.append((kind, chunk)))
    assert deltas and len(fake.requests) == 1


async def test_a_stream_cut_before_output_is_retried(fake: FakeMessages) -> None:
    fake.expect(message("lost", cut_after=2), message("whole"))
    async with connect(fake) as model:
        assert (await model.respond(USER, [], lambda kind, chunk: None)).text == "whole"


async def test_an_error_event_after_output_is_not_retried(fake: FakeMessages) -> None:
    events = message("Half").events[:5]  # message_start, ping, block start, two text deltas
    broken = error_event("overloaded_error", "Overloaded mid-answer")
    fake.expect(type(broken)(events=events + broken.events))
    async with connect(fake) as model:
        with pytest.raises(ModelError, match=r"after output had started.*Overloaded mid-answer"):
            await model.respond(USER, [], lambda kind, chunk: None)
    assert len(fake.requests) == 1


# Faults in a stream, each placed before any text: message_start, ping, the text block's
# start, then (event 3) its first delta.
NOT_JSON = b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_de'
NOT_UTF8 = b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", '
NOT_UTF8 += b'"text": "caf\xe9"}}'
STRAY = {"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "x"}}
FAULTS = {
    "malformed-event": (
        garbled(message("lost"), at=3, data=NOT_JSON),
        "sent an event that is not JSON (JSONDecodeError: Unterminated string starting at:",
    ),
    "unknown-index": (
        garbled(message("lost"), at=3, data=json.dumps(STRAY).encode()),
        "sent an event for a content block it never started (IndexError: list index out",
    ),
    "cut": (
        message("lost", cut_after=3),
        "stream failed (3 attempts): RemoteProtocolError: peer closed connection without "
        "sending complete message body (incomplete chunked read)",
    ),
    "not-utf8": (
        garbled(message("lost"), at=3, data=NOT_UTF8),
        "sent an event that is not valid UTF-8 (invalid continuation byte at byte ",
    ),
    # A body that ends cleanly but before message_stop is broken, not done.
    "ends-early": (
        Reply(events=message("lost").events[:3]),
        "stream failed (3 attempts): the stream ended before the response was complete",
    ),
}


@pytest.mark.parametrize("fault", FAULTS, ids=list(FAULTS))
async def test_a_fault_before_output_is_retried(fake: FakeMessages, fault: str) -> None:
    """A garbled event, a delta for a block never started, a cut, data that is not UTF-8, a
    body that ends early: before anything reached the host, the request is tried again and the host sees only
    the answer that came through."""
    fake.expect(FAULTS[fault][0], message("clean", pieces=1))
    deltas: Deltas = []
    async with connect(fake) as model:
        response = await model.respond(USER, [], lambda kind, chunk: deltas.append((kind, chunk)))
    assert (response.text, deltas) == ("clean", [("text", "clean")])
    assert len(fake.requests) == 2


@pytest.mark.parametrize("fault", FAULTS, ids=list(FAULTS))
async def test_a_fault_on_every_attempt_ends_in_one_line(fake: FakeMessages, fault: str) -> None:
    """Every attempt faulty: one line naming the provider and what was wrong, the attempts,
    and what to do."""
    reply, problem = FAULTS[fault]
    fake.expect(*[reply] * 3)
    async with connect(fake, retry=RetryPolicy(attempts=3, initial_delay=0.005)) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    text = str(caught.value)
    assert text.startswith(f"anthropic:claude-test {problem}"), text
    sent_garbage = fault not in ("cut", "ends-early")
    assert text.endswith("check the base URL" if sent_garbage else "try again later"), text
    assert "(3 attempts)" in text and "\n" not in text


async def test_a_malformed_event_after_output_is_named_and_not_retried(
    fake: FakeMessages,
) -> None:
    """After text reached the host: not retried, and the line says what the provider sent."""
    fake.expect(garbled(message("Half of this answer"), at=4, data=NOT_JSON))
    deltas: Deltas = []
    async with connect(fake) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [], lambda kind, chunk: deltas.append((kind, chunk)))
    assert deltas == [("text", "Half of")] and len(fake.requests) == 1
    assert str(caught.value).startswith(
        "anthropic:claude-test stream broke after output had started (an event that is not "
        "JSON (JSONDecodeError: Unterminated string"
    )
    assert str(caught.value).endswith(
        "not retried because part of the answer was already shown; run the turn again"
    )


async def test_a_stalled_stream_times_out(fake: FakeMessages) -> None:
    """Headers, then silence past the read timeout: retried, then one line naming the
    timeout and the setting that raises it."""
    stalled = replace(message("late"), stall=1.0)
    fake.expect(stalled, stalled)
    timeout = read_timeout(anthropic.Timeout, 0.2)
    retry = RetryPolicy(attempts=2, initial_delay=0.005)
    async with connect(fake, retry=retry, timeout=timeout) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    assert str(caught.value).startswith(
        "anthropic:claude-test timed out (2 attempts, no data for 0.2s): the provider is slow "
        "or unreachable"
    )


@pytest.mark.parametrize(
    ("status", "kind", "advice"),
    [
        (400, "invalid_request_error", "(the provider rejected the request)"),
        (401, "authentication_error", "(check ANTHROPIC_API_KEY)"),
        (403, "permission_error", "(the key has no access to claude-test)"),
        (404, "not_found_error", "(check the model name and the base URL http://127.0.0.1:"),
    ],
)
async def test_client_errors_fail_at_once_with_one_line(
    fake: FakeMessages, status: int, kind: str, advice: str
) -> None:
    fake.expect(error(status, f"the {kind}\nwith a second line", kind))
    async with connect(fake) as model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    text = str(caught.value)
    assert "\n" not in text and len(fake.requests) == 1
    assert text.startswith(
        f"anthropic:claude-test returned HTTP {status}: the {kind} with a second line"
    )
    assert advice in text


async def test_a_prompt_too_long_asks_for_compaction(fake: FakeMessages) -> None:
    fake.expect(
        error(400, "prompt is too long: 210000 tokens > 200000 maximum", "invalid_request_error")
    )
    async with connect(fake) as model:
        with pytest.raises(ContextLengthExceeded):
            await model.respond(USER, [])


async def test_an_unreachable_server_names_the_url() -> None:
    model = AnthropicModel(
        "claude-test", api_key="sk-ant-test", base_url="http://127.0.0.1:9", retry=FAST
    )
    async with model:
        with pytest.raises(ModelError) as caught:
            await model.respond(USER, [])
    assert str(caught.value).startswith(
        "cannot reach anthropic:claude-test at http://127.0.0.1:9 (4 attempts): "
    )


# -- the spec ------------------------------------------------------------------------------


def test_the_spec_needs_a_model_and_a_key() -> None:
    with pytest.raises(ModelError, match="use --model anthropic:MODEL or set ANTHROPIC_MODEL"):
        build("", {}, {"ANTHROPIC_API_KEY": "k"})
    with pytest.raises(
        ModelError, match=r"^anthropic:claude-x needs an API key: set ANTHROPIC_API_KEY$"
    ):
        build("claude-x", {}, {})
    with pytest.raises(ModelError, match="ANTHROPIC_THINKING_BUDGET must be a positive number"):
        build("claude-x", {}, {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_THINKING_BUDGET": "lots"})


def test_the_spec_reads_the_environment_and_the_settings() -> None:
    env = {
        "ANTHROPIC_API_KEY": "k",
        "ANTHROPIC_MODEL": "claude-env",
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:1/proxy",
        "ANTHROPIC_THINKING_BUDGET": "1024",
    }
    model = build("", {"retries": 0, "timeout": 7.5}, env)
    assert (model.name, model.base_url, model.thinking_budget) == (
        "anthropic:claude-env",
        "http://127.0.0.1:1/proxy",
        1024,
    )
    assert model.retry.attempts == 1
    overridden = build("claude-x", {"base_url": "http://127.0.0.1:2"}, env)
    assert overridden.base_url == "http://127.0.0.1:2" and overridden.retry.attempts == 4
