"""A server's tool on the harness registry: `SERVER__TOOL`, its own schema sent non-strict."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from harness_core.tools import ExecContext, RawArguments, Tool, ToolResult

from ._naming import tool_name
from ._result import to_tool_result
from ._server import Server, ServerGone

__all__ = ["McpTool"]


class McpTool(Tool[RawArguments]):
    """One tool of one MCP server; the registry has checked the arguments against its schema."""

    arguments = RawArguments

    def __init__(self, server: Server, tool: types.Tool) -> None:
        self.server = server
        self.remote_name = tool.name
        self.name = tool_name(server.name, tool.name)
        self.description = tool.description or f"{tool.name} from the MCP server {server.name}"
        self.json_schema = tool.input_schema

    async def execute(self, args: RawArguments, exec_ctx: ExecContext) -> ToolResult:
        arguments: dict[str, Any] = dict(args.model_extra or {})
        server = self.server
        try:
            result = await server.runtime.run(server.call, self.remote_name, arguments)
        except ServerGone as exc:
            return ToolResult(
                f"Error: MCP server {server.name!r} is not running: {exc}. "
                "It is started again at the next call.",
                is_error=True,
            )
        except TimeoutError as exc:
            return ToolResult(f"Error: {self.name} timed out: {exc}", is_error=True)
        return to_tool_result(result)

    def present_call(self, args: RawArguments) -> str:
        return f"{self.server.name}: {self.remote_name}"
