"""The plugin never nags: it adds no message to a turn, whether the list is empty, unfinished
or finished, and never asks the model again once it answered.

A reminder on an empty list and a closing "verify all complete" step are what made another
harness's todo tool cost more turns without better results (examples/plan-bench/README.md);
the description alone, sent with the tools, is all the model is told.
"""

from __future__ import annotations

from typing import Any

from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost

SYSTEM = "You test."


def write(*items: tuple[str, str]) -> dict[str, Any]:
    todos = [{"content": content, "status": status} for content, status in items]
    return {"tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]}


async def turns(
    store: SessionStore, host: PluginHost, steps: list[dict[str, Any]], prompts: list[str]
) -> list[list[dict[str, Any]]]:
    """Run `prompts` as turns on one session; the requests the model received."""
    model = ScriptedModel(steps)
    log = store.create(system_prompt=SYSTEM)
    agent = Agent(log, model, host.tools)
    for prompt in prompts:
        outcome = await agent.run_turn(prompt)
        assert outcome.status == "completed", outcome.error
    log.close()
    model.check_consumed()
    return [list(request) for request in model.requests]


def authored(request: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """Each message as (role, what it says): the text of system and user messages."""
    return [(m["role"], m.get("content")) for m in request if m["role"] in ("system", "user")]


async def test_an_empty_list_adds_nothing_to_any_turn(
    store: SessionStore, todo_host: PluginHost
) -> None:
    """A model that never plans reads the system prompt and the prompts, nothing else."""
    requests = await turns(store, todo_host, [{"text": "One."}, {"text": "Two."}], ["a", "b"])
    assert authored(requests[0]) == [("system", SYSTEM), ("user", "a")]
    assert authored(requests[1]) == [("system", SYSTEM), ("user", "a"), ("user", "b")]


async def test_an_unfinished_list_is_not_pressed_on_the_model(
    store: SessionStore, todo_host: PluginHost
) -> None:
    """The turn ends on the model's answer even with tasks open, and the next turn's request
    holds no reminder of them: only the call and its one-line result."""
    steps = [
        write(("Read it", "in_progress"), ("Fix it", "pending")),
        {"text": "Stopping here."},
        {"text": "Next."},
    ]
    requests = await turns(store, todo_host, steps, ["go", "more"])
    assert len(requests) == 3
    assert authored(requests[2]) == [("system", SYSTEM), ("user", "go"), ("user", "more")]
    [result] = [m for m in requests[2] if m["role"] == "tool"]
    assert result["content"] == "Updated todo list: 1 pending, 1 in progress, 0 completed."


async def test_a_finished_list_ends_the_turn_without_a_closing_check(
    store: SessionStore, todo_host: PluginHost
) -> None:
    """Marking the last task completed and answering is two requests: nothing asks the model
    to verify its list before it ends."""
    steps = [write(("Fix it", "completed")), {"text": "Done."}]
    requests = await turns(store, todo_host, steps, ["fix"])
    assert len(requests) == 2
    assert authored(requests[1]) == [("system", SYSTEM), ("user", "fix")]
