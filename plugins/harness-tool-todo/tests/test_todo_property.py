"""Property: any arguments either append exactly one correct event or a stable error, never raise.

The oracle below restates the tool's contract (see the README) independently of the plugin's
code: the registry's schema check, then the empty, duplicate and in-progress rules; content is
kept exactly as written.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson
import pytest
from harness_core.loop import Agent
from harness_core.tools import ExecContext, ToolRegistry
from harness_tool_todo import TodoWriteTool
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

STATUSES = ("pending", "in_progress", "completed")
INVALID_ARGS = "Error: invalid arguments for todo_write: "
NOT_JSON = "Error: the arguments for todo_write are not valid JSON"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
contents = st.sampled_from(
    ["Read the code", "Fix the bug", " Fix  the bug ", "Fix the\nbug", "", "  ", "\t\n", "修复"]
) | st.text(max_size=16)
statuses = (
    st.sampled_from(STATUSES) | st.sampled_from(["done", "IN_PROGRESS", ""]) | st.text(max_size=8)
)
item_keys = st.sampled_from(["content", "status", "priority", "id"]) | st.text(max_size=6)
items = st.one_of(
    st.fixed_dictionaries({"content": contents, "status": statuses}),
    st.fixed_dictionaries({"content": contents, "status": st.sampled_from(STATUSES)}),
    st.dictionaries(item_keys, contents | statuses | json_values, max_size=4),
    json_values,
)
near_valid = st.one_of(
    st.fixed_dictionaries({"todos": st.lists(items, max_size=6)}),
    st.dictionaries(st.sampled_from(["todos", "merge"]), st.lists(items, max_size=4), max_size=2),
)
raw_strings = st.one_of(
    st.text(max_size=30),
    near_valid.map(json.dumps).flatmap(
        lambda s: st.integers(0, len(s)).map(lambda cut: s[:cut])  # truncated JSON
    ),
)


def expected(raw: str, allow_parallel: bool) -> tuple[str, Any]:
    """("ok", the todos as written) or ("error", exact text) or ("prefix", error text prefix)."""
    try:
        value = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        return "prefix", NOT_JSON
    if not isinstance(value, dict) or set(value) != {"todos"}:
        return "prefix", INVALID_ARGS
    todos = value["todos"]
    if not isinstance(todos, list):
        return "prefix", INVALID_ARGS
    for item in todos:
        if not isinstance(item, dict) or set(item) != {"content", "status"}:
            return "prefix", INVALID_ARGS
        if not isinstance(item["content"], str) or item["status"] not in STATUSES:
            return "prefix", INVALID_ARGS
    written = [{"content": t["content"], "status": t["status"]} for t in todos]
    seen: set[str] = set()
    for item in written:
        if not item["content"].strip():
            return "error", "Error: invalid todo: `content` must be a non-empty string"
        if item["content"] in seen:
            return "error", f'Error: invalid todos: duplicate content "{item["content"]}"'
        seen.add(item["content"])
    active = sum(t["status"] == "in_progress" for t in written)
    if active > 1 and not allow_parallel:
        return "error", f"Error: invalid todos: at most one task may be in_progress, got {active}"
    return "ok", written


def check(
    runner: asyncio.Runner, registry: ToolRegistry, agent: Agent, raw: str, allow_parallel: bool
) -> str:
    """Run one call through `registry.execute` and assert the contract; the outcome kind."""
    log = agent.session
    count, size = len(log.events), log.path.stat().st_size
    context = ExecContext(agent=agent, call_id="call_p")
    result = runner.run(registry.execute("todo_write", raw, context))
    kind, want = expected(raw, allow_parallel)
    new = log.events[count:]
    if kind == "ok":
        counts = {
            "pending": sum(t["status"] == "pending" for t in want),
            "inProgress": sum(t["status"] == "in_progress" for t in want),
            "completed": sum(t["status"] == "completed" for t in want),
        }
        assert result.text == (
            f"Updated todo list: {counts['pending']} pending, {counts['inProgress']} in progress, "
            f"{counts['completed']} completed."
        )
        assert result.is_error is False
        assert result.data == {"todos": want, "counts": counts}
        assert [(e.type, e.data, e.turn) for e in new] == [
            ("todo/write", {"todos": want}, agent.turn)
        ]
        return kind
    assert result.is_error is True
    if kind == "error":
        assert result.text == want
    else:
        assert result.text.startswith(want), result.text
    assert new == []
    assert log.path.stat().st_size == size
    return kind


@pytest.mark.parametrize("allow_parallel", [False, True])
def test_any_arguments_append_one_event_or_a_stable_error(
    agent: Agent, allow_parallel: bool
) -> None:
    """Random JSON and near-valid lists: one correct event with the exact text, or an error."""
    registry = ToolRegistry()
    registry.register(TodoWriteTool(allow_parallel_in_progress=allow_parallel), provider="todo")
    kinds: set[str] = set()

    @settings(
        max_examples=300,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(value=st.one_of(near_valid, json_values))
    # Each kind of outcome at least once, whatever the draw: a blank and a repeated content.
    @example(value={"todos": [{"content": " ", "status": "pending"}]})
    @example(value={"todos": [{"content": "a", "status": "pending"}] * 2})
    def json_arguments(value: Any) -> None:
        raw = json.dumps(value, ensure_ascii=False)
        kinds.add(check(runner, registry, agent, raw, allow_parallel))

    @settings(max_examples=150, deadline=None, database=None)
    @given(raw=raw_strings)
    def raw_arguments(raw: str) -> None:
        kinds.add(check(runner, registry, agent, raw, allow_parallel))

    with asyncio.Runner() as runner:
        json_arguments()
        raw_arguments()
    # The generators reach every branch, so the property is not vacuously true.
    assert kinds == {"ok", "error", "prefix"}
