"""One configured MCP server: its connection, its tools, its state, its restarts.

Every method here runs on the runtime's loop (see `_runtime.py`).
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from contextvars import ContextVar
from typing import Any, Final, Literal

import anyio
import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ._config import ServerConfig
from ._runtime import Runtime

__all__ = ["STARTUP_TIMEOUT", "Server", "ServerGone"]

STARTUP_TIMEOUT: Final = 30.0  # seconds to start, initialize and list tools
STDERR_TAIL: Final = 2_000  # characters of a failed server's stderr shown with its error

State = Literal["stopped", "ready", "failed"]

logger: Final = logging.getLogger("harness.plugins.mcp")


class ServerGone(Exception):
    """The server is not running: it failed to start, or died during the call."""


class Server:
    """A server's connection, held by one task on the runtime's loop while it is ready."""

    def __init__(
        self, name: str, config: ServerConfig, runtime: Runtime, environ: Mapping[str, str]
    ) -> None:
        self.name = name
        self.config = config
        self.runtime = runtime
        self.state: State = "stopped"
        self.error: str | None = None
        self.tools: list[types.Tool] = []
        # Only the variables the config names: a model key never reaches a server.
        self._env = {key: environ[key] for key in config.env if key in environ}
        # Open for the process's life (a restart truncates it): its tail explains a failure.
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        runtime.on_close(self._stderr.close)
        self._session: ClientSession | None = None
        self._stop: anyio.Event | None = None
        self._lock: anyio.Lock | None = None
        # Told (on the runtime's thread) when the server sends notifications/tools/list_changed.
        self.on_tools_changed: Callable[[Server], None] | None = None
        self._reported: set[object] = set()  # the SDK's complaints told once per process

    def report(self, record: logging.LogRecord) -> None:
        """What the SDK logs about this server's stdio, as one warning naming the server
        (each kind once per process), instead of its message and a traceback."""
        if record.msg in self._reported:
            return
        self._reported.add(record.msg)
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ValidationError):  # a stdout line that is not an MCP message
            line = str(exc.errors()[0].get("input", ""))[:200]
            logger.warning(
                "MCP server %r printed a line on stdout that is not an MCP message (%r); "
                "stdout is the protocol, a server logs to stderr (more such lines are ignored)",
                self.name,
                line,
            )
            return
        why = f": {_reason(exc)}" if exc is not None else ""
        logger.warning("MCP server %r: %s%s", self.name, record.getMessage(), why)

    async def ensure(self) -> ClientSession:
        """The live session, (re)starting the server if it is not running."""
        self._lock = self._lock or anyio.Lock()
        async with self._lock:
            if self._session is not None and _closed(self._session):
                self._drop(self._session)  # it died between calls: start it again now
            if self._session is None:
                ready = anyio.Event()
                self.runtime.group.start_soon(self._hold, ready)
                await ready.wait()
            if self._session is None:
                raise ServerGone(self.error or "it stopped")
            return self._session

    async def start(self) -> None:
        """Start and list tools; a failure is recorded in `state` and `error`, not raised."""
        with suppress(ServerGone):
            await self.ensure()

    async def relist(self) -> None:
        """Read the server's tools again (after it said they changed)."""
        self.tools = await _list_tools(await self.ensure())

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call `tool`; a dead connection is dropped (the next call restarts) and raised."""
        session = await self.ensure()
        try:
            result = await session.call_tool(
                tool, arguments, read_timeout_seconds=self.config.timeout
            )
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                raise TimeoutError(f"no answer within {self.config.timeout:g} s") from None
            if exc.code != types.CONNECTION_CLOSED:
                raise
            self.error = f"it stopped during the call ({exc.error.message})"
            self._drop(session)
            raise ServerGone(f"{self.error}{self.stderr_note()}") from None
        return result

    def stderr_tail(self) -> str:
        self._stderr.flush()
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - STDERR_TAIL * 4))
        return self._stderr.read()[-STDERR_TAIL:].strip()

    def stderr_note(self) -> str:
        tail = self.stderr_tail()
        return f"; its stderr ends with:\n{tail}" if tail else ""

    def _drop(self, session: ClientSession) -> None:
        if self._session is session:
            self._session = None
            self.state = "stopped"
            if self._stop is not None:
                self._stop.set()

    async def _hold(self, ready: anyio.Event) -> None:
        """Open the connection, publish it, and keep it open until it is dropped."""
        self._stop = stop = anyio.Event()
        _serving.set(self)  # the transport's tasks, started below, inherit it
        try:
            async with self._connect() as session:
                self._session, self.state, self.error = session, "ready", None
                ready.set()
                await stop.wait()
        except Exception as exc:
            # Once published, the connection's end was reported by the call that met it;
            # closing a dead one may raise, and that says nothing new.
            if not ready.is_set():
                self.state, self.error = "failed", _reason(exc)
        finally:
            ready.set()

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[ClientSession]:
        async with (
            self._transport() as (read, write),
            ClientSession(read, write, message_handler=self._on_message) as session,
        ):
            with anyio.fail_after(STARTUP_TIMEOUT):
                await session.initialize()
                tools = await _list_tools(session)
            changed, self.tools = tools != self.tools, tools
            if changed and self.on_tools_changed:  # it restarted (an upgrade) with other tools
                self.on_tools_changed(self)
            yield session

    async def _on_message(self, message: object) -> None:
        # The SDK starts this as the notification arrives, ahead of the answer to the call
        # that changed the tools: the re-listing is queued before the model is asked again.
        if isinstance(message, types.ToolListChangedNotification) and self.on_tools_changed:
            self.on_tools_changed(self)

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        config = self.config
        if config.url is not None:
            # The SDK's own defaults: 30 s to connect, write and wait; 300 s to read, since a
            # server may hold a response stream open.
            client = httpx2.AsyncClient(
                headers=dict(config.headers), timeout=httpx2.Timeout(30.0, read=300.0)
            )
            async with client, streamable_http_client(config.url, http_client=client) as streams:
                yield streams
            return
        assert config.command is not None
        self._stderr.seek(0)
        self._stderr.truncate()
        self._reported.clear()
        parameters = StdioServerParameters(
            command=config.command, args=config.args, env=self._env, cwd=config.cwd
        )
        async with stdio_client(parameters, errlog=self._stderr) as streams:
            yield streams


# The server whose connection the running task serves: the SDK's stdio transport logs with
# a module logger, and only the task that logs knows which server it reads.
_serving: ContextVar[Server | None] = ContextVar("harness_mcp_serving", default=None)


class _NameTheServer(logging.Filter):
    """Hands the stdio transport's records to the server they are about (`Server.report`).

    The SDK logs every stdout line that is not JSON-RPC with a traceback, which reaches the
    user's terminal through the root logger once per line; records logged outside a server's
    tasks pass unchanged.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        server = _serving.get()
        if server is None:
            return True
        server.report(record)
        return False


logging.getLogger("mcp.client.stdio").addFilter(_NameTheServer())


async def _list_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _closed(session: ClientSession) -> bool:
    """Whether the connection ended (the process exited) while no call was running.

    The SDK has no public flag for this yet (mcp 2.3): the other ways to learn it are a
    dispatcher subclass passed as `dispatcher=`, whose `run` the SDK calls provisional, or a
    read stream wrapped to see its end, one more hop for every message. Its dispatcher refuses
    a send on a closed connection before writing anything, so reading the same flag is safe.
    Private, so pinned: the plugin requires mcp 2.3.x, and
    `test_a_server_that_died_between_calls_is_started_by_the_next_call` fails if the flag goes
    (the dead server would never be restarted). A public closed state on `ClientSession`
    retires it.
    """
    return bool(getattr(getattr(session, "_dispatcher", None), "_closed", False))


def _reason(exc: BaseException) -> str:
    """The innermost cause, in one line: task groups wrap what went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"it did not start within {STARTUP_TIMEOUT:g} s"
    if isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
        return "it exited before it was ready"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
