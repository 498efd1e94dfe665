"""A whole turn against fakellm (pinned in the dev group), a Messages API mock nobody here
wrote: its streamed tool_use (arguments split over input_json_delta events) runs todo_write,
and its streamed text ends the turn. The plugin's own server covers what fakellm cannot
stream (thinking, cache usage, error events)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness_core import builtins
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.plugins import PluginHost
from harness_model_anthropic._model import AnthropicModel, RetryPolicy

RULES = """\
rules:
  - name: plan
    when:
      turn: 1
    respond:
      tool_calls:
        - name: todo_write
          arguments: {todos: [{content: "Read the code", status: in_progress}]}
  - name: answer
    when:
      turn: 2
    respond:
      content: "Planned and done."
"""


@pytest.fixture
def fakellm(tmp_path: Path) -> Iterator[str]:
    command = shutil.which("fakellm")
    assert command, "fakellm is in the dev group: uv sync installs it"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "fakellm.yaml"
    config.write_text(RULES)
    process = subprocess.Popen(
        [command, "serve", "--port", str(port), "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{url}/_fakellm/stats", timeout=1)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_turn_against_fakellm_runs_the_streamed_tool_use(
    fakellm: str, harness_home: Path
) -> None:
    host = PluginHost()
    builtins.add_to(host)
    host.load_entry_points()
    store = SessionStore(harness_home, host.event_types)
    log = store.create(system_prompt="You plan.", cwd=str(harness_home))
    model = AnthropicModel(
        "claude-test", api_key="sk-ant-test", base_url=fakellm, retry=RetryPolicy(attempts=1)
    )
    deltas: list[str] = []
    async with model:
        agent = Agent(log, model, host.tools, store=store, on_delta=lambda _, c: deltas.append(c))
        outcome = await agent.run_turn("Plan the work.")
    assert (outcome.status, outcome.text) == ("completed", "Planned and done.")
    assert "".join(deltas) == "Planned and done." and len(deltas) > 1  # streamed in pieces
    types = [event.type for event in log.events]
    assert types.count("todo/write") == 1
    plan = next(e for e in log.events if e.type == "todo/write").data
    assert plan["todos"] == [{"content": "Read the code", "status": "in_progress"}]
    result = next(e for e in log.events if e.type == "tool/result").data
    assert result["is_error"] is False
    log.close()
