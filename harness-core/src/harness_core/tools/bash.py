"""The `bash` tool: run a shell command in the session's working directory.

The whole process group is the unit: a timeout, a cancelled turn or the command's own exit
ends every process it started, so nothing outlives the call and keeps its output pipe open.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from typing import Final

import anyio
from anyio.abc import Process
from pydantic import BaseModel, ConfigDict, Field

from ._tool import ExecContext, Tool, ToolResult

__all__ = ["BashArgs", "BashTool", "OutputCapture"]

DEFAULT_TIMEOUT: Final = 120.0
DEFAULT_LIMIT: Final = 30_000  # characters the model sees at most: head and tail halves


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
        return f"{head}\n[... {self.cut} bytes of output cut ...]\n{tail}"


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

    async def execute(self, args: BashArgs, ctx: ExecContext) -> ToolResult:
        capture = OutputCapture(self.limit)
        process = await anyio.open_process(
            ["bash", "-c", args.command],
            cwd=_working_directory(ctx),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            with anyio.move_on_after(self.timeout) as deadline:
                code = await _run(process, capture)
        finally:
            await _end_group(process)
        if deadline.cancelled_caught:
            return ToolResult(
                f"{capture.text()}\n[timed out after {self.timeout:g}s; the command was killed]",
                is_error=True,
                data={"exit_code": None, "timed_out": True, "cut_bytes": capture.cut},
            )
        return ToolResult(
            f"{capture.text()}\n[exit code {code}]" if capture.total else f"[exit code {code}]",
            data={"exit_code": code, "timed_out": False, "cut_bytes": capture.cut},
        )

    def present_result(self, result: ToolResult) -> str | None:
        data = result.data if isinstance(result.data, dict) else {}
        if data.get("timed_out"):
            return "timed out"
        return f"exit {data.get('exit_code')}" if "exit_code" in data else None


async def _run(process: Process, capture: OutputCapture) -> int:
    """Read output until the shell exits, then end its group so stray children let go."""
    assert process.stdout is not None
    stdout = process.stdout

    async def read() -> None:
        async for chunk in stdout:
            capture.add(chunk)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        code = await process.wait()
        _kill_group(process)
    return code


def _kill_group(process: Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _end_group(process: Process) -> None:
    """Kill the group (cancel, timeout or leftovers) and reap the shell, even when cancelled."""
    _kill_group(process)
    with anyio.CancelScope(shield=True):
        await process.wait()
        await process.aclose()


def _working_directory(ctx: ExecContext) -> str | None:
    if ctx.agent is None or not ctx.agent.session.events:
        return None
    cwd = ctx.agent.session.events[0].data.get("cwd")
    return cwd if isinstance(cwd, str) and os.path.isdir(cwd) else None
