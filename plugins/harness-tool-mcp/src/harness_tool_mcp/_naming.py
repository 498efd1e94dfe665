"""How a server's tool is named on the registry: `SERVER__TOOL`, a valid model tool name."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_NAME", "tool_name"]

MAX_NAME: Final = 64  # what OpenAI-compatible APIs accept for a function name
_OUTSIDE: Final = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """`server__tool` with characters a model API refuses replaced by `_`, cut to 64."""
    return _OUTSIDE.sub("_", f"{server}__{tool}")[:MAX_NAME]
