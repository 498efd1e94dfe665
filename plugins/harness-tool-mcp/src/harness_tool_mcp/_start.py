"""Start servers in parallel, and keep their tools registered as they change."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio
from harness_core.tools import SchemaError, ToolNameConflict

from ._config import McpConfig, ServerConfig
from ._runtime import Runtime
from ._server import Server, ServerGone
from ._tool import McpTool

if TYPE_CHECKING:
    from harness_core.plugins import ProviderTools
    from harness_core.tools import Disposer

__all__ = ["ServerTools", "start_servers"]


def start_servers(config: McpConfig, environ: Mapping[str, str]) -> list[Server]:
    """Every server of `config`, started in parallel; a failure is in its `state`/`error`."""
    runtime = Runtime()
    servers = [Server(name, cfg, runtime, environ) for name, cfg in config.servers.items()]
    runtime.call(_start_all, servers)
    return servers


async def _start_all(servers: list[Server]) -> None:
    async with anyio.create_task_group() as group:
        for server in servers:
            group.start_soon(server.start)


class ServerTools:
    """Servers whose tools are registered on a registry, started when it is first readied.

    `start` is what the registry runs before the first model request (`ToolRegistry.defer`);
    a server's `notifications/tools/list_changed` defers a re-listing the same way, and the
    re-listing swaps that server's registrations for the new set.
    """

    def __init__(
        self,
        servers: Mapping[str, tuple[ServerConfig, Mapping[str, str]]],
        tools: ProviderTools,
        logger: logging.Logger,
    ) -> None:
        self._configs = dict(servers)  # NAME: (its table, the environment its `env` reads)
        self._tools = tools
        self._logger = logger
        self.servers: list[Server] = []
        self._registered: dict[str, list[Disposer]] = {}

    async def start(self) -> None:
        if not self.servers:  # a start cancelled half way runs again: the runtime stays
            runtime = Runtime()
            self.servers = [
                Server(name, config, runtime, environ)
                for name, (config, environ) in self._configs.items()
            ]
        await self.servers[0].runtime.run(_start_all, self.servers)
        for server in self.servers:
            if server.state != "ready":
                # Reported once, here; the other servers' tools register regardless.
                self._logger.warning(
                    "MCP server %r failed to start: %s%s",
                    server.name,
                    server.error,
                    server.stderr_note(),
                )
            server.on_tools_changed = self._changed
            self._register(server)

    def close(self) -> None:
        """Stop the servers (their stdio children end) and dispose their tools."""
        for name in list(self._registered):
            for dispose in self._registered.pop(name):
                dispose()
        if self.servers:
            self.servers[0].runtime.close()

    def _changed(self, server: Server) -> None:
        """On the runtime's thread: re-list before the next model request, on its loop."""

        async def relist() -> None:
            try:
                await server.runtime.run(server.relist)
            except ServerGone as exc:
                # Its calls restart it; until then the tools it had stay registered.
                self._logger.warning("MCP server %r: tools not re-listed: %s", server.name, exc)
                return
            self._register(server)

        self._tools.defer(relist)

    def _register(self, server: Server) -> None:
        """Dispose what `server` registered before, then register its current tools."""
        for dispose in self._registered.pop(server.name, []):
            dispose()
        registered = self._registered[server.name] = []
        for tool in server.tools if server.state == "ready" else []:
            try:
                registered.append(self._tools.register(McpTool(server, tool)))
            except (SchemaError, ToolNameConflict) as exc:
                self._logger.warning("MCP server %r: tool skipped: %s", server.name, exc)
