"""Live end-to-end on Anthropic's Messages API: the real loop plans with `todo_write`.

Opt-in only; it spends tokens:

    HARNESS_LIVE_TESTS=1 ANTHROPIC_API_KEY=... ANTHROPIC_MODEL=... \\
        uv run pytest -m live tests/test_anthropic_live.py

Without the opt-in, the key or the model name it skips with a line saying which to set.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_cli_support import read_events, run_cli, session_ids

pytestmark = pytest.mark.live

PROMPT = (
    "Plan and carry out this small task: choose names for three imaginary helper functions "
    "(one for parsing, one for validating, one for printing). First call todo_write with the "
    "three steps, the first one in_progress and the others pending. Then, one step at a time, "
    "decide the name and call todo_write again with the updated statuses, until every step is "
    "completed. Finish with one sentence that lists the three names."
)


@pytest.fixture
def live_model() -> str:
    """`anthropic:MODEL` when the opt-in, the key and the model are set; else skip."""
    if os.environ.get("HARNESS_LIVE_TESTS") != "1":
        pytest.skip("live tests are opt-in: set HARNESS_LIVE_TESTS=1 (see docs/models.md)")
    model = os.environ.get("ANTHROPIC_MODEL")
    if not os.environ.get("ANTHROPIC_API_KEY") or not model:
        pytest.skip("anthropic: set ANTHROPIC_API_KEY and ANTHROPIC_MODEL to run")
    return f"anthropic:{model}"


def test_live_anthropic_plans_with_todo_write_and_finishes(
    live_model: str, harness_home: Path, tmp_path: Path
) -> None:
    """A whole `harness run`: the plan lands as todo/write events and ends completed, the
    usage is on each message/assistant, and the key is nowhere in the session."""
    result = run_cli("run", "--model", live_model, PROMPT, cwd=tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    events = read_events(harness_home, session)
    writes = [e for e in events if e["type"] == "todo/write"]
    assert len(writes) >= 2
    assert all(t["status"] == "completed" for t in writes[-1]["data"]["todos"])
    assert all(e["data"].get("usage") for e in events if e["type"] == "message/assistant")
    key = os.environ["ANTHROPIC_API_KEY"]
    assert key not in json.dumps(events)
