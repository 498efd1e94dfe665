"""An MCP `CallToolResult` as the ToolResult the model reads and hosts show."""

from __future__ import annotations

import json
from typing import Any, Final

import mcp_types as types
from harness_core.tools import ToolResult
from harness_core.tools.bash import DEFAULT_LIMIT, OutputCapture

__all__ = ["to_tool_result"]

LIMIT: Final = DEFAULT_LIMIT  # capped like bash output: the head and the tail


def to_tool_result(result: types.CallToolResult) -> ToolResult:
    """Text blocks joined and capped; other blocks one line each; structuredContent as data,
    unless it is too large to log (then a line of the text says it was left out)."""
    capture = OutputCapture(LIMIT)
    capture.add("\n".join(_describe(block) for block in result.content).encode())
    text = capture.text()
    data, left_out = _structured(result.structured_content)
    if left_out is not None:
        text = f"{text}\n{left_out}" if text else left_out
    elif not text and data is not None:
        text = "(structured content only; see data)"
    return ToolResult(text, is_error=bool(result.is_error), data=data)


def _structured(content: dict[str, Any] | None) -> tuple[dict[str, Any] | None, str | None]:
    """(the data to keep, None), or (None, why it was left out).

    The data goes into the session log with the result, and every host reads it: capped like
    the text, so one answer of a server cannot put megabytes into the log.
    """
    if content is None:
        return None, None
    try:
        size = len(json.dumps(content, ensure_ascii=False).encode())
    except (TypeError, ValueError, RecursionError) as exc:
        return None, f"[structuredContent left out: it is not JSON ({exc})]"
    if size > LIMIT:
        return (
            None,
            f"[structuredContent left out: {size} bytes of JSON, over the {LIMIT}-byte cap]",
        )
    return content, None


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
