"""The todo_write tool through the real `ToolRegistry.execute` path, with a real agent."""

from __future__ import annotations

from typing import Any

import pytest
from harness_core.loop import Agent
from harness_core.plugins import PluginHost
from harness_core.tools import ExecContext, ToolRegistry, ToolResult
from harness_tool_todo import (
    DESCRIPTION,
    TodoItem,
    TodoWriteArgs,
    TodoWritePayload,
    TodoWriteTool,
    render_checklist,
    render_markdown,
)
from harness_tool_todo._render import plan_line
from harness_tool_todo.projections import Todo, current_todos
from pydantic import ValidationError
from todo_helpers import Call, NewAgent, raw, todo_events

INVALID_ARGS = "Error: invalid arguments for todo_write: "


def item(content: str, status: str = "pending") -> dict[str, str]:
    return {"content": content, "status": status}


def tool_of(host: PluginHost) -> TodoWriteTool:
    tool = host.tools.get("todo_write")
    assert isinstance(tool, TodoWriteTool)
    return tool


async def execute(host: PluginHost, arguments: Any, agent: Agent | None) -> ToolResult:
    context = ExecContext(agent=agent, call_id="call_x")
    return await host.tools.execute("todo_write", raw(arguments), context)


# -- the schema and description the model reads -------------------------------------------


EXPECTED_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["todos"],
    "properties": {
        "todos": {
            "type": "array",
            "description": "The whole list; it replaces the previous one.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["content", "status"],
                "properties": {
                    "content": {
                        "type": "string",
                        "description": "The task, in a few imperative words.",
                    },
                    "status": {
                        "type": "string",
                        "enum": ["pending", "in_progress", "completed"],
                        "description": "pending, in_progress or completed.",
                    },
                },
            },
        }
    },
}


def test_schema_is_strict_and_exact(todo_host: PluginHost) -> None:
    """Every object closed, every property required, and not one word more than intended."""
    (entry,) = [s for s in todo_host.tools.schemas() if s["function"]["name"] == "todo_write"]
    function = entry["function"]
    assert entry["type"] == "function"
    assert function["strict"] is True
    assert function["description"] == DESCRIPTION
    # Exact equality: a docstring or title leaking into the schema costs tokens every request.
    assert function["parameters"] == EXPECTED_PARAMETERS


def test_description_is_short_and_behavioural() -> None:
    """The description stays under 1,500 characters and teaches the discipline of the list."""
    assert len(DESCRIPTION) < 1500
    text = DESCRIPTION.lower()
    for rule in (
        "three or more steps",
        "whole list",
        "in the order you will do them",
        "exactly one task is in_progress",
        "in_progress before you start",
        "one task at a time",
        "completed as soon as it is done",
        "in the same response as the work",
        "do not repeat it",
    ):
        assert rule in text, rule


def test_tool_is_exclusive(todo_host: PluginHost) -> None:
    """todo_write runs alone, in call order, so the later of two writes in a message wins."""
    assert tool_of(todo_host).exclusive is True


# -- success -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("todos", "text"),
    [
        ([], "Updated todo list: 0 pending, 0 in progress, 0 completed."),
        ([item("a")], "Updated todo list: 1 pending, 0 in progress, 0 completed."),
        (
            [item("a", "completed"), item("b", "in_progress"), item("c"), item("d")],
            "Updated todo list: 2 pending, 1 in progress, 1 completed.",
        ),
        (
            [item("修复登录错误", "completed"), item("写测试", "completed")],
            "Updated todo list: 0 pending, 0 in progress, 2 completed.",
        ),
    ],
)
async def test_success_text_and_structured_result(
    todo_host: PluginHost, agent: Agent, todos: list[dict[str, str]], text: str
) -> None:
    """The model reads the exact success text; hosts get `{todos, counts}`."""
    result = await execute(todo_host, {"todos": todos}, agent)
    assert result.text == text
    assert result.is_error is False
    counts = {
        "pending": sum(t["status"] == "pending" for t in todos),
        "inProgress": sum(t["status"] == "in_progress" for t in todos),
        "completed": sum(t["status"] == "completed" for t in todos),
    }
    assert result.data == {"todos": todos, "counts": counts}
    assert todo_events(agent.session) == [{"todos": todos}]


async def test_whole_list_replace(todo_host: PluginHost, agent: Agent) -> None:
    """A write replaces the previous list entirely; nothing of it is merged in."""
    await execute(todo_host, {"todos": [item("a", "completed"), item("b", "in_progress")]}, agent)
    result = await execute(todo_host, {"todos": [item("c")]}, agent)
    assert result.text == "Updated todo list: 1 pending, 0 in progress, 0 completed."
    assert current_todos(agent.session.events) == (Todo("c", "pending"),)
    assert len(todo_events(agent.session)) == 2


VERBATIM = [
    "  Run\n the \t tests  ",
    "Line\u2028separated\u2029paragraph",
    "Tab\tseparated",
    "Ship it 🚀 👩🏽‍💻",
    "\\u0000 looks like an escape",
    "Contains a real \x00 NUL",
    "修复登录错误",
]


async def test_content_is_stored_as_written(todo_host: PluginHost, agent: Agent) -> None:
    """The event and the structured result hold each `content` exactly as the model sent it."""
    todos = [item(content) for content in VERBATIM]
    result = await execute(todo_host, {"todos": todos}, agent)
    assert result.data["todos"] == todos
    assert todo_events(agent.session) == [{"todos": todos}]


async def test_contents_differing_only_in_whitespace_are_two_tasks(
    todo_host: PluginHost, agent: Agent
) -> None:
    """Duplicates compare as written: `Run  tests` beside `Run tests` is accepted."""
    todos = [item("Run  tests"), item("Run tests"), item(" Run tests\n")]
    result = await execute(todo_host, {"todos": todos}, agent)
    assert result.text == "Updated todo list: 3 pending, 0 in progress, 0 completed."
    assert todo_events(agent.session) == [{"todos": todos}]


async def test_each_agent_owns_its_list(new_agent: NewAgent, todo_host: PluginHost) -> None:
    """Single owner: a write lands on the calling agent's session only (a subagent's own)."""
    parent, child = new_agent(), new_agent()
    await execute(todo_host, {"todos": [item("parent task")]}, parent)
    await execute(todo_host, {"todos": [item("child task", "in_progress")]}, child)
    assert todo_events(parent.session) == [{"todos": [item("parent task")]}]
    assert todo_events(child.session) == [{"todos": [item("child task", "in_progress")]}]


# -- rejections --------------------------------------------------------------------------

REJECTIONS: list[tuple[str, Any, str]] = [
    (
        "empty content",
        {"todos": [item("")]},
        "Error: invalid todo: `content` must be a non-empty string",
    ),
    (
        "whitespace content",
        {"todos": [item("ok"), item(" \n\t\u3000")]},
        "Error: invalid todo: `content` must be a non-empty string",
    ),
    (
        "duplicate content",
        {"todos": [item("Run tests"), item("Run tests", "completed")]},
        'Error: invalid todos: duplicate content "Run tests"',
    ),
    (
        "duplicate quoted as written",
        {"todos": [item(" Run\ttests "), item("a"), item(" Run\ttests ", "completed")]},
        'Error: invalid todos: duplicate content " Run\ttests "',
    ),
    (
        "two in progress",
        {"todos": [item("a", "in_progress"), item("b", "in_progress")]},
        "Error: invalid todos: at most one task may be in_progress, got 2",
    ),
    (
        "three in progress",
        {"todos": [item(c, "in_progress") for c in "abc"] + [item("d", "completed")]},
        "Error: invalid todos: at most one task may be in_progress, got 3",
    ),
]

SCHEMA_REJECTIONS: list[tuple[str, Any, str]] = [
    ("unknown item key", {"todos": [{**item("a"), "priority": "high"}]}, "todos.0.priority"),
    ("unknown top-level key", {"todos": [], "merge": True}, "merge"),
    ("unknown status", {"todos": [item("a", "done")]}, "todos.0.status"),
    ("missing status", {"todos": [{"content": "a"}]}, "todos.0.status"),
    ("non-string content", {"todos": [{"content": 7, "status": "pending"}]}, "todos.0.content"),
    ("todos not a list", {"todos": "a, b"}, "todos"),
    ("missing todos", {}, "todos"),
]


@pytest.mark.parametrize(("case", "arguments", "text"), REJECTIONS, ids=[r[0] for r in REJECTIONS])
async def test_validation_errors_are_exact(
    todo_host: PluginHost, agent: Agent, case: str, arguments: Any, text: str
) -> None:
    """Each rule beyond the schema answers with its exact contract text and appends nothing."""
    before = agent.session.path.read_bytes()
    count = len(agent.session.events)
    result = await execute(todo_host, arguments, agent)
    assert (result.text, result.is_error, result.data) == (text, True, None)
    assert len(agent.session.events) == count
    assert agent.session.path.read_bytes() == before


@pytest.mark.parametrize(
    ("case", "arguments", "where"), SCHEMA_REJECTIONS, ids=[r[0] for r in SCHEMA_REJECTIONS]
)
async def test_schema_violations_are_rejected(
    todo_host: PluginHost, agent: Agent, case: str, arguments: Any, where: str
) -> None:
    """Unknown keys and bad shapes get the registry's readable error and append nothing."""
    count = len(agent.session.events)
    result = await execute(todo_host, arguments, agent)
    assert result.is_error is True
    assert result.text.startswith(INVALID_ARGS)
    assert where in result.text
    assert len(agent.session.events) == count


async def test_malformed_json_is_rejected(todo_host: PluginHost, agent: Agent) -> None:
    """Arguments that are not JSON get the registry's error and append nothing."""
    count = len(agent.session.events)
    result = await execute(todo_host, '{"todos": [', agent)
    assert result.is_error is True
    assert result.text.startswith("Error: the arguments for todo_write are not valid JSON")
    assert len(agent.session.events) == count


async def test_first_problem_in_item_order_is_reported(todo_host: PluginHost, agent: Agent) -> None:
    """With several problems the earliest item's is reported, then the in-progress count."""
    both = {"todos": [item("a", "in_progress"), item("a", "in_progress"), item("")]}
    result = await execute(todo_host, both, agent)
    assert result.text == 'Error: invalid todos: duplicate content "a"'


async def test_non_agent_call_is_rejected(todo_host: PluginHost, agent: Agent) -> None:
    """A call without an owning agent has no session to write to and is refused."""
    count = len(agent.session.events)
    for arguments in ({"todos": [item("a")]}, {"todos": [item("a", "in_progress")] * 2}):
        result = await execute(todo_host, arguments, None)
        assert (result.text, result.is_error) == (
            "Error: todo_write requires an owning agent session",
            True,
        )
    assert len(agent.session.events) == count


async def test_call_outside_an_open_turn_fails_cleanly(todo_host: PluginHost, agent: Agent) -> None:
    """An agent with no open turn gets an error result, never an exception, and no event."""
    agent.session.append("turn/end", {"status": "completed"}, turn=agent.turn)
    agent.turn = None
    count = len(agent.session.events)
    result = await execute(todo_host, {"todos": [item("a")]}, agent)
    assert result.is_error is True
    assert result.text.startswith("Error: todo_write failed:")
    assert len(agent.session.events) == count


async def test_parallel_in_progress_when_allowed(agent: Agent) -> None:
    """`allow_parallel_in_progress=True` accepts several active tasks; other rules still hold."""
    registry = ToolRegistry()
    registry.register(TodoWriteTool(allow_parallel_in_progress=True), provider="todo")
    context = ExecContext(agent=agent, call_id="c")
    two = raw({"todos": [item("a", "in_progress"), item("b", "in_progress")]})
    result = await registry.execute("todo_write", two, context)
    assert result.text == "Updated todo list: 0 pending, 2 in progress, 0 completed."
    duplicate = raw({"todos": [item("a", "in_progress"), item("a", "in_progress")]})
    result = await registry.execute("todo_write", duplicate, context)
    assert result.text == 'Error: invalid todos: duplicate content "a"'
    assert len(todo_events(agent.session)) == 1


# -- presentation ------------------------------------------------------------------------


def test_present_call_is_the_tool_name(todo_host: PluginHost) -> None:
    """A call renders as just `todo_write`, whatever the list: the result line says the rest."""
    for todos in ([], [item("a", "in_progress"), item("b")]):
        args = TodoWriteArgs.model_validate({"todos": todos})
        assert tool_of(todo_host).present_call(args) == "todo_write"


@pytest.mark.parametrize(
    ("todos", "line"),
    [
        ([], "Plan cleared"),
        ([item("a"), item("b")], "Plan 0/2 done"),
        ([item("a", "completed"), item("b", "completed")], "Plan 2/2 done"),
        (
            [item("a", "completed"), item(" Run\n  the\ttests ", "in_progress"), item("c")],
            "Plan 1/3 done · now: Run the tests",
        ),
    ],
)
async def test_present_result_is_one_line_of_counts_and_the_active_task(
    todo_host: PluginHost, agent: Agent, todos: list[dict[str, str]], line: str
) -> None:
    """A successful write renders as one line: progress and the active task, folded to a line."""
    result = await execute(todo_host, {"todos": todos}, agent)
    assert tool_of(todo_host).present_result(result) == line


async def test_present_result_with_several_tasks_in_progress(agent: Agent) -> None:
    """Under the parallel policy the line names the first active task and how many more."""
    registry = ToolRegistry()
    tool = TodoWriteTool(allow_parallel_in_progress=True)
    registry.register(tool, provider="todo")
    todos = [item("a", "in_progress"), item("b", "in_progress"), item("c", "in_progress")]
    result = await registry.execute("todo_write", raw({"todos": todos}), ExecContext(agent=agent))
    assert tool.present_result(result) == "Plan 0/3 done · now: a (+2 more)"


async def test_present_result_of_an_error_is_nothing(todo_host: PluginHost, agent: Agent) -> None:
    """A rejected write renders nothing extra: its error text says it all."""
    error = await execute(todo_host, {"todos": [item("")]}, agent)
    assert tool_of(todo_host).present_result(error) is None


@pytest.mark.parametrize(
    "result",
    [
        ToolResult("Error: something", is_error=True, data={"todos": [item("a")]}),
        ToolResult("Updated todo list.", data=None),
        ToolResult("Updated todo list.", data=["not", "a", "dict"]),
    ],
    ids=["error-with-data", "no-data", "data-not-a-dict"],
)
def test_present_result_needs_a_successful_result_with_its_data(result: ToolResult) -> None:
    """An error (even one carrying data) or a result without the dict data renders nothing."""
    assert TodoWriteTool().present_result(result) is None


def test_a_tool_built_without_settings_allows_one_task_in_progress() -> None:
    """The default policy is one active task, whoever builds the tool."""
    two = [TodoItem(content="a", status="in_progress"), TodoItem(content="b", status="in_progress")]
    assert TodoWriteTool().validate(two) == (
        "Error: invalid todos: at most one task may be in_progress, got 2"
    )


def test_a_validated_item_cannot_be_changed_afterwards() -> None:
    """Items are frozen: the list validated is the list written, whoever holds a reference."""
    todo = TodoItem(content="a", status="pending")
    with pytest.raises(ValidationError, match="frozen"):
        todo.status = "completed"  # type: ignore[misc]
    payload = TodoWritePayload(todos=(todo,))
    with pytest.raises(ValidationError, match="frozen"):
        payload.todos = ()  # type: ignore[misc]


def test_todo_write_is_log_only_and_runs_alone() -> None:
    """Its only effect is on the log (no approval, no commit before it) and calls run in order."""
    for tool in (TodoWriteTool(), TodoWriteTool(allow_parallel_in_progress=True)):
        assert tool.effect == "log_only"
        assert tool.exclusive is True


def test_renderings_never_print_terminal_escapes() -> None:
    """A task name carrying ESC/OSC sequences or NUL reaches no terminal raw (issue 13, 6)."""
    hostile = "\x1b]0;pwned\x07Fix \x1b[31mit\x00"
    todos = [TodoItem(content=hostile, status="in_progress")]
    assert plan_line(todos) == "Plan 0/1 done · now: Fix it"
    assert render_checklist(todos) == "▶ Fix it"
    assert render_markdown(todos) == "- [ ] **Fix it**"
    assert todos[0].content == hostile  # the item keeps what the model wrote


def test_renderings_fold_each_task_onto_one_line() -> None:
    """Checklist and Markdown show a multi-line task on one line; the item keeps its text."""
    todos = [
        TodoItem(content="Read\u2028the\n code", status="completed"),
        TodoItem(content="  Fix\tit ", status="in_progress"),
    ]
    assert render_checklist(todos) == "☑ Read the code\n▶ Fix it"
    assert render_markdown(todos) == "- [x] Read the code\n- [ ] **Fix it**"
    assert todos[0].content == "Read\u2028the\n code"


async def test_loop_shaped_call_answers_the_call(agent: Agent, call: Call) -> None:
    """Called the way the loop calls it, the result answers the assistant's call."""
    result = await call({"todos": [item("a", "in_progress")]}, agent)
    last = agent.session.events[-1]
    assert last.type == "tool/result"
    assert last.data["text"] == result.text
    assert last.data["data"] == result.data
