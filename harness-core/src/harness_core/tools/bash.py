"""The `bash` tool: run a shell command in the session's working directory.

The whole process group is the unit: a timeout, a cancelled turn or the command's own exit
ends every process it started, so nothing outlives the call and keeps its output pipe open.
"""

from __future__ import annotations

import os
from typing import Final

import anyio
from pydantic import BaseModel, ConfigDict, Field

from .. import secret
from . import sandbox
from ._tool import ExecContext, Tool, ToolResult

__all__ = ["BashArgs", "BashTool", "OutputCapture"]

DEFAULT_TIMEOUT: Final = 120.0
DEFAULT_LIMIT: Final = 30_000  # output bytes the model sees at most: head and tail halves


class BashArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    command: str = Field(description="The bash command line to run.")


class OutputCapture:
    """Keeps the first and last `limit // 2` bytes of a stream and counts what it cut."""

    def __init__(self, limit: int) -> None:
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        self.tail += chunk
        if len(self.tail) > self.half:
            del self.tail[: len(self.tail) - self.half]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if self.cut == 0:
            return head + tail
        return (
            f"{head}\n[... {self.cut} of {self.total} bytes of output cut; "
            f"showing the first and last {self.half} ...]\n{tail}"
        )


class BashTool(Tool[BashArgs]):
    name = "bash"
    description = (
        "Run a bash command in the session's working directory and return its combined "
        "stdout and stderr with the exit code. A non-zero exit is reported, not an error of "
        "the tool. Long output keeps its head and tail. Commands time out; processes the "
        "command leaves in the background end with it."
    )
    arguments = BashArgs

    def __init__(self, *, timeout: float = DEFAULT_TIMEOUT, limit: int = DEFAULT_LIMIT) -> None:
        self.timeout = timeout
        self.limit = limit

    def present_call(self, args: BashArgs) -> str:
        first = args.command.strip().splitlines()[0] if args.command.strip() else ""
        return f"$ {first[:100]}"

    def present_approval(self, args: BashArgs) -> str | None:
        # The one line shows only the start: the person approving must see all of it.
        return args.command if args.command != self.present_call(args)[2:] else None

    async def execute(self, args: BashArgs, exec_ctx: ExecContext) -> ToolResult:
        cwd = _working_directory(exec_ctx)
        if "\0" in args.command:  # no program can receive it: the OS refuses the argument
            return ToolResult(
                "Error: the command contains a NUL character (\\0), which bash cannot run; "
                "remove it, or write the byte with printf '\\0'",
                is_error=True,
            )
        try:
            command = await _spawn(args.command, cwd, exec_ctx)
        except OSError:
            if await anyio.Path(cwd).is_dir():
                raise
            return ToolResult(
                f"Error: the session's working directory {cwd} does not exist; "
                "recreate it, or start a new session from an existing directory",
                is_error=True,
            )
        capture = OutputCapture(self.limit)
        try:
            with anyio.move_on_after(self.timeout) as deadline:
                code = await _run(command, capture)
        except sandbox.SandboxCrashed as exc:
            note = f"[{exc}; the call was lost, and the next call starts a new sandbox]"
            return ToolResult(_with_note(capture.text(), note), is_error=True)
        finally:
            command.kill()
            await command.aclose()
        data = {"exit_code": None, "timed_out": True, "cut_bytes": capture.cut}
        if deadline.cancelled_caught:
            note = f"[timed out after {self.timeout:g}s; the command and its children were killed]"
            return ToolResult(_with_note(capture.text(), note), is_error=True, data=data)
        data.update(exit_code=code, timed_out=False)
        return ToolResult(_with_note(capture.text(), f"[exit code {code}]"), data=data)

    def present_result(self, result: ToolResult) -> str | None:
        data = result.data if isinstance(result.data, dict) else {}
        if data.get("timed_out"):
            return "timed out"
        return f"exit {data.get('exit_code')}" if "exit_code" in data else None


async def _spawn(command: str, cwd: str, exec_ctx: ExecContext) -> sandbox.Command:
    """Start `bash -c command` in the sandbox, as the leader of its own process group."""
    return await sandbox.current().start(
        ["bash", "-c", command],
        cwd,
        # An allowlist, not harness's environment: a prompt injection could make the model
        # `env` its keys, PGPASSWORD or a cloud token into the log; `tool_env` adds names.
        secret.current().tool_environment(os.environ),
        owner=exec_ctx.agent,  # its session shares one sandbox, ended with it
    )


async def _run(command: sandbox.Command, capture: OutputCapture) -> int:
    """Read output until the shell exits, then end its group so stray children let go."""
    crashed: sandbox.SandboxCrashed | None = None

    async def read() -> None:
        async for chunk in command.output():
            capture.add(chunk)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        try:
            code = await command.wait()
        except sandbox.SandboxCrashed as exc:  # raised out of the group, not in a group
            crashed, code = exc, -1
        command.kill()
    if crashed is not None:
        raise crashed
    return code


def _with_note(output: str, note: str) -> str:
    if not output:
        return note
    return f"{output}{note}" if output.endswith("\n") else f"{output}\n{note}"


def _working_directory(exec_ctx: ExecContext) -> str:
    """session/start `cwd` of the calling agent's session; the process's own without one."""
    cwd = exec_ctx.agent.cwd if exec_ctx.agent is not None else None
    return cwd or os.getcwd()
