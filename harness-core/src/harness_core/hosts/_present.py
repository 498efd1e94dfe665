"""How a host labels tool calls: the tool's own one-line presentation, made safe."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..sanitize import one_line

if TYPE_CHECKING:  # the query commands use the sanitizer without loading the tools package
    from ..tools import ToolRegistry

__all__ = ["call_label", "failed", "result_suffix"]


def call_label(tools: ToolRegistry, name: str, raw_arguments: str) -> str:
    """The tool's own `present_call` line, or a fallback saying why there is none."""
    from ..tools import ToolResult

    parsed = tools.parse(name, raw_arguments)
    if isinstance(parsed, ToolResult):
        why = "unknown tool" if tools.get(name) is None else "invalid arguments"
        return one_line(f"{name} ({why})")
    tool, args = parsed
    try:
        return one_line(tool.present_call(args))
    except Exception:  # a plugin's presentation bug must not break the host's rendering
        return one_line(name)


def result_suffix(tools: ToolRegistry, name: str, data: dict[str, Any]) -> str | None:
    """A short note after ✓/✗: the tool's one-line `present_result`, or an error's first line."""
    from ..tools import ToolResult

    result = ToolResult(str(data.get("text", "")), bool(data.get("is_error")), data.get("data"))
    if result.is_error:
        first = result.text.strip().splitlines()[0] if result.text.strip() else ""
        return one_line(first, 100) or None
    tool = tools.get(name)
    if tool is None:
        return None
    try:
        note = tool.present_result(result)
    except Exception:
        return None
    # Multi-line renderings (todo_write's checklist) belong to the plan strip, not this line.
    return one_line(note) if note and "\n" not in note.strip() else None


def failed(data: dict[str, Any]) -> bool:
    """Whether a tool/result reads as a failure to a person: an error, or a command that exited
    non-zero (`data.exit_code`). The model's result is not changed: a non-zero exit is the
    command's answer, not an error of the call."""
    detail = data.get("data")
    code = detail.get("exit_code") if isinstance(detail, dict) else None
    return bool(data.get("is_error")) or (type(code) is int and code != 0)
