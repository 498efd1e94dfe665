"""Compaction in the loop: by threshold, on a context-length error, by hand; failures, cancel."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import anyio
import orjson
import pytest
from harness_core.log import (
    SUMMARY_HEADER,
    Event,
    SessionLog,
    SessionStore,
    derive_messages,
    history_of,
)
from harness_core.loop import (
    SUMMARY_PROMPT,
    Agent,
    CompactionPolicy,
    NothingToCompact,
    TurnOutcome,
)
from harness_core.models import DeltaSink, ModelResponse, ScriptedModel
from harness_core.models.openai_compat import OpenAICompatModel, RetryPolicy
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import (
    OpenAIServer,
    Reply,
    error_reply,
    reply,
    tool_call,
)
from process_helpers import poll

Message = dict[str, Any]
TOKENS_PER_MESSAGE = 100
# With a 1,000-token window, a request of 8 messages or more makes the next step compact.
POLICY = CompactionPolicy(context_window=1000, compact_at=0.8, keep=2)
TOO_LONG = "This model's maximum context length is 1000 tokens. However, you requested 1200."


class MeteredModel(ScriptedModel):
    """The strict scripted model, reporting usage as a provider would: 100 tokens a message."""

    async def respond(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        on_delta: DeltaSink | None = None,
    ) -> ModelResponse:
        step = await super().respond(messages, tools, on_delta)
        tokens = TOKENS_PER_MESSAGE * len(messages)
        usage = {"prompt_tokens": tokens, "completion_tokens": 1, "total_tokens": tokens + 1}
        return dataclasses.replace(step, usage=usage)


def bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}


def agent_for(store: SessionStore, host: PluginHost, model: Any) -> Agent:
    log = store.create(system_prompt="You test.", cwd=os.getcwd())
    return Agent(log, model, host.tools, store=store, compaction=POLICY)


def compactions(log: SessionLog) -> list[Event]:
    return [event for event in log.events if event.type == "context/compact"]


def is_summary_request(messages: list[Message]) -> bool:
    return messages[-1] == {"role": "user", "content": SUMMARY_PROMPT}


async def test_a_long_turn_compacts_each_time_it_nears_the_window(
    store: SessionStore, host: PluginHost
) -> None:
    """Requests stay under the window: the turn summarizes, keeps its tail, and goes on."""
    steps: list[dict[str, Any]] = []
    for number in range(12):
        steps.append(bash(f"echo {number}"))
        if number in (3, 6, 9):  # this step's request had 8 messages: the next one compacts
            steps.append({"text": f"summary {number}"})
    steps.append({"text": "Done."})
    model = MeteredModel(steps)
    agent = agent_for(store, host, model)
    outcome = await agent.run_turn("Echo twelve numbers.")
    assert outcome.status == "completed", outcome.error
    assert model.remaining == 0
    assert [e.data["summary"] for e in compactions(agent.session)] == [
        "summary 3",
        "summary 6",
        "summary 9",
    ]
    steps_sent = [r for r in model.requests if not is_summary_request(r)]
    assert max(len(r) for r in steps_sent) <= 8
    after = steps_sent[4]  # the first step after the first compaction
    assert after[1]["content"] == f"{SUMMARY_HEADER}\n\nsummary 3"
    assert after[2]["role"] == "assistant" and after[3]["role"] == "tool"


async def test_replay_derives_byte_identical_requests(
    store: SessionStore, host: PluginHost
) -> None:
    """Every step request a compacted session sent is what a replay of its log derives."""
    steps = [bash("echo a"), bash("echo b"), bash("echo c"), bash("echo d"), {"text": "sum"}]
    model = MeteredModel([*steps, bash("echo e"), {"text": "Done."}])
    agent = agent_for(store, host, model)
    assert (await agent.run_turn("Go.")).status == "completed"
    reopened = store.open(agent.session.session_id, writable=False)
    events = reopened.events
    registry = store.registry

    def carry(compaction: Event) -> list[str]:
        return registry.carried(history_of(e for e in events if e.seq < compaction.seq))

    starts = [i for i, e in enumerate(events) if e.type == "message/assistant"]
    derived = [derive_messages(events[:i], registry.surface, carry=carry) for i in starts]
    sent = [r for r in model.requests if not is_summary_request(r)]
    assert len(compactions(reopened)) == 1
    assert [orjson.dumps(m) for m in derived] == [orjson.dumps(m) for m in sent]


async def test_a_summary_request_repeats_the_prefix_of_the_last_request(
    store: SessionStore, host: PluginHost
) -> None:
    """The prompt cache can serve it: the messages it summarizes, as sent, then the prompt."""
    steps = [bash("echo a"), bash("echo b"), bash("echo c"), bash("echo d"), {"text": "sum"}]
    model = MeteredModel([*steps, {"text": "Done."}])
    agent = agent_for(store, host, model)
    await agent.run_turn("Go.")
    summary, previous = model.requests[4], model.requests[3]
    assert summary[:-1] == previous[: len(summary) - 1]
    (compaction,) = compactions(agent.session)
    kept = agent.session.projection.request_messages()[2:]
    assert kept[0]["role"] == "assistant" and kept[0]["tool_calls"]
    assert compaction.data["first_seq"] == 1
    assert compaction.data["model"] == "scripted"


async def test_a_failed_compaction_appends_nothing_and_the_turn_goes_on(
    store: SessionStore, host: PluginHost, caplog: pytest.LogCaptureFixture
) -> None:
    """A summary answered with a tool call is refused; the turn continues uncompacted."""
    steps = [bash("echo a"), bash("echo b"), bash("echo c"), bash("echo d"), bash("echo x")]
    steps.append({"text": "Done."})
    model = MeteredModel(steps)
    agent = agent_for(store, host, model)
    outcome = await agent.run_turn("Go.")
    assert outcome.status == "completed"
    assert compactions(agent.session) == []
    assert "compaction failed" in caplog.text and "a summary must be text" in caplog.text
    assert len(model.requests[-1]) > 8  # no second attempt in the same turn


async def test_by_hand_compaction_gets_its_own_turn(store: SessionStore, host: PluginHost) -> None:
    """`Agent.compact` appends turn/start, context/compact, turn/end and counts the events."""
    model = MeteredModel([bash("echo a"), {"text": "Done."}, {"text": "summary"}])
    agent = agent_for(store, host, model)
    await agent.run_turn("Go.")
    before = len(agent.session.events)
    summarized = await agent.compact()
    new = agent.session.events[before:]
    assert [e.type for e in new] == ["turn/start", "context/compact", "turn/end"]
    assert summarized == new[1].data["last_seq"] - new[1].data["first_seq"] + 1 > 0
    assert new[2].data == {"status": "completed", "error": None}


async def test_by_hand_compaction_of_an_empty_session_is_refused(
    store: SessionStore, host: PluginHost
) -> None:
    """Nothing but the system prompt: a one-line refusal, nothing appended, no model call."""
    model = MeteredModel([])
    agent = agent_for(store, host, model)
    with pytest.raises(NothingToCompact, match="nothing to compact"):
        await agent.compact()
    assert [e.type for e in agent.session.events] == ["session/start"]
    assert model.requests == []


async def test_by_hand_compaction_summarizes_everything_and_the_next_turn_starts_there(
    store: SessionStore, host: PluginHost
) -> None:
    """One short turn is enough: the next request is the system prompt, summary, new prompt."""
    model = MeteredModel([{"text": "Hi."}, {"text": "They said hello."}, {"text": "Again."}])
    agent = agent_for(store, host, model)
    await agent.run_turn("Hello.")
    assert await agent.compact() == 4  # turn/start, message/user, message/assistant, turn/end
    await agent.run_turn("Once more.")
    assert model.requests[-1] == [
        {"role": "system", "content": "You test."},
        {"role": "user", "content": f"{SUMMARY_HEADER}\n\nThey said hello."},
        {"role": "user", "content": "Once more."},
    ]


async def refused_as_too_long(
    store: SessionStore, host: PluginHost, server: OpenAIServer, *after: Reply
) -> tuple[TurnOutcome, Agent]:
    """A turn whose third request the loopback provider refuses as too long, then `after`."""
    server.expect(
        reply(tool_calls=[tool_call("bash", {"command": "echo a"})]),
        reply(tool_calls=[tool_call("bash", {"command": "echo b"})]),
        error_reply(400, TOO_LONG),
        *after,
    )
    model = OpenAICompatModel("m", api_key="k", base_url=server.base_url)
    agent = agent_for(store, host, model)
    try:
        return await agent.run_turn("Go."), agent
    finally:
        await model.aclose()


async def test_a_context_length_error_compacts_once_then_retries(
    store: SessionStore, host: PluginHost, openai_server: OpenAIServer
) -> None:
    """The loopback provider refuses as too long; the loop summarizes and asks again."""
    outcome, agent = await refused_as_too_long(
        store, host, openai_server, reply("What happened so far."), reply("Done.")
    )
    assert outcome.status == "completed", outcome.error
    (compaction,) = compactions(agent.session)
    assert compaction.data["summary"] == "What happened so far."
    retried = openai_server.requests[4].messages
    assert retried[1]["content"] == f"{SUMMARY_HEADER}\n\nWhat happened so far."
    assert len(retried) < len(openai_server.requests[2].messages)


async def test_a_second_context_length_error_ends_the_turn(
    store: SessionStore, host: PluginHost, openai_server: OpenAIServer
) -> None:
    """Once only: refused again after compacting, the turn ends as an error naming the limit."""
    outcome, agent = await refused_as_too_long(
        store, host, openai_server, reply("Summary."), error_reply(400, TOO_LONG)
    )
    assert outcome.status == "error"
    assert outcome.error is not None and "maximum context length" in outcome.error
    assert len(compactions(agent.session)) == 1


async def test_cancel_during_compaction_appends_nothing(
    store: SessionStore, host: PluginHost, openai_server: OpenAIServer
) -> None:
    """A cancel while the summary streams ends the turn cancelled, with no compaction."""
    retry = RetryPolicy(attempts=1)
    openai_server.expect(
        reply(tool_calls=[tool_call("bash", {"command": "echo a"})], usage=(900, 1)),
        reply("A slow summary.", pieces=20, delay=0.5),
    )
    model = OpenAICompatModel("m", api_key="k", base_url=openai_server.base_url, retry=retry)
    agent = agent_for(store, host, model)
    outcome = None

    async def run() -> None:
        nonlocal outcome
        outcome = await agent.run_turn("Go.")

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await poll(lambda: len(openai_server.requests) == 2)  # the summary is streaming
        agent.cancel()
    await model.aclose()
    assert outcome is not None and outcome.status == "cancelled"
    assert compactions(agent.session) == []
    assert agent.session.events[-1].type == "turn/end"
    assert openai_server.wait_for_disconnect()


async def test_a_subagent_compacts_its_own_session(store: SessionStore, host: PluginHost) -> None:
    """The child crosses the window and compacts its log; the parent's log has no compaction."""
    child = [bash("echo 1"), bash("echo 2"), bash("echo 3"), bash("echo 4"), {"text": "child sum"}]
    steps = [
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "Count."}}]},
        *child,
        {"text": "Four."},
        {"text": "The child counted four."},
    ]
    model = MeteredModel(steps)
    parent = agent_for(store, host, model)
    outcome = await parent.run_turn("Delegate.")
    assert outcome.status == "completed", outcome.error
    assert compactions(parent.session) == []
    (summary,) = [s for s in store.list() if s.parent_session == parent.session.session_id]
    child_log = store.open(summary.id, writable=False)
    assert [e.data["summary"] for e in compactions(child_log)] == ["child sum"]


async def test_deepseek_reasoning_of_kept_tool_calls_is_still_sent_back(
    store: SessionStore, host: PluginHost, openai_server: OpenAIServer
) -> None:
    """The kept tail goes out as before: its tool-calling message keeps reasoning_content."""
    openai_server.expect(
        reply(tool_calls=[tool_call("bash", {"command": "echo a"})], reasoning="think a"),
        reply(
            tool_calls=[tool_call("bash", {"command": "echo b"})],
            reasoning="think b",
            usage=(900, 1),
        ),
        reply("Summary.", reasoning="think summary"),
        reply("Done.", reasoning="think done"),
    )
    model = OpenAICompatModel(
        "m", api_key="k", base_url=openai_server.base_url, provider="deepseek"
    )
    agent = agent_for(store, host, model)
    outcome = await agent.run_turn("Go.")
    await model.aclose()
    assert outcome.status == "completed", outcome.error
    after = openai_server.requests[3].messages
    assert [m["role"] for m in after] == ["system", "user", "assistant", "tool"]
    assert after[2]["reasoning_content"] == "think b" and after[2]["tool_calls"]
    assert after[3]["tool_call_id"] == after[2]["tool_calls"][0]["id"]
