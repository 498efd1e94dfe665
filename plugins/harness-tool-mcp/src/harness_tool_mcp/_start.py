"""Start every configured server at once, on one runtime."""

from __future__ import annotations

from collections.abc import Mapping

import anyio

from ._config import McpConfig
from ._runtime import Runtime
from ._server import Server

__all__ = ["start_servers"]


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
