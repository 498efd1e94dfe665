"""harness-tool-mcp: Model Context Protocol servers' tools on the harness tool registry.

A namespace plugin: `name`, `inject` and hook implementations. Each server configured under
`[plugins.mcp.servers.NAME]` is started the first time a session needs tools (the host's
tools phase), all in parallel; its tools register as `NAME__TOOL`, sent non-strict with the
server's own JSON schema, which the registry checks before each call. `harness mcp` lists the
servers, their state and their tools.

The module stays light: the hooks import the SDK only when called, so `harness --help` and the
query commands do not pay for it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from harness_core.plugins import hookimpl

if TYPE_CHECKING:
    from harness_core.hosts import Command
    from harness_core.plugins import PluginContext

__all__ = ["harness_cli_commands", "harness_register_tools", "inject", "name"]

name = "mcp"
inject = ("tools", "config", "logger")


@hookimpl
def harness_register_tools(ctx: PluginContext) -> None:
    from ._config import McpConfig

    config = ctx.config.parse(McpConfig)
    if not config.servers:
        return  # before the SDK's import: without servers the plugin costs next to nothing
    from harness_core.tools import SchemaError

    from ._start import start_servers
    from ._tool import McpTool

    for server in start_servers(config, os.environ):
        if server.state != "ready":
            # Reported once, here; the other servers' tools register regardless.
            ctx.logger.warning(
                "MCP server %r failed to start: %s%s",
                server.name,
                server.error,
                server.stderr_note(),
            )
        for tool in server.tools:
            try:
                ctx.tools.register(McpTool(server, tool))
            except SchemaError as exc:
                ctx.logger.warning("MCP server %r: tool skipped: %s", server.name, exc)


@hookimpl
def harness_cli_commands() -> Sequence[Command]:
    from ._command import MCP

    return [MCP]
