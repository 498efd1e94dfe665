"""Live end-to-end: a real provider plans with `todo_write` through the real loop.

Two cases: one that tells the model to use the tool, and one that runs `harness run` with the
default system prompt on a natural multi-step task that never names it, so only the shipped
description can make the model plan.

Opt-in only; it spends tokens. Runs once per provider whose key and model are set:

    HARNESS_LIVE_TESTS=1 OPENAI_API_KEY=... OPENAI_MODEL=... uv run pytest -m live tests/test_live.py
    HARNESS_LIVE_TESTS=1 DEEPSEEK_API_KEY=... DEEPSEEK_MODEL=... uv run pytest -m live tests/test_live.py

`OPENAI_BASE_URL` / `DEEPSEEK_BASE_URL` point a preset at another compatible endpoint.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from harness_core import builtins
from harness_core.log import SessionStore
from harness_core.loop import DEFAULT_SYSTEM_PROMPT, Agent
from harness_core.models._presets import PRESETS, build_model
from harness_core.models.openai_compat import OpenAICompatModel
from harness_core.plugins import PluginHost
from harness_tool_todo._render import MARKS, shown
from test_cli_support import read_events, run_cli, session_ids

pytestmark = pytest.mark.live

SYSTEM_PROMPT = (
    "You are a careful agent. Track multi-step work with the todo_write tool: write the whole "
    "plan first, then write the list again each time a step's status changes."
)
PROMPT = (
    "Plan and carry out this small task: choose names for three imaginary helper functions "
    "(one for parsing, one for validating, one for printing). First call todo_write with the "
    "three steps, the first one in_progress and the others pending. Then, one step at a time, "
    "decide the name and call todo_write again with the updated statuses, until every step is "
    "completed. Finish with one sentence that lists the three names. No other tools exist "
    "that you need."
)


# A task of several steps, in a user's words: it never mentions planning or the tool.
NATURAL_TASK = (
    "In this directory, create a Python module temperature.py with two functions, c_to_f and "
    "f_to_c, and a test_temperature.py that tests both with unittest, including a round trip. "
    "Run the tests with `python3 -m unittest`, fix anything that fails, and then tell me in one "
    "sentence what you built."
)


@pytest.fixture(params=sorted(PRESETS))
def live_spec(request: pytest.FixtureRequest) -> str:
    """`provider:MODEL` for a provider whose key and model are set, or skip."""
    provider: str = request.param
    preset = PRESETS[provider]
    if os.environ.get("HARNESS_LIVE_TESTS") != "1":
        pytest.skip("live tests are opt-in: set HARNESS_LIVE_TESTS=1 (see docs/models.md)")
    model = os.environ.get(preset.model_env)
    if not os.environ.get(preset.key_env) or not model:
        pytest.skip(f"{provider}: set {preset.key_env} and {preset.model_env} to run")
    return f"{provider}:{model}"


async def test_live_todo_write_lands_and_is_replaced(live_spec: str, harness_home: Path) -> None:
    """A real model writes a plan with todo_write, then a later write replaces it."""
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    store = SessionStore(harness_home, host.event_types)
    log = store.create(system_prompt=SYSTEM_PROMPT, cwd=str(harness_home))
    model = build_model(live_spec, {}, os.environ)
    assert isinstance(model, OpenAICompatModel)
    async with model:
        agent = Agent(log, model, host.tools, max_steps=12, store=store)
        with anyio.fail_after(300):
            outcome = await agent.run_turn(PROMPT)
    writes = [event for event in log.events if event.type == "todo/write"]
    summary = f"{outcome}; events: {[e.type for e in log.events]}"
    assert outcome.status == "completed", summary
    assert len(writes) >= 2, summary
    first, last = writes[0].data["todos"], writes[-1].data["todos"]
    assert first, summary
    assert last != first, "the later write should carry changed statuses"
    assert any(item["status"] == "completed" for item in last), summary
    results = [e.data for e in log.events if e.type == "tool/result"]
    assert not any(r["is_error"] for r in results if r["tool_name"] == "todo_write"), results
    log.close()


def test_live_default_prompt_plans_a_natural_task(live_spec: str, tmp_path: Path) -> None:
    """With the default system prompt and a task that never names the tool, the model writes a
    valid plan with todo_write, and `harness run` shows it in the plan strip."""
    provider = live_spec.split(":", 1)[0]
    preset = PRESETS[provider]
    passed = {
        name: os.environ[name]
        for name in (preset.key_env, f"{provider.upper()}_BASE_URL")
        if name in os.environ
    }
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    # run_cli keeps a developer's keys and HARNESS_SYSTEM_PROMPT away; pass this provider's back.
    env = {"HARNESS_HOME": str(home), **passed}
    result = run_cli("run", "--model", live_spec, NATURAL_TASK, env=env, cwd=project, timeout=600)
    assert result.returncode == 0, result.stderr
    (session_id,) = session_ids(home)
    events = read_events(home, session_id)
    assert events[0]["data"]["system_prompt"] == DEFAULT_SYSTEM_PROMPT
    writes = [e["data"]["todos"] for e in events if e["type"] == "todo/write"]
    summary = json.dumps([e["type"] for e in events])
    assert writes, f"the model never planned: {summary}"
    # A todo/write lands only for a list the tool accepted; this one is a real plan.
    plan = writes[0]
    assert len(plan) >= 2, plan
    assert all(item["content"].strip() for item in plan), plan
    assert sum(item["status"] == "in_progress" for item in plan) <= 1, plan
    # The plan strip printed that list: its header, and a row for one of its tasks.
    done = sum(item["status"] == "completed" for item in plan)
    lines = result.stdout.splitlines()
    assert f"Plan · {done}/{len(plan)} done" in lines, result.stdout
    rows = {f"  {MARKS[item['status']]} {shown(item['content'])}" for item in plan}
    assert rows & set(lines), result.stdout
