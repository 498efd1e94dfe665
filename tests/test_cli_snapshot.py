"""Snapshots: the exact log events and the exact rendered plan strip of scripted sessions.

A change to any of these is a change users and other hosts see (the on-disk format, the plan
strip's look); update the snapshot only on purpose.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from harness_core import __version__
from harness_core.cli._render import strip_text
from harness_core.loop import DEFAULT_SYSTEM_PROMPT
from harness_tool_todo._hosts import strip_lines
from harness_tool_todo._render import MARKS
from harness_tool_todo.projections import Todo
from rich.console import Console, Group
from test_cli_support import read_events, run_cli, session_ids, todo_call, write_script

TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")

SCRIPT = [
    {
        "text": "Plan:",
        "tool_calls": [
            todo_call(("Say hi", "in_progress"), ("Wrap up", "pending")),
            {"name": "bash", "arguments": {"command": "echo hi"}},
        ],
    },
    {"tool_calls": [todo_call(("Say hi", "completed"), ("Wrap up", "in_progress"))]},
    {"text": "Bye."},
]

TODOS_1 = [
    {"content": "Say hi", "status": "in_progress"},
    {"content": "Wrap up", "status": "pending"},
]
TODOS_2 = [
    {"content": "Say hi", "status": "completed"},
    {"content": "Wrap up", "status": "in_progress"},
]
ARGS_1 = (
    '{"todos": [{"content": "Say hi", "status": "in_progress"}, '
    '{"content": "Wrap up", "status": "pending"}]}'
)
ARGS_2 = (
    '{"todos": [{"content": "Say hi", "status": "completed"}, '
    '{"content": "Wrap up", "status": "in_progress"}]}'
)
NO_EXTRAS: dict[str, Any] = {"reasoning_content": None, "model": "scripted", "usage": None}

EVENTS: list[dict[str, Any]] = [
    {"seq": 1, "type": "turn/start", "data": {}, "turn": 1},
    {"seq": 2, "type": "message/user", "data": {"text": "hello"}, "turn": 1},
    {
        "seq": 3,
        "type": "message/assistant",
        "data": {
            "text": "Plan:",
            "tool_calls": [
                {"id": "call_1_1", "name": "todo_write", "arguments": ARGS_1},
                {"id": "call_1_2", "name": "bash", "arguments": '{"command": "echo hi"}'},
            ],
            **NO_EXTRAS,
        },
        "turn": 1,
    },
    {"seq": 4, "type": "todo/write", "data": {"todos": TODOS_1}, "turn": 1},
    {
        "seq": 5,
        "type": "tool/result",
        "data": {
            "call_id": "call_1_1",
            "tool_name": "todo_write",
            "text": "Updated todo list: 1 pending, 1 in progress, 0 completed.",
            "is_error": False,
            "data": {"todos": TODOS_1, "counts": {"pending": 1, "inProgress": 1, "completed": 0}},
        },
        "turn": 1,
    },
    {
        "seq": 6,
        "type": "tool/approval",
        "data": {"call_id": "call_1_2", "decision": "allow", "by": "policy", "scope": "once"},
        "turn": 1,
    },
    {
        "seq": 7,
        "type": "tool/result",
        "data": {
            "call_id": "call_1_2",
            "tool_name": "bash",
            "text": "hi\n[exit code 0]",
            "is_error": False,
            "data": {"exit_code": 0, "timed_out": False, "cut_bytes": 0},
        },
        "turn": 1,
    },
    {
        "seq": 8,
        "type": "message/assistant",
        "data": {
            "text": None,
            "tool_calls": [{"id": "call_2_1", "name": "todo_write", "arguments": ARGS_2}],
            **NO_EXTRAS,
        },
        "turn": 1,
    },
    {"seq": 9, "type": "todo/write", "data": {"todos": TODOS_2}, "turn": 1},
    {
        "seq": 10,
        "type": "tool/result",
        "data": {
            "call_id": "call_2_1",
            "tool_name": "todo_write",
            "text": "Updated todo list: 0 pending, 1 in progress, 1 completed.",
            "is_error": False,
            "data": {"todos": TODOS_2, "counts": {"pending": 0, "inProgress": 1, "completed": 1}},
        },
        "turn": 1,
    },
    {
        "seq": 11,
        "type": "message/assistant",
        "data": {"text": "Bye.", "tool_calls": [], **NO_EXTRAS},
        "turn": 1,
    },
    {"seq": 12, "type": "turn/end", "data": {"status": "completed", "error": None}, "turn": 1},
]

OUTPUT = [
    "› hello",
    "Plan:",
    "Plan · 0/2 done",
    "  ▶ Say hi",
    "  ☐ Wrap up",
    "✓ todo_write  Plan 0/2 done · now: Say hi",
    "✓ $ echo hi  exit 0",
    "Plan · 1/2 done",
    "  ☑ Say hi",
    "  ▶ Wrap up",
    "✓ todo_write  Plan 1/2 done · now: Wrap up",
    "Bye.",
]


def without_ts(event: dict[str, Any]) -> dict[str, Any]:
    assert TS.fullmatch(event.pop("ts")), event
    return event


def test_the_log_of_a_scripted_run_is_pinned(tmp_path: Path, harness_home: Path) -> None:
    """Every envelope a scripted run appends, field by field (timestamps aside)."""
    result = run_cli(
        "run", "--model", write_script(tmp_path / "s.json", SCRIPT), "hello", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    start, *events = [without_ts(e) for e in read_events(harness_home, session)]
    assert TS.fullmatch(start["data"].pop("created"))
    assert start == {
        "seq": 0,
        "type": "session/start",
        "data": {
            "id": session,
            "harness_version": __version__,
            "cwd": str(tmp_path),
            "system_prompt": DEFAULT_SYSTEM_PROMPT,
            "parent_session": None,
            "parent_call_id": None,
        },
    }
    assert events == EVENTS
    assert result.stdout.splitlines()[:-1] == OUTPUT


def test_the_rendered_strip_is_pinned() -> None:
    """The strip on a colour terminal: bold header, green check, bold yellow active task."""
    console = Console(record=True, width=60, force_terminal=True, color_system="standard")
    todos = (Todo("Say hi", "completed"), Todo("Wrap up", "in_progress"), Todo("Ship", "pending"))
    console.print(Group(*(strip_text(line) for line in strip_lines(todos))))
    assert console.export_text(styles=True) == (
        "\x1b[1mPlan · 1/3 done\x1b[0m\n"
        "  \x1b[32m☑\x1b[0m \x1b[2mSay hi\x1b[0m\n"
        "  \x1b[1;33m▶\x1b[0m \x1b[1;33mWrap up\x1b[0m\n"
        "  ☐ Ship\n"
    )


def test_the_collapsed_strip_is_pinned() -> None:
    """A long plan on a terminal: the window around the active task, hidden ones counted."""
    console = Console(record=True, width=60, force_terminal=True, color_system="standard")
    todos = tuple(
        Todo(f"Step {n}", "completed" if n < 6 else "in_progress" if n == 6 else "pending")
        for n in range(10)
    )
    console.print(Group(*(strip_text(line) for line in strip_lines(todos))))
    assert console.export_text() == (
        "Plan · 6/10 done\n"
        "  ⋯ 3 more above\n"
        "  ☑ Step 3\n"
        "  ☑ Step 4\n"
        "  ☑ Step 5\n"
        "  ▶ Step 6\n"
        "  ☐ Step 7\n"
        "  ☐ Step 8\n"
        "  ☐ Step 9\n"
    )


DEMO_PLANS = [
    ["▶ Identify the operating system", "☐ Check the Python version", "☐ List the working directory", "☐ Summarize the findings"],
    ["☑ Identify the operating system", "▶ Check the Python version", "☐ List the working directory", "☐ Summarize the findings"],
    ["☑ Identify the operating system", "☑ Check the Python version", "▶ List the working directory", "☐ Summarize the findings"],
    ["☑ Identify the operating system", "☑ Check the Python version", "☑ List the working directory", "▶ Summarize the findings"],
    ["☑ Identify the operating system", "☑ Check the Python version", "☑ List the working directory", "☑ Summarize the findings"],
]  # fmt: skip


def test_the_demo_session_is_pinned(tmp_path: Path, harness_home: Path) -> None:
    """The demo's events: each plan revision, each real command and its real output."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("")
    result = run_cli("demo", cwd=project)
    assert result.returncode == 0, result.stderr
    (session,) = session_ids(harness_home)
    events = read_events(harness_home, session)
    plans = [
        [f"{MARKS[t['status']]} {t['content']}" for t in e["data"]["todos"]]
        for e in events
        if e["type"] == "todo/write"
    ]
    assert plans == DEMO_PLANS
    outputs = {e["data"]["text"] for e in events if e["data"].get("tool_name") == "bash"}
    python = subprocess.run(["python3", "--version"], capture_output=True, text=True, check=True)
    assert outputs == {
        f"{os.uname().sysname}\n[exit code 0]",
        f"{(python.stdout or python.stderr).strip()}\n[exit code 0]",
        "notes.txt\n[exit code 0]",
    }
    assert [e["type"] for e in events].count("turn/end") == 1
    assert events[-1]["data"] == {"status": "completed", "error": None}
    # Off a terminal each revision is printed as a strip block, in order.
    stdout = result.stdout.splitlines()
    headers = [n for n, line in enumerate(stdout) if line.startswith("Plan · ")]
    assert [[line.strip() for line in stdout[n + 1 : n + 5]] for n in headers] == DEMO_PLANS
