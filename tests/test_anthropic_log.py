"""The core's provider-neutral additions a provider such as Anthropic needs: thinking blocks
with their signatures and cache usage on `message/assistant`, and a result's error flag on
the derived messages. An event that uses none of them keeps the exact shape it always had."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness_core import builtins
from harness_core.log import SessionLog, SessionStore, derive_messages
from harness_core.loop import Agent
from harness_core.models import (
    DeltaSink,
    ModelBase,
    ModelResponse,
    ResponseToolCall,
    Thinking,
)
from harness_core.models.openai_compat import OpenAICompatModel
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import OpenAIServer, reply

OLD_SHAPE = ["text", "tool_calls", "reasoning_content", "model", "usage"]
SIGNED = Thinking(text="The user wants a failing call.", signature="sig-1")
REDACTED = Thinking(redacted="opaque-bytes")


class _Played(ModelBase):
    """A model that answers from a list and keeps what it was sent (no SDK involved)."""

    name = "played"

    def __init__(self, *responses: ModelResponse) -> None:
        self.responses = list(responses)
        self.sent: list[list[dict[str, Any]]] = []

    async def respond(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        self.sent.append(json.loads(json.dumps(messages)))
        return self.responses.pop(0)


def _session(home: Path) -> tuple[PluginHost, SessionStore, SessionLog]:
    host = PluginHost()
    builtins.add_to(host)
    store = SessionStore(home, host.event_types)
    return host, store, store.create(system_prompt="Be brief.", cwd=str(home))


def _lines(log: SessionLog) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.path.read_bytes().splitlines()]


async def test_thinking_cache_usage_and_error_flag_reach_the_log_and_the_next_request(
    harness_home: Path,
) -> None:
    """Signed and redacted thinking and cache usage are stored; the failed call's result and
    the thinking come back on the messages the next request is built from."""
    usage = {
        "prompt_tokens": 1200,
        "completion_tokens": 30,
        "total_tokens": 1230,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 150,
    }
    call = ResponseToolCall(id="toolu_1", name="no_such_tool", arguments="{}")
    model = _Played(
        ModelResponse(tool_calls=(call,), thinking=(SIGNED, REDACTED), usage=usage),
        ModelResponse(text="It failed.", usage={"prompt_tokens": 9, "total_tokens": 9}),
    )
    host, store, log = _session(harness_home)
    outcome = await Agent(log, model, host.tools, store=store).run_turn("Call a missing tool.")
    assert outcome.status == "completed"
    lines = _lines(log)
    first, second = (line["data"] for line in lines if line["type"] == "message/assistant")
    assert first["thinking"] == [
        {"text": SIGNED.text, "signature": "sig-1", "redacted": None},
        {"text": "", "signature": None, "redacted": "opaque-bytes"},
    ]
    assert first["usage"] == usage
    # No thinking, no cache figures: the line is what an older harness wrote.
    assert list(second) == OLD_SHAPE
    assert second["usage"] == {"prompt_tokens": 9, "completion_tokens": 0, "total_tokens": 9}
    assistant, result = model.sent[1][-2:]
    assert assistant["thinking"] == first["thinking"]
    assert result["is_error"] is True and result["tool_call_id"] == "toolu_1"
    log.close()
    reread = store.open(log.path.stem, writable=False)
    assert derive_messages(reread.events)[-3:-1] == model.sent[1][-2:]  # a replay agrees


def test_an_old_log_still_reads_and_derives_what_it_did(harness_home: Path) -> None:
    """A log written before these fields existed derives messages without any of them."""
    host = PluginHost()
    builtins.add_to(host)
    store = SessionStore(harness_home, host.event_types)
    path = store.directory / "20261130-072901-589abe.jsonl"
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    start = {"id": "20261130-072901-589abe", "created": "2026-11-30T07:29:01.000Z"}
    events = [
        ("session/start", {**start, "harness_version": "0.1.0", "system_prompt": None}),
        ("turn/start", {}),
        ("message/user", {"text": "hi"}),
        (
            "message/assistant",
            {
                "text": None,
                "tool_calls": [{"id": "c1", "name": "bash", "arguments": "{}"}],
                "reasoning_content": None,
                "model": "m",
                "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
            },
        ),
        ("tool/result", {"call_id": "c1", "tool_name": "bash", "text": "ok", "is_error": False}),
        ("turn/end", {"status": "completed", "error": None}),
    ]
    with path.open("w") as out:
        for seq, (kind, data) in enumerate(events):
            envelope = {"seq": seq, "type": kind, "ts": "2026-11-30T07:29:01.001Z", "data": data}
            if seq:
                envelope["turn"] = 1
            out.write(json.dumps(envelope, separators=(",", ":")) + "\n")
    log = store.open(path.stem, writable=False)
    assert derive_messages(log.events) == [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]


async def test_the_openai_path_sends_none_of_the_extras(openai_server: OpenAIServer) -> None:
    """Another provider's thinking and the error flag are not chat-completions fields: a
    session that switches to an OpenAI-compatible model sends the messages it always did."""
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
            ],
            "thinking": [{"text": "hm", "signature": "s", "redacted": None}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: no", "is_error": True},
    ]
    openai_server.expect(reply("ok"))
    model = OpenAICompatModel("m", api_key="sk-test", base_url=openai_server.base_url)
    async with model:
        await model.respond(history, [])
    sent = openai_server.requests[0].messages
    assert sent[1].keys() == {"role", "content", "tool_calls"}
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": "Error: no"}
    assert history[2]["is_error"] is True  # the caller's dicts are untouched
