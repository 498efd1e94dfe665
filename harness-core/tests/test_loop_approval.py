"""Approval in the loop: the policy decides each call with effects outside the log, the
decision lands on the log before the call runs, and "allow for this session" is folded from it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from harness_core.log import INTERRUPTED_TEXT, Event, SessionLog, SessionStore
from harness_core.loop import (
    Agent,
    Answer,
    Approval,
    ApprovalRequest,
    CannotAsk,
    Policy,
    TurnOutcome,
)
from harness_core.loop._approval import DENIED_BY_POLICY, DENIED_BY_USER, NOBODY_TO_ASK
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost


class Person:
    """An asker that answers from a list and remembers what it was asked."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Answer:
        self.asked.append(request)
        await anyio.sleep(0.01)  # a person takes a while: other tasks run meanwhile
        return self.answers.pop(0)


def touch(path: Path) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": f"touch {path}"}}


def agent_for(
    store: SessionStore,
    host: PluginHost,
    steps: list[dict[str, Any]],
    policy: Policy,
    person: Person | None = None,
    log: SessionLog | None = None,
) -> Agent:
    log = log or store.create(system_prompt=None, cwd=os.getcwd())
    return Agent(
        log, ScriptedModel(steps), host.tools, store=store, approval=Approval(policy, person)
    )


def approvals(events: list[Event]) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if e.type == "tool/approval"]


def results(events: list[Event]) -> list[str]:
    return [e.data["text"] for e in events if e.type == "tool/result"]


async def test_deny_refuses_the_call_with_the_exact_text_and_runs_nothing(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """--approval deny: the command never runs and the model reads why."""
    marker = tmp_path / "ran"
    agent = agent_for(store, host, [{"tool_calls": [touch(marker)]}, {"text": "ok"}], "deny")
    await agent.run_turn("Go.")
    assert not marker.exists()
    assert results(agent.session.events) == [f"Error: bash was denied: {DENIED_BY_POLICY}"]
    assert approvals(agent.session.events) == [
        {"call_id": "call_1_1", "decision": "deny", "by": "policy", "scope": "once"}
    ]


async def test_ask_shows_the_person_the_call_and_records_their_answer(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """ask: the person sees the call's line and the whole command; a yes runs it once."""
    marker = tmp_path / "ran"
    command = f"touch {marker} \\\n  && echo made"
    person = Person("once")
    steps = [{"tool_calls": [{"name": "bash", "arguments": {"command": command}}]}, {"text": "ok"}]
    agent = agent_for(store, host, steps, "ask", person)
    await agent.run_turn("Go.")
    assert marker.exists()
    [request] = person.asked
    assert (request.tool, request.call_id, request.detail) == ("bash", "call_1_1", command)
    assert request.summary == f"$ touch {marker} \\"
    assert request.session_id == agent.session_id
    events = agent.session.events
    kinds = [e.type for e in events]
    assert kinds.index("tool/approval") < kinds.index("tool/result")
    assert approvals(events) == [
        {"call_id": "call_1_1", "decision": "allow", "by": "user", "scope": "once"}
    ]


async def test_a_person_who_says_no_refuses_the_call(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """ask, answered deny: nothing runs and the model reads the user's refusal."""
    marker = tmp_path / "ran"
    agent = agent_for(
        store, host, [{"tool_calls": [touch(marker)]}, {"text": "ok"}], "ask", Person("deny")
    )
    await agent.run_turn("Go.")
    assert not marker.exists()
    assert results(agent.session.events) == [f"Error: bash was denied: {DENIED_BY_USER}"]
    assert approvals(agent.session.events)[0]["by"] == "user"


async def test_ask_with_nobody_to_ask_refuses_and_says_how_to_allow(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """ask without a host that can ask (no terminal): refused by the policy, never run."""
    marker = tmp_path / "ran"
    agent = agent_for(store, host, [{"tool_calls": [touch(marker)]}, {"text": "ok"}], "ask")
    await agent.run_turn("Go.")
    assert not marker.exists()
    assert results(agent.session.events) == [f"Error: bash was denied: {NOBODY_TO_ASK}"]


async def test_a_host_that_cannot_ask_refuses_by_policy_with_its_reason(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """An asker that raises CannotAsk: the call is refused by the policy, not by a person,
    and the model reads the host's reason."""

    async def unreachable(request: ApprovalRequest) -> Answer:
        raise CannotAsk("the client went away")

    log = store.create(system_prompt=None, cwd=os.getcwd())
    steps = [{"tool_calls": [touch(tmp_path / "x")]}, {"text": "ok"}]
    agent = Agent(log, ScriptedModel(steps), host.tools, approval=Approval("ask", unreachable))
    await agent.run_turn("Go.")
    assert not (tmp_path / "x").exists()
    assert results(log.events) == ["Error: bash was denied: the client went away"]
    assert [(a["decision"], a["by"]) for a in approvals(log.events)] == [("deny", "policy")]


async def test_allow_for_the_session_survives_a_resume(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """ "Allow for this session" is folded from the log: a new process on the session asks
    nothing more for that tool, and records each call as the user's session grant."""
    first, second = tmp_path / "one", tmp_path / "two"
    person = Person("session")
    agent = agent_for(store, host, [{"tool_calls": [touch(first)]}, {"text": "ok"}], "ask", person)
    await agent.run_turn("One.")
    session_id = agent.session_id
    agent.session.close()
    resumed_person = Person()  # answers nothing: being asked would fail the test
    with store.open(session_id) as log:
        resumed = agent_for(
            store, host, [{"tool_calls": [touch(second)]}, {"text": "ok"}], "ask",
            resumed_person, log=log,
        )  # fmt: skip
        await resumed.run_turn("Two.")
        assert second.exists() and resumed_person.asked == []
        assert [a["scope"] for a in approvals(log.events)] == ["session", "session"]
        assert [a["by"] for a in approvals(log.events)] == ["user", "user"]


async def test_allow_for_the_session_covers_the_other_calls_of_the_same_response(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """Two bash calls in one response run side by side, but their questions come one at a
    time: "allow for this session" on the first one answers the second."""
    first, second = tmp_path / "one", tmp_path / "two"
    person = Person("session")  # a second question would find no answer and fail the test
    steps = [{"tool_calls": [touch(first), touch(second)]}, {"text": "ok"}]
    agent = agent_for(store, host, steps, "ask", person)
    outcome = await agent.run_turn("Both.")
    assert outcome.status == "completed"
    assert len(person.asked) == 1 and first.exists() and second.exists()
    assert [(a["by"], a["scope"]) for a in approvals(agent.session.events)] == [
        ("user", "session"),
        ("user", "session"),
    ]


async def test_a_session_grant_covers_only_its_tool(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """Allowing bash for the session does not allow the subagent tool."""
    person = Person("session", "deny")
    steps = [
        {"tool_calls": [touch(tmp_path / "a")]},
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "t"}}]},
        {"text": "ok"},
    ]
    agent = agent_for(store, host, steps, "ask", person)
    await agent.run_turn("Go.")
    assert [r.tool for r in person.asked] == ["bash", "subagent"]
    assert results(agent.session.events)[1] == f"Error: subagent was denied: {DENIED_BY_USER}"


async def test_log_only_and_invalid_calls_are_never_asked_about(
    store: SessionStore, host: PluginHost
) -> None:
    """todo_write changes only the log and a call with bad arguments cannot run: no question,
    no approval event."""
    person = Person()
    steps = [
        {"tool_calls": [{"name": "todo_write", "arguments": {"todos": []}}]},
        {"tool_calls": [{"name": "bash", "arguments": "{not json"}]},
        {"text": "ok"},
    ]
    agent = agent_for(store, host, steps, "ask", person)
    await agent.run_turn("Go.")
    assert person.asked == []
    assert approvals(agent.session.events) == []
    assert results(agent.session.events)[1].startswith("Error: the arguments for bash")


async def test_cancel_while_a_question_is_pending_ends_the_turn_cleanly(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """A cancel during the question: the call is interrupted, the turn cancelled, no decision
    is recorded and the command never runs."""
    marker = tmp_path / "ran"
    asked = anyio.Event()

    async def never_answers(request: ApprovalRequest) -> Answer:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    log = store.create(system_prompt=None, cwd=os.getcwd())
    agent = Agent(
        log,
        ScriptedModel([{"tool_calls": [touch(marker)]}, {"text": "never"}]),
        host.tools,
        approval=Approval("ask", never_answers),
    )
    outcomes: list[TurnOutcome] = []
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: _run(agent, outcomes))
        with anyio.fail_after(10):
            await asked.wait()
        agent.cancel()
    assert outcomes[0].status == "cancelled"
    assert not marker.exists()
    assert approvals(log.events) == []
    assert results(log.events) == [INTERRUPTED_TEXT]
    assert log.events[-1].data["status"] == "cancelled"


async def _run(agent: Agent, outcomes: list[TurnOutcome]) -> None:
    outcomes.append(await agent.run_turn("Go."))


async def test_a_subagent_inherits_the_policy_and_the_session_grants(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """A child agent asks the same person under the same policy, and bash allowed for the
    parent's session runs in the child without asking."""
    marker = tmp_path / "child-ran"
    person = Person("session", "once")
    steps = [
        {"tool_calls": [touch(tmp_path / "parent-ran")]},
        {"tool_calls": [{"name": "subagent", "arguments": {"task": "touch it"}}]},
        {"tool_calls": [touch(marker)]},  # the child's first step
        {"text": "child done"},
        {"text": "parent done"},
    ]
    agent = agent_for(store, host, steps, "ask", person)
    await agent.run_turn("Go.")
    assert marker.exists()
    assert [r.tool for r in person.asked] == ["bash", "subagent"]
