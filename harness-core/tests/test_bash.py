"""The bash tool: working directory, exit codes, output cap, timeout, process-group cleanup."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import anyio
import pytest
from harness_core.config import Config
from harness_core.log import SessionStore
from harness_core.loop import Agent
from harness_core.models import ScriptedModel
from harness_core.plugins import PluginHost
from harness_core.tools import CallingAgent, ChildOutcome, ExecContext, ToolResult
from harness_core.tools.bash import BashArgs, BashTool, OutputCapture
from process_helpers import has_pid, poll, running


@pytest.fixture
def store(harness_home: Path) -> SessionStore:
    return SessionStore(harness_home, PluginHost(Config({}, env={})).event_types)


def context_in(store: SessionStore, cwd: Path) -> ExecContext:
    """A call context whose agent's session started in `cwd` (session/start `cwd`)."""
    log = store.create(cwd=str(cwd))
    agent = Agent(log, ScriptedModel([{"text": "unused"}]), PluginHost(Config({}, env={})).tools)
    return ExecContext(agent=agent, call_id="call_1")


async def run(
    command: str, ctx: ExecContext | None = None, tool: BashTool | None = None
) -> ToolResult:
    tool = tool or BashTool(timeout=30)
    return await tool.execute(BashArgs(command=command), ctx or ExecContext())


def processes_with(token: str) -> list[int]:
    """Live processes whose command line contains `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if token.encode() in cmdline and running(int(entry.name)):
                found.append(int(entry.name))
    return found


def our_zombies() -> list[int]:
    """Children of this process that exited and were never reaped."""
    zombies = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[0] == "Z" and int(fields[1]) == os.getpid():
                zombies.append(int(entry.name))
    return zombies


async def test_runs_in_the_sessions_working_directory(store: SessionStore, tmp_path: Path) -> None:
    """The command starts in session/start `cwd`, not in the harness process's directory."""
    workdir = tmp_path / "project"
    workdir.mkdir()
    result = await run("pwd", context_in(store, workdir))
    assert result.text == f"{workdir}\n[exit code 0]"
    assert Path.cwd() != workdir


class HostCaller:
    """An embedding host's own caller: a session and a working directory, no agent loop."""

    session_id = "host-session"
    depth = 0

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd

    def append(self, type: str, payload: object) -> None:
        raise AssertionError("bash appends nothing")

    async def run_child(self, task: str, *, call_id: str | None = None) -> ChildOutcome:
        raise AssertionError("bash runs no child")


async def test_runs_in_the_cwd_of_any_calling_agent(tmp_path: Path) -> None:
    """bash needs only the CallingAgent protocol's `cwd`, not the loop's Agent."""
    caller: CallingAgent = HostCaller(str(tmp_path))
    result = await run("pwd", ExecContext(agent=caller, call_id="call_1"))
    assert result.text == f"{tmp_path}\n[exit code 0]"


async def test_a_missing_working_directory_is_an_error_result(
    store: SessionStore, tmp_path: Path
) -> None:
    """A session whose directory was deleted gets a readable error, not a crash."""
    workdir = tmp_path / "deleted"
    workdir.mkdir()
    ctx = context_in(store, workdir)
    workdir.rmdir()
    result = await run("pwd", ctx)
    assert result.is_error
    assert result.text == (
        f"Error: the session's working directory {workdir} does not exist; "
        "recreate it, or start a new session from an existing directory"
    )


async def test_without_an_agent_it_runs_in_the_process_directory() -> None:
    """A call from outside a loop uses the current directory."""
    assert (await run("pwd")).text == f"{os.getcwd()}\n[exit code 0]"


async def test_a_non_zero_exit_is_a_normal_result() -> None:
    """Exit 3 is reported with the output, and the call is not an error."""
    result = await run("echo out; echo err >&2; exit 3")
    assert result == ToolResult(
        "out\nerr\n[exit code 3]",
        is_error=False,
        data={"exit_code": 3, "timed_out": False, "cut_bytes": 0},
    )


async def test_no_output_still_reports_the_exit_code() -> None:
    """A silent command reads as just its exit code."""
    assert (await run("true")).text == "[exit code 0]"
    assert (await run("printf 'no newline'")).text == "no newline\n[exit code 0]"


async def test_long_output_keeps_head_and_tail_and_says_what_was_cut() -> None:
    """20,000 numbered lines under a 1,000-byte cap: first and last lines survive."""
    result = await run("seq 1 20000", tool=BashTool(limit=1000))
    total = sum(len(f"{n}\n") for n in range(1, 20001))
    assert result.text.startswith("1\n2\n3\n")
    assert result.text.endswith("19999\n20000\n[exit code 0]")
    assert (
        f"[... {total - 1000} of {total} bytes of output cut; showing the first and last 500 ...]"
        in result.text
    )
    assert result.data == {"exit_code": 0, "timed_out": False, "cut_bytes": total - 1000}


def test_the_capture_never_holds_more_than_the_cap() -> None:
    """Head and tail stay at half the cap each, whatever the chunking."""
    capture = OutputCapture(10)
    for chunk in (b"abc", b"defghij", b"k" * 100, b"lmnop"):
        capture.add(chunk)
    assert (bytes(capture.head), bytes(capture.tail), capture.cut) == (b"abcde", b"klmnop"[1:], 105)


async def test_invalid_utf8_output_is_replaced_not_fatal() -> None:
    """Binary output does not break the result."""
    result = await run(r"printf 'ok \xff\xfe done'")
    assert result.text == "ok \ufffd\ufffd done\n[exit code 0]"


async def test_a_timeout_kills_the_command_and_its_children(tmp_path: Path) -> None:
    """Past the timeout the whole group dies and the result says so."""
    pid_file = tmp_path / "child.pid"
    result = await run(
        f"echo started; sleep 60 & echo $! > {pid_file}; wait", tool=BashTool(timeout=0.5)
    )
    assert result.is_error
    assert result.text == (
        "started\n[timed out after 0.5s; the command and its children were killed]"
    )
    assert result.data == {"exit_code": None, "timed_out": True, "cut_bytes": 0}
    pid = int(pid_file.read_text())
    await poll(lambda: not running(pid))
    assert our_zombies() == []


async def test_background_children_end_with_the_command(tmp_path: Path) -> None:
    """A command that leaves a child holding its output returns at once; the child dies."""
    pid_file = tmp_path / "child.pid"
    with anyio.fail_after(20):
        result = await run(f"sleep 60 & echo $! > {pid_file}; echo parent done")
    assert result.text == "parent done\n[exit code 0]"
    pid = int(pid_file.read_text())
    await poll(lambda: not running(pid))


async def test_cancelling_kills_the_whole_process_group(tmp_path: Path) -> None:
    """Cancel while a background child runs: the child's pid is gone, nothing is left unreaped."""
    pid_file = tmp_path / "child.pid"
    async with anyio.create_task_group() as group:
        group.start_soon(run, f"sleep 60 & echo $! > {pid_file}; wait")
        await poll(lambda: has_pid(pid_file))
        group.cancel_scope.cancel()
    pid = int(pid_file.read_text())
    await poll(lambda: not running(pid))
    assert our_zombies() == []


async def test_a_cancel_at_any_moment_leaves_no_process_behind() -> None:
    """Cancelling at many points, spawn included, never orphans the command's children."""
    token = f"60.{secrets.randbelow(10**6)}"
    for attempt in range(25):
        with anyio.CancelScope() as scope:
            scope.deadline = anyio.current_time() + attempt * 0.001
            await run(f"sleep {token} & sleep {token}; wait")
    await poll(lambda: processes_with(token) == [])
    assert our_zombies() == []


def test_present_call_and_result() -> None:
    """Hosts get one short line for a call and the exit status for a result."""
    tool = BashTool()
    assert tool.present_call(BashArgs(command="ls -la\necho more")) == "$ ls -la"
    assert (
        tool.present_result(ToolResult("", data={"exit_code": 2, "timed_out": False})) == "exit 2"
    )
    assert (
        tool.present_result(ToolResult("", True, {"exit_code": None, "timed_out": True}))
        == "timed out"
    )
