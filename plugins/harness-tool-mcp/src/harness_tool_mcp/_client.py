"""The MCP servers an ACP client hands one session (`mcpServers`), on that session's registry."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final

from harness_core.hosts import McpServerSpec
from harness_core.plugins import ProviderTools
from harness_core.tools import ToolRegistry

from ._config import ServerConfig
from ._naming import server_name
from ._start import ServerTools

__all__ = ["attach"]

logger: Final = logging.getLogger("harness.plugins.mcp")


def attach(servers: Sequence[McpServerSpec], tools: ToolRegistry, cwd: str) -> Callable[[], None]:
    """Start `servers` before the session's first model request; return what stops them.

    A stdio server gets the variables the client gave it (and none of harness's own beyond
    what the SDK passes so a command can start) and runs in the session's `cwd`.
    """
    configs: dict[str, tuple[ServerConfig, dict[str, str]]] = {}
    for spec in servers:
        name = server_name(spec.name)
        if name in configs:
            logger.warning("MCP server %r: a second server of that name is not started", name)
            continue
        configs[name] = (_config(spec, cwd), dict(spec.env))
    provider = ProviderTools(tools, provider="mcp")
    server_tools = ServerTools(configs, provider, logger)
    provider.defer(server_tools.start)

    def stop() -> None:
        provider.dispose_all()
        server_tools.close()

    return stop


def _config(spec: McpServerSpec, cwd: str) -> ServerConfig:
    if spec.url is not None:
        return ServerConfig(url=spec.url, headers=dict(spec.headers))
    return ServerConfig(
        command=spec.command, args=list(spec.args), env=[k for k, _ in spec.env], cwd=cwd
    )
