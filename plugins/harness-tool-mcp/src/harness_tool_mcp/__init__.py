"""harness-tool-mcp: Model Context Protocol servers' tools on the harness tool registry.

A namespace plugin: `name`, `inject` and hook implementations. Each server configured under
`[plugins.mcp.servers.NAME]` is started before a session's first model request (a deferred
registration, see `ToolRegistry.defer`), all in parallel; its tools register as `NAME__TOOL`,
sent non-strict with the server's own JSON schema, which the registry checks before each call,
and are registered again when the server says they changed. `harness mcp` lists the servers,
their state and their tools. `harness_session_mcp` runs the servers an ACP client names for
one session, on that session's own registry.

The module stays light: the hooks import the SDK only when called, so `harness --help` and the
query commands do not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    from harness_core.hosts import Command, McpServerSpec, SessionMcp
    from harness_core.plugins import PluginContext
    from harness_core.tools import ToolRegistry

    from ._start import ServerTools

__all__ = [
    "harness_cli_commands",
    "harness_register_tools",
    "harness_session_mcp",
    "inject",
    "name",
]

name = "mcp"
inject = ("tools", "config", "logger")


@hookimpl
def harness_register_tools(ctx: PluginContext) -> None:
    from ._config import McpConfig

    config = ctx.config.parse(McpConfig)  # a bad table fails the load, before any session
    if not config.servers:
        return

    servers: ServerTools | None = None

    async def start() -> None:
        # The SDK loads, and the servers start, before a session's first model request: a
        # command that only reads sessions (show, events, todos) starts none. A start
        # cancelled half way runs again on the same servers.
        nonlocal servers
        from ._start import ServerTools

        tables = {name: (table, os.environ) for name, table in config.servers.items()}
        servers = servers or ServerTools(tables, ctx.tools, ctx.logger)
        await servers.start()

    ctx.tools.defer(start)


@hookimpl
def harness_cli_commands() -> Sequence[Command]:
    from ._command import MCP

    return [MCP]


@hookimpl
def harness_session_mcp() -> SessionMcp:
    from harness_core.hosts import SessionMcp  # the hosts' extension points: only when asked

    return SessionMcp(attach=_attach, http=True)


def _attach(servers: Sequence[McpServerSpec], tools: ToolRegistry, cwd: str) -> Callable[[], None]:
    from ._client import attach  # the SDK loads only when a client names servers

    return attach(servers, tools, cwd)
