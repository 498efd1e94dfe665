"""How a server's tool is named on the registry: `SERVER__TOOL`, a valid model tool name."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MAX_NAME", "server_name", "tool_name"]

MAX_NAME: Final = 64  # what OpenAI-compatible APIs accept for a function name
_OUTSIDE: Final = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """`server__tool` with characters a model API refuses replaced by `_`, cut to 64."""
    return _OUTSIDE.sub("_", f"{server}__{tool}")[:MAX_NAME]


def server_name(name: str) -> str:
    """A client's name for a server ("My Files") as a config NAME would be (`My_Files`)."""
    return _OUTSIDE.sub("_", name) or "server"
