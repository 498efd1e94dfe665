"""How a host shows tool calls and model text: one safe line per call, no stray control codes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:  # the query commands use `one_line` without loading the tools package
    from ..tools import ToolRegistry

__all__ = ["call_label", "clean", "one_line", "result_suffix"]

# Escape sequences (CSI, OSC, two-byte) and the C0/C1 controls other than tab and newline:
# model text and tool output must never move the cursor or recolour the user's terminal.
_CONTROL: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks
    r"|\x1b[@-_]"  # the other two-byte escapes
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # bare controls (tab and newline survive)
)
LABEL_WIDTH: Final = 120


def clean(text: str) -> str:
    """`text` without control codes (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


def one_line(text: str, width: int = LABEL_WIDTH) -> str:
    """`text` cleaned and folded onto one line of at most `width` characters."""
    line = " ".join(clean(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


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
