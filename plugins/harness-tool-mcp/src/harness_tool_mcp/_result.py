"""An MCP `CallToolResult` as the ToolResult the model reads and hosts show."""

from __future__ import annotations

from typing import Final

import mcp_types as types
from harness_core.tools import ToolResult
from harness_core.tools.bash import DEFAULT_LIMIT, OutputCapture

__all__ = ["to_tool_result"]

LIMIT: Final = DEFAULT_LIMIT  # capped like bash output: the head and the tail


def to_tool_result(result: types.CallToolResult) -> ToolResult:
    """Text blocks joined and capped; other blocks one line each; structuredContent as data."""
    capture = OutputCapture(LIMIT)
    capture.add("\n".join(_describe(block) for block in result.content).encode())
    text = capture.text()
    if not text and result.structured_content is not None:
        text = "(structured content only; see data)"
    return ToolResult(text, is_error=bool(result.is_error), data=result.structured_content)


def _describe(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.ImageContent | types.AudioContent):
        size = len(block.data) * 3 // 4  # base64 to bytes, near enough for a description
        return f"[{block.type}: {block.mime_type}, about {size} bytes, not shown]"
    if isinstance(block, types.ResourceLink):
        return f"[resource link: {block.uri} ({block.mime_type or 'unknown type'})]"
    resource = block.resource
    kind = "text" if isinstance(resource, types.TextResourceContents) else "binary"
    return f"[embedded {kind} resource: {resource.uri} ({resource.mime_type or 'unknown type'})]"
