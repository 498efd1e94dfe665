"""The plan carried across a compaction (`harness_compaction_carry`): what the model keeps."""

from __future__ import annotations

from typing import Any

from harness_core.log import SUMMARY_HEADER, Event, SessionStore, history_of
from harness_core.loop import Agent, CompactionPolicy
from harness_core.models import ScriptedModel
from harness_core.models.openai_compat import OpenAICompatModel
from harness_core.plugins import PluginHost
from harness_core.testing.openai_server import OpenAIServer, reply, tool_call
from harness_tool_todo import harness_compaction_carry
from harness_tool_todo._carry import CARRIED_HEADER

PLAN = [
    {"content": "Read the parser", "status": "completed"},
    {"content": "Fix the bug", "status": "in_progress"},
    {"content": "Run the tests", "status": "pending"},
]
CARRIED = "\n".join(
    [
        CARRIED_HEADER,
        "- [completed] Read the parser",
        "- [in_progress] Fix the bug",
        "- [pending] Run the tests",
    ]
)


def write(todos: list[dict[str, str]]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}


def event(seq: int, type: str, data: dict[str, Any]) -> Event:
    return Event(seq, type, "2026-01-01T00:00:00.000Z", data, 1)


def test_harness_compaction_carry_returns_the_latest_unfinished_plan_before_the_end() -> None:
    """The newest list before `end` with every status; later writes are not its business."""
    events = [
        event(0, "session/start", {}),
        event(1, "todo/write", {"todos": [{"content": "Old", "status": "pending"}]}),
        event(2, "todo/write", {"todos": PLAN}),
        event(3, "turn/start", {}),
        event(4, "todo/write", {"todos": [{"content": "Later", "status": "pending"}]}),
    ]
    assert harness_compaction_carry(history_of(events[:4])) == CARRIED
    assert harness_compaction_carry(history_of(events[:2])) == f"{CARRIED_HEADER}\n- [pending] Old"
    assert harness_compaction_carry(history_of(events[:1])) is None


def test_harness_compaction_carry_leaves_a_finished_plan_to_the_summary() -> None:
    """A list with nothing unfinished (or an emptied one) is not carried."""
    done = [{"content": "Fix the bug", "status": "completed"}]
    finished = history_of([event(0, "todo/write", {"todos": done})])
    assert harness_compaction_carry(finished) is None
    assert harness_compaction_carry(history_of([event(0, "todo/write", {"todos": []})])) is None


async def test_the_first_request_after_a_compaction_carries_the_standing_plan(
    store: SessionStore, todo_host: PluginHost, openai_server: OpenAIServer
) -> None:
    """Mid-turn, near the window: the summary is followed by the plan, statuses and all."""
    openai_server.expect(
        reply(tool_calls=[tool_call("todo_write", {"todos": PLAN})], usage=(900, 1)),
        reply("We are fixing the parser bug."),
        reply("Fixed."),
    )
    model = OpenAICompatModel("m", api_key="k", base_url=openai_server.base_url)
    log = store.create(system_prompt="You test.")
    policy = CompactionPolicy(context_window=1000, keep=2)
    agent = Agent(log, model, todo_host.tools, compaction=policy)
    outcome = await agent.run_turn("Fix the parser.")
    await model.aclose()
    assert outcome.status == "completed", outcome.error
    first_after = openai_server.requests[2].messages
    assert first_after[1] == {
        "role": "user",
        "content": f"{SUMMARY_HEADER}\n\nWe are fixing the parser bug.\n\n{CARRIED}",
    }
    reopened = store.open(log.session_id, writable=False)
    assert reopened.projection.request_messages()[:2] == first_after[:2]


async def test_the_plan_stays_carried_after_a_later_turn_starts(
    store: SessionStore, todo_host: PluginHost
) -> None:
    """Compacted by hand between turns, the next turn's first request still has the plan."""
    model = ScriptedModel(
        [write(PLAN), {"text": "Working."}, {"text": "Summary."}, {"text": "Continuing."}]
    )
    log = store.create(system_prompt="You test.")
    agent = Agent(log, model, todo_host.tools, compaction=CompactionPolicy(keep=1))
    await agent.run_turn("Fix the parser.")
    await agent.compact()
    await agent.run_turn("Go on.")
    next_turn = model.requests[-1]
    assert next_turn[1]["content"] == f"{SUMMARY_HEADER}\n\nSummary.\n\n{CARRIED}"
    assert next_turn[-1] == {"role": "user", "content": "Go on."}
