"""The subagent tool: a child session per call, its own todos, a depth limit, cancellation."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
from harness_core.log import INTERRUPTED_TEXT, SessionLog, SessionStore
from harness_core.log._invariants import InvariantChecker
from harness_core.loop import Agent, TurnOutcome
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext
from harness_core.tools.subagent import SubagentArgs, SubagentTool
from process_helpers import has_pid, poll, running


def subagent(task: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "subagent", "arguments": {"task": task}}]}


def todo(*items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": content, "status": status} for content, status in items]
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}


def parent_agent(
    store: SessionStore, host: PluginHost, steps: list[dict[str, Any]]
) -> tuple[Agent, ScriptedModel]:
    model = ScriptedModel(steps)
    log = store.create(system_prompt="Be brief.", cwd=os.getcwd())
    return Agent(log, model, host.tools, store=store), model


def child_of(store: SessionStore, parent: SessionLog) -> SessionLog:
    """The one session whose session/start names `parent`, opened for reading."""
    children = [s for s in store.list() if s.parent_session == parent.session_id]
    assert len(children) == 1
    return store.open(children[0].id, writable=False)


def assert_valid(log: SessionLog) -> None:
    """Replay every event through the dev invariants; the last turn must be closed."""
    checker = InvariantChecker()
    for event in log.events:
        checker.check(event)
    assert checker.open_turn is None
    assert log.projection.problems == []


async def test_the_child_has_its_own_session_naming_parent_and_call(
    store: SessionStore, host: PluginHost
) -> None:
    """The child's session/start names the parent session and call; its answer comes back."""
    agent, model = parent_agent(
        store, host, [subagent("Count the files."), {"text": "There are 3."}, {"text": "3 files."}]
    )
    outcome = await agent.run_turn("How many files?")
    assert (outcome.status, outcome.text) == ("completed", "3 files.")
    child = child_of(store, agent.session)
    assert child.events[0].data["parent_session"] == agent.session.session_id
    assert child.events[0].data["parent_call_id"] == "call_1_1"
    assert child.events[0].data["cwd"] == os.getcwd()
    assert child.events[0].data["system_prompt"] == "Be brief."
    result = next(e for e in agent.session.events if e.type == "tool/result")
    assert result.data["text"] == "There are 3."
    assert result.data["data"] == {"session": child.session_id, "status": "completed"}
    # The child saw only its task, never the parent's conversation.
    assert model.requests[1] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Count the files."},
    ]
    assert_valid(child)
    assert_valid(agent.session)


async def test_the_childs_todos_stay_in_the_childs_log(
    store: SessionStore, host: PluginHost
) -> None:
    """todo_write inside the subagent lands in its session; the parent's has none."""
    steps = [
        subagent("Plan and do it."),
        todo(("Step one", "in_progress"), ("Step two", "pending")),
        {"text": "Child done."},
        {"text": "Parent done."},
    ]
    agent, _ = parent_agent(store, host, steps)
    await agent.run_turn("Delegate.")
    child = child_of(store, agent.session)
    writes = [e.data for e in child.events if e.type == "todo/write"]
    assert writes == [
        {
            "todos": [
                {"content": "Step one", "status": "in_progress"},
                {"content": "Step two", "status": "pending"},
            ]
        }
    ]
    assert [e for e in agent.session.events if e.type == "todo/write"] == []


async def test_nesting_stops_at_the_depth_limit(store: SessionStore, host: PluginHost) -> None:
    """With max_depth 1, the child's own subagent call gets the limit error text."""
    host.tools.get("subagent").max_depth = 1  # type: ignore[union-attr]
    steps = [
        subagent("Go deeper."),
        subagent("Deeper still."),
        {"text": "Could not nest."},
        {"text": "Done."},
    ]
    agent, model = parent_agent(store, host, steps)
    assert (await agent.run_turn("Nest.")).status == "completed"
    assert model.requests[2][-1] == {
        "role": "tool",
        "tool_call_id": "call_2_1",
        "content": "Error: subagents may nest at most 1 deep; do this task yourself",
        "is_error": True,
    }
    assert len(store.list()) == 2  # the parent and one child, no grandchild


async def test_a_child_that_fails_is_an_error_result(store: SessionStore, host: PluginHost) -> None:
    """A child turn that ends in error comes back as an error naming its session."""
    agent, _ = parent_agent(store, host, [subagent("Fail.")])
    outcome = await agent.run_turn("Try.")
    assert outcome.status == "error"  # the parent then runs past the script too
    result = next(e for e in agent.session.events if e.type == "tool/result").data
    child = child_of(store, agent.session)
    assert result["is_error"] is True
    assert result["text"] == (
        f"Error: the subagent (session {child.session_id}) did not finish: scripted has 1 "
        "steps and the loop asked for step 2: end the script with a text-only step"
    )
    assert_valid(child)


async def test_cancelling_the_parent_cancels_the_child_and_both_logs_stay_valid(
    store: SessionStore, host: PluginHost, tmp_path: Path
) -> None:
    """Cancel while the child's bash runs: both turns end cancelled, both calls answered."""
    pid_file = tmp_path / "child.pid"
    bash = {"name": "bash", "arguments": {"command": f"sleep 60 & echo $! > {pid_file}; wait"}}
    agent, _ = parent_agent(store, host, [subagent("Wait."), {"tool_calls": [bash]}])
    outcomes: list[TurnOutcome] = []

    async def run() -> None:
        outcomes.append(await agent.run_turn("Wait for it."))

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        await poll(lambda: has_pid(pid_file))
        agent.cancel()
    assert outcomes == [TurnOutcome("cancelled", None, "cancelled", 1)]
    child = child_of(store, agent.session)
    parent = store.open(agent.session.session_id, writable=False)
    for log in (parent, child):
        assert_valid(log)
        assert log.events[-1].data == {"status": "cancelled", "error": "cancelled"}
        answers = [e.data["text"] for e in log.events if e.type == "tool/result"]
        assert answers == [INTERRUPTED_TEXT]
    pid = int(pid_file.read_text())
    await poll(lambda: not running(pid))


async def test_without_a_store_the_host_bug_is_reported(
    store: SessionStore, host: PluginHost
) -> None:
    """An Agent built without store=... gets an error result that says so."""
    model = ScriptedModel([subagent("x"), {"text": "ok"}])
    log = store.create(cwd=os.getcwd())
    await Agent(log, model, host.tools).run_turn("Go.")
    assert model.requests[1][-1]["content"] == (
        "Error: subagent failed: RuntimeError: a child agent needs the session store: "
        "build the Agent with store=store"
    )


async def test_outside_an_agent_the_call_is_refused() -> None:
    """A call with no owning agent is an error result."""
    result = await SubagentTool().execute(SubagentArgs(task="x"), ExecContext())
    assert (result.text, result.is_error) == (
        "Error: subagent requires an owning agent session",
        True,
    )
